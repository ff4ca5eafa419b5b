"""Estimator base classes: common parameters, validation, devices, multi-class wrappers.

Subclasses implement a *binary* (or single-output regression) solver through three hooks:

``_prepare_fit(X)``
    work shared by every binary problem of a multi-class fit (e.g. the low-rank factor);
``_fit_binary(shared, rows, y)``
    fit one problem on the training rows ``rows`` (None = all) with labels ``y`` in {−1, +1}
    (or real targets for regression); returns a dict of fitted arrays (the "model");
``_decision_binary(model, feats)``
    decision values of one model on ``feats = _prepare_predict(X)``.

The base class resolves the device once per fit, validates input (scikit-learn's validators
for NumPy input, equivalent checks for CuPy input), encodes labels, runs one-vs-rest or
one-vs-one, and returns predictions in the caller's array kind.
"""

from __future__ import annotations

import itertools
import math
from numbers import Integral, Real

import array_api_compat
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from svmgpu.backend import Device, array_device, asarray, get_device, to_numpy, tree_to_device
from svmgpu.kernels import make_kernel
from svmgpu.lowrank import nystrom, pivoted_cholesky

_LOWRANK = {"nystrom": nystrom, "pivoted_cholesky": pivoted_cholesky}
_DTYPES = {None: None, "float32": np.float32, "float64": np.float64,
           np.float32: np.float32, np.float64: np.float64}


def _is_device_array(x) -> bool:
    return array_api_compat.is_cupy_array(x)


class SVMBase(BaseEstimator):
    """Common parameters and machinery of every svmgpu estimator.

    Subclasses list their parameters in ``__init__`` (scikit-learn introspects it) and
    store them unchanged; everything else happens in ``fit``.

    Common parameters
    -----------------
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel
    gamma : "scale", "auto" or float
    degree : int
    coef0 : float
    C : float
        Weight of the loss: the objective is ``½‖f‖² + C Σᵢ ψ(rᵢ)``.
    rank : int or None
        None: full kernel; int: low-rank factor of this rank.
    lowrank : {"nystrom", "pivoted_cholesky"}
    tol : float
    max_iter : int
    device : {"auto", "cpu", "cuda", "cuda:N"}
    dtype : {None, "float32", "float64"}
        None keeps float32 input as float32 and computes everything else in float64.
    memory_budget : int, str or None
        Bytes for blocked kernel work (None: half the free device memory).
    random_state : int, Generator or None
    verbose : int
    """

    # ------------------------------------------------------------------ validation
    def _validate_common(self):
        C = getattr(self, "C", 1.0)
        if isinstance(C, bool) or not isinstance(C, Real) or not math.isfinite(C) or C <= 0:
            raise ValueError(f"C must be a positive finite number, got {C!r}")
        rank = getattr(self, "rank", None)
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, Integral)
                                 or rank < 1):
            raise ValueError(f"rank must be None (full kernel) or a positive integer, got {rank!r}")
        lowrank = getattr(self, "lowrank", "nystrom")
        if lowrank not in _LOWRANK:
            raise ValueError(f"unknown lowrank {lowrank!r}; valid: {sorted(_LOWRANK)}")
        tol = getattr(self, "tol", 1e-3)
        if isinstance(tol, bool) or not isinstance(tol, Real) or not (tol >= 0) or not math.isfinite(tol):
            raise ValueError(f"tol must be a non-negative finite number, got {tol!r}")
        max_iter = getattr(self, "max_iter", 100)
        if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
        if getattr(self, "dtype", None) not in _DTYPES:
            raise ValueError(f"dtype must be None, 'float32' or 'float64', got {self.dtype!r}")

    def _resolve_device(self) -> Device:
        return get_device(getattr(self, "device", "auto"))

    def _check_X(self, X, *, reset: bool):
        """Validate X and move it to the fit device (``self.device_`` when not resetting)."""
        if reset:
            self._validate_common()
            device = self._resolve_device()
        else:
            check_is_fitted(self)
            device = get_device(self.device_)
        want = _DTYPES[getattr(self, "dtype", None)]
        if _is_device_array(X):
            X = self._check_device_array(X, reset=reset)
        else:
            X = validate_data(self, X, reset=reset, accept_sparse=False,
                              dtype=[np.float64, np.float32], ensure_min_samples=1)
        if want is not None:
            dtype = want
        elif not reset:
            dtype = np.dtype(self.fit_dtype_)
        else:
            dtype = np.float32 if str(X.dtype).endswith("float32") else np.float64
        X = asarray(X, device=device, dtype=dtype)
        if reset:
            self.device_ = str(device)
            self.fit_dtype_ = np.dtype(dtype).name
        return X, device, device.xp

    def _check_device_array(self, X, *, reset):
        xp = array_api_compat.array_namespace(X)
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D array of shape (n_samples, n_features), got {X.ndim}-D")
        if X.shape[0] < 1:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
        if not xp.isdtype(X.dtype, "real floating"):
            X = X.astype(xp.float64)
        if not bool(xp.all(xp.isfinite(X))):
            raise ValueError("Input X contains NaN or infinity; remove or impute those values")
        if reset:
            self.n_features_in_ = int(X.shape[1])
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        return X

    def _sample_weight(self, sample_weight, X, *, device):
        if sample_weight is None:
            return None
        sw = _check_sample_weight(to_numpy(sample_weight), to_numpy(X[:, :1]) if X.shape[1] else
                                  np.empty((X.shape[0], 1)), dtype=np.float64)
        if np.any(sw < 0):
            raise ValueError("sample_weight must be non-negative")
        return asarray(sw, device=device, dtype=X.dtype)

    # ---------------------------------------------------------------- shared work
    def _make_kernel(self, X):
        return make_kernel(getattr(self, "kernel", "rbf"), gamma=getattr(self, "gamma", "scale"),
                           degree=getattr(self, "degree", 3), coef0=getattr(self, "coef0", 0.0),
                           X=X)

    def _lowrank_factor(self, X, kernel):
        """The low-rank factor of the training kernel (``rank`` landmarks)."""
        rank = min(int(self.rank), X.shape[0])
        if self.lowrank == "nystrom":
            return nystrom(X, kernel, rank, random_state=self.random_state,
                           memory_budget=self.memory_budget)
        return pivoted_cholesky(X, kernel, rank, tol=getattr(self, "lowrank_tol", 1e-3),
                                memory_budget=self.memory_budget)

    def _prepare_fit(self, X, *, xp, device):
        return None

    def _prepare_predict(self, X, *, xp, device):
        return X

    # ---------------------------------------------------------------- devices
    def to_device(self, device):
        """Move the fitted arrays to ``device``; predictions then run there. Returns self."""
        check_is_fitted(self)
        device = get_device(device)
        for k, v in list(vars(self).items()):
            if k.endswith("_") and not k.startswith("__"):
                setattr(self, k, tree_to_device(v, device))
        self.device_ = str(device)
        return self

    def __getstate__(self):
        state = dict(vars(self))
        for k, v in state.items():
            if k.endswith("_") and not k.startswith("__"):
                state[k] = tree_to_device(v, "cpu")
        if "device_" in state:
            state["device_"] = "cpu"
        return state

    def __setstate__(self, state):
        vars(self).update(state)

    @staticmethod
    def _to_caller(out, X_in):
        """Return ``out`` in the array kind of the caller's ``X_in``."""
        if _is_device_array(X_in):
            return asarray(out, device=array_device(X_in))
        return to_numpy(out)


class SVCBase(ClassifierMixin, SVMBase):
    """Classifier base: label encoding and one-vs-rest / one-vs-one over a binary solver.

    Subclasses add the parameter ``multi_class`` ("ovr" or "ovo") to their ``__init__``.
    Fitted attributes: ``classes_``, ``models_`` (one dict per binary problem),
    ``pairs_`` (for one-vs-one), ``device_``.
    """

    _default_multi_class = "ovr"

    def fit(self, X, y, sample_weight=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
            NumPy (validated by scikit-learn) or CuPy.
        y : array of shape (n_samples,)
            Class labels (any hashable values; at least two classes).
        sample_weight : array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        X_in = X
        X, device, xp = self._check_X(X, reset=True)
        y = column_or_1d(np.asarray(to_numpy(y)), warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                f"y has only one class ({classes[0]!r}); a classifier needs at least two classes"
            )
        del X_in
        multi = getattr(self, "multi_class", self._default_multi_class)
        if multi not in ("ovr", "ovo"):
            raise ValueError(f"multi_class must be 'ovr' or 'ovo', got {multi!r}")
        sw = self._sample_weight(sample_weight, X, device=device)
        self.classes_ = classes
        shared = self._prepare_fit(X, xp=xp, device=device)
        dt = X.dtype

        def labels(mask):
            return asarray(np.where(mask, 1.0, -1.0), device=device, dtype=dt)

        models, pairs = [], None
        if len(classes) == 2:
            models.append(self._fit_binary(shared, None, labels(y_idx == 1), sw))
        elif multi == "ovr":
            for k in range(len(classes)):
                models.append(self._fit_binary(shared, None, labels(y_idx == k), sw))
        else:
            pairs = list(itertools.combinations(range(len(classes)), 2))
            for i, j in pairs:
                rows_np = np.flatnonzero((y_idx == i) | (y_idx == j))
                rows = asarray(rows_np, device=device)
                sw_ij = None if sw is None else xp.take(sw, rows, axis=0)
                models.append(self._fit_binary(shared, rows, labels(y_idx[rows_np] == i), sw_ij))
        self.models_ = models
        self.pairs_ = pairs
        self._after_fit(shared)
        return self

    def _after_fit(self, shared):
        """Hook: set fitted attributes derived from ``self.models_`` (coef_, n_iter_, ...)."""

    def _raw_decision(self, X):
        X_dev, device, xp = self._check_X(X, reset=False)
        feats = self._prepare_predict(X_dev, xp=xp, device=device)
        scores = [self._decision_binary(m, feats, xp=xp) for m in self.models_]
        return scores, xp

    def decision_function(self, X):
        """Decision values, in the caller's array kind.

        Returns
        -------
        array of shape (n_samples,) for two classes (positive means ``classes_[1]``), else
        (n_samples, n_classes): the one-vs-rest scores, or for one-vs-one the votes plus the
        summed pairwise confidences squashed into (−⅓, ⅓) (scikit-learn's "ovr" shape of
        one-vs-one), so that ``argmax`` is the predicted class.
        """
        scores, xp = self._raw_decision(X)
        if len(scores) == 1:
            out = scores[0]
        elif self.pairs_ is None:
            out = xp.stack(scores, axis=1)
        else:
            out = self._ovo_votes(scores, xp=xp)
        return self._to_caller(out, X)

    def _ovo_votes(self, scores, *, xp):
        n, k = scores[0].shape[0], len(self.classes_)
        votes = xp.zeros((n, k), dtype=scores[0].dtype, device=getattr(scores[0], "device", None))
        conf = xp.zeros_like(votes)
        one, zero = xp.ones_like(scores[0]), xp.zeros_like(scores[0])
        for (i, j), s in zip(self.pairs_, scores):
            pos = xp.where(s > 0, one, zero)
            votes[:, i] += pos
            votes[:, j] += 1 - pos
            conf[:, i] += s
            conf[:, j] -= s
        return votes + conf / (3 * (xp.abs(conf) + 1))

    def predict(self, X):
        """Predicted class labels, array of shape (n_samples,) in the caller's kind
        (labels that are not numbers are returned as a NumPy array)."""
        scores, xp = self._raw_decision(X)
        if len(scores) == 1:
            idx = to_numpy(scores[0] > 0).astype(np.int64)
        else:
            S = xp.stack(scores, axis=1) if self.pairs_ is None else self._ovo_votes(scores, xp=xp)
            idx = to_numpy(xp.argmax(S, axis=1))
        labels = self.classes_[idx]
        if _is_device_array(X) and labels.dtype.kind in "biuf":
            return asarray(labels, device=array_device(X))
        return labels


class SVRBase(RegressorMixin, SVMBase):
    """Regressor base: real targets, one model in ``models_[0]``."""

    def fit(self, X, y, sample_weight=None):
        """Fit the regressor.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
        y : array of shape (n_samples,)
            Finite real targets.
        sample_weight : array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        X, device, xp = self._check_X(X, reset=True)
        y = column_or_1d(np.asarray(to_numpy(y)), warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"regression targets y must be numbers: {exc}") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("regression targets y contain NaN or infinity; remove those samples")
        sw = self._sample_weight(sample_weight, X, device=device)
        shared = self._prepare_fit(X, xp=xp, device=device)
        self.models_ = [self._fit_binary(shared, None, asarray(y, device=device, dtype=X.dtype),
                                         sw)]
        self._after_fit(shared)
        return self

    def _after_fit(self, shared):
        """Hook: set fitted attributes derived from ``self.models_``."""

    def predict(self, X):
        """Predictions, array of shape (n_samples,) in the caller's array kind."""
        X_dev, device, xp = self._check_X(X, reset=False)
        feats = self._prepare_predict(X_dev, xp=xp, device=device)
        return self._to_caller(self._decision_binary(self.models_[0], feats, xp=xp), X)
