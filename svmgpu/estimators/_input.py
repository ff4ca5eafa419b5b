"""The estimators' one input check: host (NumPy, SciPy CSR), device (CuPy, array-api-strict,
any array-API namespace) and Dask input of ``fit`` and ``predict``, validated where it lives and
moved to the fit's device, with the call's :class:`~svmgpu.backend.ComputeContext` resolved once.
"""

from __future__ import annotations

import array_api_compat

# NumPy here is the host edge of the estimators: scikit-learn's validation of host input.
# Device input never goes through it.
import numpy as np
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from svmgpu.backend import (
    ComputeContext,
    all_finite,
    array_device,
    asarray,
    astype_rows,
    compute_context,
    get_device,
    get_namespace,
    is_device_sparse,
    is_foreign_array,
    is_sparse,
    numpy_dtype,
    to_device,
)
from svmgpu.distributed import _data as dask_data
from svmgpu.distributed import is_dask_collection, require_dask
from svmgpu.estimators import estimator_classes


def is_device_array(x) -> bool:
    """CuPy arrays (dense or sparse) and arrays of any other array-API namespace
    (array-api-strict, PyTorch): validated and processed where they live, never copied to
    NumPy."""
    return array_api_compat.is_cupy_array(x) or is_foreign_array(x) or is_device_sparse(x)


def check_X(est, X, *, reset: bool):
    """Validate X and move it to the fit device (the fitted device when not resetting).

    Returns ``(X, ctx)`` with the :class:`ComputeContext` of this call: resolved here,
    once, and passed down.
    """
    if not reset:
        check_is_fitted(est)
    if is_dask_collection(X):  # row chunks on a cluster (svmgpu.distributed)
        return _check_dask_X(est, X, reset=reset)
    if reset:
        spec = est.device
        want = est.dtype
    else:
        spec = est._fitted_device()
        want = est.fit_dtype_
    takes_sparse = est.__sklearn_tags__().input_tags.sparse
    if is_sparse(X) and not takes_sparse:
        raise TypeError(f"{type(est).__name__} does not take sparse X; pass X.toarray() "
                        "if it fits in memory")
    if is_device_array(X):  # (CuPy sparse too)
        X = _check_device_array(est, X, reset=reset)
    else:
        X = validate_data(est, X, reset=reset, accept_sparse="csr" if takes_sparse else False,
                          dtype=[np.float64, np.float32], ensure_min_samples=1)
    if reset:
        est._sparse_fit = is_sparse(X)  # (the fit's own flags: never saved)
        est._dask_fit = False
    ctx = compute_context(X, device=spec, dtype=want,
                          memory_budget=est.memory_budget)
    if is_foreign_array(X) and array_device(X) != ctx.device:
        raise ValueError(
            f"X lives on {array_device(X)}, but this {'fit' if reset else 'model'} runs on "
            f"{ctx.device}; pass device='auto' to compute where X lives, or move X first"
        )
    X = asarray(X, device=ctx.device, dtype=ctx.dtype)
    if reset:
        est._device = ctx.device
        est.device_ = str(ctx.device)
        est.fit_dtype_ = numpy_dtype(ctx.dtype).name
    return X, ctx

def _check_device_array(est, X, *, reset):
    xp = get_namespace(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array of shape (n_samples, n_features), got {X.ndim}-D")
    if X.shape[0] < 1:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
    if not xp.isdtype(X.dtype, "real floating"):
        X = astype_rows(X, xp.float64, xp=xp)
    if not all_finite(X, xp=xp):
        raise ValueError("Input X contains NaN or infinity; remove or impute those values")
    if reset:
        est.n_features_in_ = int(X.shape[1])
    elif X.shape[1] != est.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
            f"{est.n_features_in_} features as input"
        )
    return X

def check_y(y, X, ctx: ComputeContext):
    """``y`` as a 1-D array on the fit device (host ``y`` is uploaded once)."""
    if is_device_array(y):
        y = to_device(y, ctx.device)
        if y.ndim == 2 and y.shape[1] == 1:
            y = ctx.xp.reshape(y, (-1,))
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D of shape (n_samples,), got shape {tuple(y.shape)}")
    else:
        y = np.asarray(y)
        if y.ndim != 1:  # (scikit-learn's checks and its warning for a column; a 1-D array
            y = column_or_1d(y, warn=True)  # passes them as it is: 40 µs of iris's fit)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    return y

def check_sample_weight(sample_weight, X, *, ctx: ComputeContext):
    """Validated non-negative weights of shape (n_samples,) on the fit device, X's dtype."""
    if sample_weight is None:
        return None
    xp, n = ctx.xp, X.shape[0]
    if is_device_array(sample_weight):
        sw = xp.astype(to_device(sample_weight, ctx.device), xp.float64)
        if sw.ndim != 1 or sw.shape[0] != n:
            raise ValueError(f"sample_weight.shape == {tuple(sw.shape)}, expected ({n},)!")
        if not bool(xp.all(xp.isfinite(sw))):
            raise ValueError("sample_weight contains NaN or infinity")
        bad = bool(xp.any(sw < 0))
    else:
        sw = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=np.float64)
        bad = bool(np.any(sw < 0))
    if bad:
        raise ValueError("sample_weight must be non-negative")
    return asarray(sw, device=ctx.device, dtype=X.dtype)


def _check_dask_X(est, X, *, reset):
    """``(X, ctx)`` for a Dask ``X``: a 2-D floating ``dask.array`` chunked by rows only (the
    columns are rechunked into one), finite, persisted, on the device of its chunks."""
    require_dask()
    import dask.array as da  # noqa: PLC0415

    name = type(est).__name__
    capabilities = est.__sklearn_tags__().svm
    if not capabilities.dask:
        takers = [n for n, cls in estimator_classes().items() if cls().__sklearn_tags__().svm.dask]
        raise TypeError(
            f"{name} does not take Dask input ({', '.join(takers)} do): {name} "
            f"{capabilities.dask_refusal}; fit it on X.compute() (on the command line: without "
            "--workers/--scheduler)")
    if not isinstance(X, da.Array):
        raise TypeError(f"Dask input must be a dask.array.Array, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array of shape (n_samples, n_features), got {X.ndim}-D")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has chunks of unknown size; call X.compute_chunk_sizes() first")
    meta = X._meta
    if "scipy.sparse" in type(meta).__module__ or "cupyx" in type(meta).__module__:
        raise TypeError("Dask arrays of sparse chunks are not supported; use dense chunks")
    dev = array_device(meta)
    spec = est.device if reset else est._fitted_device()
    if reset and spec not in (None, "auto") and get_device(spec) != dev:
        raise ValueError(f"X's chunks live on {dev}, but device={spec!r}; pass device='auto'")
    want = est.dtype if reset else est.fit_dtype_
    ctx = compute_context(meta, device=dev, dtype=want,
                          memory_budget=est.memory_budget)
    X = X.rechunk({1: -1}).astype(ctx.dtype)
    if reset:
        est.n_features_in_ = int(X.shape[1])
    elif X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting "
                         f"{est.n_features_in_} features as input")
    if X.shape[0] < 1:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
    if reset:
        (X,) = dask_data.persist(X)
        if not bool(da.isfinite(X).all().compute()):
            raise ValueError("Input X contains NaN or infinity; remove or impute those values")
        est._device = ctx.device
        est._sparse_fit, est._dask_fit = False, True  # (the fit's own flags: never saved)
        est.device_ = str(ctx.device)
        est.fit_dtype_ = np.dtype(X.dtype).name
    return X, ctx
