"""The estimators, and the one registry of them.

:data:`REGISTRY` names every public estimator once: its class name, the module that defines it
and its ``svmgpu train --estimator`` name. ``svmgpu`` (the package's public names), the model
files (:mod:`svmgpu.io`), the command line (:mod:`svmgpu.cli`) and the tests read it; what an
estimator can do (sparse input, Dask input, a full-kernel form) is declared by the class itself
as scikit-learn tags (:class:`~svmgpu.estimators._tags.SVMCapabilities`).

The classes are imported on first use (PEP 562): they subclass scikit-learn's
``BaseEstimator``, whose import takes about a second, so ``import svmgpu`` and the command
line's help stay fast. ``from svmgpu.estimators import UniSVC`` works as usual.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class EstimatorEntry:
    """One public estimator: ``name`` (its class), ``module`` (where it is defined) and
    ``cli_name`` (``svmgpu train --estimator CLI_NAME``)."""

    name: str
    module: str
    cli_name: str

    def load(self):
        """The estimator class (imports its module)."""
        return getattr(importlib.import_module(self.module), self.name)


#: Every public estimator, by class name, in the order the documentation lists them.
REGISTRY: dict[str, EstimatorEntry] = {e.name: e for e in (
    EstimatorEntry("SVC", "svmgpu.estimators.svc", "svc"),
    EstimatorEntry("SVR", "svmgpu.estimators.svc", "svr"),
    EstimatorEntry("UniSVC", "svmgpu.estimators.unisvm", "uni"),
    EstimatorEntry("UniSVR", "svmgpu.estimators.unisvm", "unisvr"),
    EstimatorEntry("ReducedSVC", "svmgpu.estimators.reduced", "reduced"),
    EstimatorEntry("GreedySVC", "svmgpu.estimators.greedy", "greedy"),
    EstimatorEntry("L2SVMPath", "svmgpu.estimators.path", "path"),
    EstimatorEntry("LSSVC", "svmgpu.estimators.closed_form", "lssvm"),
    EstimatorEntry("PSVC", "svmgpu.estimators.closed_form", "psvm"),
    EstimatorEntry("WPSVC", "svmgpu.estimators.closed_form", "wpsvm"),
)}

#: The base classes, importable from here too.
_BASES = {"SVMBase", "SVCBase", "SVRBase"}


def estimator_classes() -> dict[str, type]:
    """Every public estimator class by name (imports them all)."""
    return {name: entry.load() for name, entry in REGISTRY.items()}


def __getattr__(name):
    if name in REGISTRY:
        value = REGISTRY[name].load()
    elif name in _BASES:
        value = getattr(importlib.import_module("svmgpu.estimators._base"), name)
    else:
        raise AttributeError(f"module 'svmgpu.estimators' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(REGISTRY) | _BASES)


__all__ = [*REGISTRY, *sorted(_BASES), "REGISTRY", "EstimatorEntry", "estimator_classes"]
