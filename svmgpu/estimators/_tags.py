"""What an estimator can do, declared as scikit-learn tags.

scikit-learn's :class:`~sklearn.utils.Tags` say whether an estimator takes sparse input
(``input_tags.sparse``); :class:`SVMTags` adds svmgpu's own capabilities under ``tags.svm``
(:class:`SVMCapabilities`). An estimator declares them in ``__sklearn_tags__``, and every
reader (the input checks, the rank policy, the command line, the tests) asks
``sklearn.utils.get_tags(estimator)`` instead of a private attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from sklearn.utils import Tags


@dataclass(slots=True)
class SVMCapabilities:
    """svmgpu's capabilities of an estimator.

    Attributes
    ----------
    dask : bool
        ``fit`` and ``predict`` take a row-chunked ``dask.array`` (the fit runs on the workers).
    dask_refusal : str
        Why the estimator is fitted in one process when ``dask`` is False (completes "NAME ...").
    full_kernel_form : bool
        The model has an exact full-kernel form that ``rank="auto"`` may choose on small data.
    """

    dask: bool = False
    dask_refusal: str = "is fitted in one process"
    full_kernel_form: bool = False


@dataclass(slots=True)
class SVMTags(Tags):
    """scikit-learn's tags plus ``svm``: :class:`SVMCapabilities`."""

    svm: SVMCapabilities = field(default_factory=SVMCapabilities)

    @classmethod
    def extend(cls, tags: Tags) -> SVMTags:
        """``tags`` (scikit-learn's) as SVMTags with the default capabilities."""
        if isinstance(tags, cls):
            return tags
        return cls(**{f.name: getattr(tags, f.name) for f in fields(Tags)})
