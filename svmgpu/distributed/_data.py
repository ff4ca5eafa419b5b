"""Dask inputs of the estimators: validation, labels, weights, ``gamma="scale"`` and the
landmarks, each a Dask reduction whose small result reaches the client; and predictions mapped
over the chunks of ``X``."""

from __future__ import annotations

import dataclasses

# NumPy here is the host edge of Dask input: the dtypes of lazy Dask arrays and the small
# results (classes, counts) that reach the client; device chunks are never converted.
import numpy as np

from svmgpu.backend import (
    array_device,
    asarray,
    get_device,
    get_namespace,
    random_subset,
    to_numpy,
)
from svmgpu.distributed._engine import executor, is_dask_collection
from svmgpu.lowrank import nystrom
from svmgpu.lowrank._factor import _check_nonzero_kernel, _check_rank
from svmgpu.solvers.partition import assign


def persist(*arrays):
    """The arrays persisted where they will be used: on the cluster's workers, or in this
    process without one."""
    return executor().persist(arrays)


def as_rows_like(v, X, name):
    """``v`` (Dask, NumPy or a list; 1-D, or a column) as a Dask array chunked like X's rows."""
    import dask.array as da  # noqa: PLC0415

    if not is_dask_collection(v):
        v = np.asarray(v)
        if v.ndim == 2 and v.shape[1] == 1:
            v = v.reshape(-1)
        if v.ndim != 1 or v.shape[0] != X.shape[0]:
            raise ValueError(f"{name} must have shape ({X.shape[0]},), got {v.shape}")
        return da.from_array(v, chunks=(X.chunks[0],))
    if v.ndim == 2 and v.shape[1] == 1:
        v = v.reshape(-1)
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n_samples,), got shape {v.shape}")
    if v.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but {name} has {v.shape[0]}")
    return v.rechunk((X.chunks[0],))


def _searchsorted(b, classes):

    xp = get_namespace(b)
    return xp.searchsorted(asarray(classes, device=array_device(b)), b)


def encode_labels(y, X):
    """``(classes, y_idx)`` for Dask labels: the sorted distinct labels (NumPy, on the client)
    and each sample's class index (a Dask array chunked like X)."""
    from sklearn.utils.multiclass import check_classification_targets  # noqa: PLC0415

    y = as_rows_like(y, X, "y")
    import dask.array as da  # noqa: PLC0415

    classes = to_numpy(da.unique(y).compute())
    if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
        raise ValueError("Input y contains NaN or infinity")
    check_classification_targets(classes)
    if classes.shape[0] < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}); a classifier needs at least "
                         "two classes")
    y_idx = y.map_blocks(_searchsorted, classes, dtype=np.int64)
    (y_idx,) = persist(y_idx)
    return classes, y_idx


def regression_targets(y, X):
    """Finite real targets as a Dask array chunked like X (float64)."""
    import dask.array as da  # noqa: PLC0415

    y = as_rows_like(y, X, "y")
    if y.dtype.kind not in "fiu":
        raise ValueError(f"regression targets y must be numbers, got dtype {y.dtype}")
    y = y.astype(np.float64)
    if not bool(da.isfinite(y).all().compute()):
        raise ValueError("regression targets y contain NaN or infinity; remove those samples")
    return y


def sample_weights(sample_weight, X):
    """Validated non-negative weights chunked like X, in X's dtype (None stays None)."""
    if sample_weight is None:
        return None
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415

    sw = as_rows_like(sample_weight, X, "sample_weight").astype(np.float64)
    finite, nonneg = dask.compute(da.isfinite(sw).all(), (sw >= 0).all())
    if not finite:
        raise ValueError("sample_weight contains NaN or infinity")
    if not nonneg:
        raise ValueError("sample_weight must be non-negative")
    return sw.astype(X.dtype)


def class_counts(y_idx, k):
    """How many samples each of the ``k`` classes has (NumPy)."""
    import dask.array as da  # noqa: PLC0415

    return to_numpy(da.bincount(y_idx, minlength=k).compute())


def _take_classes(b, per_class):

    xp = get_namespace(b)
    return xp.take(asarray(per_class, device=array_device(b)), b)


def per_class(y_idx, values, dtype):
    """``values[y_idx]`` chunk by chunk (class weights of each sample)."""
    return y_idx.map_blocks(_take_classes, np.asarray(values, dtype=dtype), dtype=dtype)


def column_moments(X, sample_weight=None):
    """``(per-column variances, variance of all entries)`` of a Dask ``X`` (weights count as
    repetitions), as NumPy: what ``gamma="scale"`` reads."""
    import dask  # noqa: PLC0415

    X = X.astype(np.float64)
    if sample_weight is None:
        col, total = dask.compute(X.var(axis=0), X.var())
    else:
        w = sample_weight.astype(np.float64)[:, None]
        sw = w.sum()
        mean_col = (w * X).sum(axis=0) / sw
        col = (w * (X - mean_col) ** 2).sum(axis=0) / sw
        mean = mean_col.mean()
        total = (w * (X - mean) ** 2).sum() / (sw * X.shape[1])
        col, total = dask.compute(col, total)
    return to_numpy(col), float(to_numpy(total))


def _eligible(b, kernel, sb=None):
    """Rows of a chunk that may be drawn (``sb``: its weights, a column)."""
    xp = get_namespace(b)
    ok = kernel.diag(b) > 0 if kernel is not None else \
        xp.ones((b.shape[0],), dtype=xp.bool, device=array_device(b).native_device)
    return ok if sb is None else ok & (sb[:, 0] > 0)


def eligible_rows(X, *, sample_weight=None, kernel=None):
    """``(rows, n)``: the rows of a Dask ``X`` that landmarks or a reduced set may be drawn
    from (positive weight; with ``kernel``, nonzero kernel diagonal) as sorted host indices —
    None when all ``m`` rows are — and their number."""
    import dask.array as da  # noqa: PLC0415

    if sample_weight is None and kernel is None:
        return None, int(X.shape[0])
    sw = None if sample_weight is None else sample_weight.rechunk((X.chunks[0],))
    mask = X.map_blocks(_eligible, kernel, drop_axis=1, dtype=bool) if sw is None else \
        da.map_blocks(_eligible, X, kernel, sw[:, None], drop_axis=1, dtype=bool)
    n = int(mask.sum().compute())
    if n == X.shape[0]:
        return None, n
    return np.flatnonzero(to_numpy(mask.compute())), n


def draw_rows(rows, n, k, *, random_state):
    """``k`` of the ``n`` eligible ``rows`` (None: all), sorted: the in-memory estimators'
    draw (:func:`svmgpu.backend.random_subset` on the host), so a Dask fit picks the same."""
    pos = to_numpy(random_subset(n, k, seed=random_state, device=get_device("cpu")))
    return pos if rows is None else rows[pos]


def landmark_factor(X, kernel, rank, *, random_state, sample_weight, device):
    """The Nyström factor of a Dask ``X`` (without features): the landmarks are drawn exactly
    as :func:`svmgpu.lowrank.nystrom` draws them on the same rows (uniformly among the rows of
    nonzero kernel diagonal and positive weight, by the same generator), their r rows gathered
    to the client once, and factored there (pivoted Cholesky of ``K_BB`` in float64)."""
    rank = _check_rank(rank, int(X.shape[0]), "rank")
    rows, n_el = eligible_rows(X, sample_weight=sample_weight, kernel=kernel)
    _check_nonzero_kernel(n_el, kernel)
    B = draw_rows(rows, n_el, min(rank, n_el), random_state=random_state)
    Z = rows_of(X, B, device=device)  # the r landmark rows: the one gather of rows
    f = nystrom(Z, kernel, int(Z.shape[0]), random_state=0, keep_features=False, device=device)
    return dataclasses.replace(f, landmarks=asarray(B[to_numpy(f.landmarks)], device=device))


def _take_local(b, idx):

    return get_namespace(b).take(b, asarray(idx, device=array_device(b)), axis=0)


def _chunks(X):
    """``(bounds, blocks)`` of a Dask ``X``: where each row chunk starts (and the end), and
    the chunks as delayed objects."""
    return np.cumsum((0,) + X.chunks[0]), X.to_delayed().ravel()


def _delayed_rows(bounds, blocks, rows):
    """The rows ``rows`` (sorted host indices) as delayed takes, one per chunk that holds
    some (each with its own namespace: CuPy chunks take device indices)."""
    import dask  # noqa: PLC0415

    parts = []
    if rows.size == 0:
        return parts
    for k in np.flatnonzero((bounds[1:] > rows[0]) & (bounds[:-1] <= rows[-1])):
        local = rows[(rows >= bounds[k]) & (rows < bounds[k + 1])] - bounds[k]
        if local.size:
            parts.append(dask.delayed(_take_local)(blocks[k], local))
    return parts


def rows_of(X, rows, *, device):
    """The rows ``rows`` (sorted indices) of a Dask ``X``, on ``device``."""
    import dask  # noqa: PLC0415

    parts = _delayed_rows(*_chunks(X), to_numpy(rows))
    parts = [asarray(p, device=device) for p in dask.compute(*parts)]
    return get_namespace(parts[0]).concat(parts, axis=0)


def _assign_block(b, centers):
    """Nearest centre, second-nearest centre and gap of a chunk's rows, as float64 columns."""
    xp = get_namespace(b)
    first, second, gap = assign(b, asarray(centers, device=array_device(b), dtype=b.dtype),
                                xp=xp, second=True)
    return xp.stack([xp.astype(first, xp.float64), xp.astype(second, xp.float64),
                     xp.astype(gap, xp.float64)], axis=1)


def nearest_centres(X, centers, *, device):
    """``(nearest, second, gap)`` of every row of a Dask ``X`` (as
    :func:`svmgpu.solvers.partition.assign` with ``second=True``), computed chunk by chunk on
    the workers and gathered on ``device``: three m-vectors."""
    A = X.map_blocks(_assign_block, to_numpy(centers), dtype=np.float64,
                     chunks=(X.chunks[0], (3,)))
    A = asarray(A.compute(), device=device)
    xp = get_namespace(A)
    return xp.astype(A[:, 0], xp.int64), xp.astype(A[:, 1], xp.int64), A[:, 2]


def _solve_parts(solve, payload, *parts):
    xp = get_namespace(parts[0])
    return solve(parts[0] if len(parts) == 1 else xp.concat(parts, axis=0), payload)


def solve_on_rows(X, tasks, solve, *, device):
    """``[solve(X[rows], payload) for rows, payload in tasks]`` on the workers of a Dask ``X``:
    each task gathers its rows (sorted indices, on the client) from the chunks that hold them
    and runs where the scheduler puts it; all tasks in one computation. The results' arrays
    come back on ``device``."""
    import dask  # noqa: PLC0415

    bounds, blocks = _chunks(X)
    outs = []
    for rows, payload in tasks:
        parts = _delayed_rows(bounds, blocks, to_numpy(rows))
        payload = tuple(None if v is None else to_numpy(v) for v in payload)
        outs.append(dask.delayed(_solve_parts)(solve, payload, *parts))
    return [tuple(asarray(v, device=device) if hasattr(v, "shape") else v for v in out)
            for out in dask.compute(*outs)]


def _predict_block(b, est, method):
    """``est.<method>(b)`` on the worker, the model moved to the chunk's device if needed (a
    pickled model arrives on the CPU)."""
    import copy  # noqa: PLC0415

    dev = array_device(b)
    if str(dev) != est.device_:
        est = copy.deepcopy(est).to_device(dev)
    return getattr(est, method)(b)


def map_predict(est, method, X):
    """``est.<method>`` of a Dask ``X`` (validated by the estimator's input check), chunk by
    chunk on the workers: a Dask array (shape (n,) or (n, k) for the per-class outputs)."""
    k = len(getattr(est, "classes_", ()))
    two_d = method in ("predict_proba", "predict_log_proba") or (
        method == "decision_function" and k > 2)
    dtype = np.float64 if method != "predict" else (
        getattr(est, "classes_", np.zeros(0)).dtype if k else np.float64)
    if two_d:
        if method == "decision_function" and getattr(est, "decision_function_shape",
                                                     "ovr") == "ovo":
            k = len(est.pairs_)  # (the pairwise values of a one-vs-one model)
        return X.map_blocks(_predict_block, est, method, dtype=dtype, chunks=(X.chunks[0], (k,)))
    return X.map_blocks(_predict_block, est, method, dtype=dtype, drop_axis=1)


__all__ = ["as_rows_like", "class_counts", "column_moments", "encode_labels",
           "landmark_factor", "map_predict", "nearest_centres", "per_class", "persist",
           "regression_targets", "rows_of", "sample_weights", "solve_on_rows"]
