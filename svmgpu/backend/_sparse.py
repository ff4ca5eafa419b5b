"""Sparse row matrices as training and prediction input: SciPy CSR on the CPU, CuPy's
``cupyx.scipy.sparse`` CSR on a GPU.

The kernel models read X in three ways only: row blocks against dense rows (kernel blocks, by a
sparse · dense product plus row norms, :meth:`svmgpu.kernels.Kernel.sparse_block`), a few
rows kept (landmarks, reduced sets, support vectors: sparse where they have few nonzeros,
:func:`model_rows`), and per-row or per-column sums (kernel diagonals, ``gamma="scale"``).
These helpers do each for sparse and dense arrays alike, so the callers keep one code path; X
itself is never densified.
"""

from __future__ import annotations

import math

import numpy as np


def is_sparse(x) -> bool:
    """Whether ``x`` is a SciPy or CuPy sparse matrix (no SciPy import for other inputs)."""
    return type(x).__module__.startswith(("scipy.sparse", "cupyx.scipy.sparse"))


def is_device_sparse(x) -> bool:
    """Whether ``x`` is a CuPy (``cupyx.scipy.sparse``) sparse matrix."""
    return type(x).__module__.startswith("cupyx.scipy.sparse")


def _module(X):
    """NumPy or CuPy: the array module of a sparse matrix's data."""
    if is_device_sparse(X):
        import cupy  # noqa: PLC0415

        return cupy
    return np


def _sparse_module(X):
    """SciPy's or CuPy's sparse module: the one of the sparse matrix ``X``'s kind."""
    if is_device_sparse(X):
        import cupyx.scipy.sparse as sparse  # noqa: PLC0415
    else:
        import scipy.sparse as sparse  # noqa: PLC0415
    return sparse


def native_device(x):
    """The ``device`` to create arrays beside ``x`` with (None: the namespace's default); for
    a sparse matrix its data's device (CuPy's sparse matrices raise on ``.device``)."""
    return getattr(x.data if is_sparse(x) else x, "device", None)


def as_csr(x, dtype):
    """``x`` as a CSR matrix of ``dtype`` (canonical: sorted indices, no duplicates)."""
    x = x.tocsr().astype(dtype, copy=False)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()
    return x


def sparse_to(x, device, dtype):
    """The sparse matrix ``x`` as CSR of ``dtype`` on ``device`` (a :class:`Device`: the CPU,
    SciPy; ``cuda:N``, CuPy)."""
    if device.kind == "cpu":
        return as_csr(x.get() if is_device_sparse(x) else x, dtype)
    if device.kind != "cuda":
        raise TypeError(f"sparse X runs on the CPU (SciPy) or a CUDA GPU (CuPy), not on "
                        f"{device}: pass dense X there")
    import cupy  # noqa: PLC0415
    import cupyx.scipy.sparse  # noqa: PLC0415

    with cupy.cuda.Device(device.index):
        if is_device_sparse(x) and int(x.data.device.id) == device.index:
            return as_csr(x, dtype)
        host = x.get() if is_device_sparse(x) else x
        return as_csr(cupyx.scipy.sparse.csr_matrix(as_csr(host, dtype)), dtype)


#: Bytes of a block of rows of :func:`astype_rows`'s shifted conversion and of
#: :func:`row_extent`: their temporaries stay small and are reused block after block (blocks
#: of 65,536 rows made temporaries of all 60,000 × 784 float64 rows, fresh memory each: 0.86 s
#: for row_extent against 0.05 s).
_BLOCK_BYTES = 1 << 20


def _row_step(X, itemsize=None):
    """Rows of a block of :data:`_BLOCK_BYTES` of dense X (in X's dtype, or of ``itemsize``
    bytes an entry)."""
    itemsize = getattr(X.dtype, "itemsize", 8) if itemsize is None else itemsize
    return max(1, _BLOCK_BYTES // max(1, int(X.shape[1]) * itemsize))


def astype_rows(X, dtype, *, xp, shift=None):
    """``X`` (dense or sparse) converted to ``dtype`` (no copy when it has it already); with
    ``shift`` (a vector, dense X only) ``X − shift`` converted, row block by row block (no
    full-size temporary in X's dtype): an offset of the features then takes none of the
    narrower dtype's digits."""
    if shift is None:
        if is_sparse(X):
            return X.astype(dtype, copy=False)
        return xp.astype(X, dtype, copy=False)
    if is_sparse(X):
        raise ValueError("a sparse X cannot be shifted (it would become dense)")
    m, step = X.shape[0], _row_step(X)
    out = xp.empty(X.shape, dtype=dtype, device=getattr(X, "device", None))
    for s in range(0, m, step):
        e = min(s + step, m)
        out[s:e, ...] = xp.astype(X[s:e, ...] - shift, dtype)
    return out


def row_extent(X, *, xp, shift=None):
    """``(max |xᵢⱼ − shiftⱼ|, max ‖xᵢ − shift‖²)`` over the rows of X as Python floats
    (0.0 for no rows; ``shift`` for dense X only), row block by row block: how far the rows
    reach, for the choice of a dtype that holds their squared distances."""
    if X.shape[0] == 0:
        return 0.0, 0.0
    if is_sparse(X):
        if shift is not None:
            raise ValueError("a sparse X cannot be shifted (it would become dense)")
        data = _module(X).asarray(X.data)
        amax = float(_module(X).max(_module(X).abs(data))) if data.shape[0] else 0.0
        return amax, float(_module(X).max(row_sq_norms(X, xp=xp)))
    from svmgpu.backend._ops import fetch_scalars  # noqa: PLC0415

    m, step = X.shape[0], _row_step(X)
    hi, lo, sq = [], [], []  # (per block, read at the end: one transfer)
    for s in range(0, m, step):
        A = X[s:min(s + step, m), ...]
        if shift is not None:
            A = A - shift
        hi.append(xp.max(A))
        lo.append(xp.min(A))
        sq.append(xp.max(xp.sum(A * A, axis=1)))
    a, b, q = fetch_scalars(xp.max(xp.stack(hi)), xp.min(xp.stack(lo)), xp.max(xp.stack(sq)),
                            xp=xp)
    return max(float(a), -float(b)), float(q)


def take_rows(X, rows, *, xp):
    """Rows ``rows`` (a slice or an integer index array) of ``X``: sparse stays sparse."""
    if is_sparse(X):
        return X[rows]
    return X[rows, ...] if isinstance(rows, slice) else xp.take(X, rows, axis=0)


#: The share of nonzero entries at most at which rows that meet sparse rows are held sparse
#: (CSR): dense rows ``Z`` multiplied by sparse rows (``X Zᵀ``, :func:`sparse_side`), and the
#: rows a fit of sparse X keeps (:func:`model_rows`). SciPy's product with a dense ``Zᵀ``
#: copies it C-contiguous at every call: ``SVC``'s support vectors of a sparse fit taken dense
#: (2,000 of 50,000 features, 0.1 % nonzero, 800 MB) against 3,000 sparse rows in blocks of
#: 1,000 took 2.61 s, against 0.35 s for their one CSR conversion and milliseconds for the
#: products. Denser rows multiply faster dense: ``SVC``'s exact path (its kernel rows from
#: sparse products, :class:`~svmgpu.kernels.KernelRows`, where X's rows are this sparse),
#: second fits of the linear kernel on 3,000 rows of 5,000 features, dense rows against
#: sparse: density 0.005 1.46 → 0.83 s, 0.02 2.08 → 1.33 s, 0.05 2.01 → 1.58 s, 0.1 2.03 →
#: 2.15 s; the fuzz sweeps' sparse sets (entries below 0.7 zeroed, density 0.5): 6,000 rows
#: of 200 features 0.90 s dense against 3.89 s sparse; 2,000 text-like rows of 100,000
#: features (density 0.0005): 44 s dense (1.6 GB of rows) against 0.24 s sparse.
SPARSE_SIDE_DENSITY = 0.05


def _few_nonzeros(nnz, shape):
    """Whether ``nnz`` nonzeros of a ``shape`` matrix are at most :data:`SPARSE_SIDE_DENSITY`
    of its entries (and it has entries)."""
    size = int(shape[0]) * int(shape[1])
    return size > 0 and int(nnz) <= SPARSE_SIDE_DENSITY * size


def sparse_side(Z, X):
    """``Z`` (dense rows multiplied by sparse rows ``X``) as CSR of X's kind where at most
    :data:`SPARSE_SIDE_DENSITY` of its entries are nonzero, else ``Z`` unchanged (also where
    ``X`` is dense or ``Z`` sparse already)."""
    if not is_sparse(X) or is_sparse(Z) or \
            not _few_nonzeros(_module(X).count_nonzero(Z), Z.shape):
        return Z
    return _sparse_module(X).csr_matrix(Z)


def keeps_sparse(X) -> bool:
    """Whether X's rows are held sparse as a whole (:func:`model_rows` of all of them): a
    sparse X of at most :data:`SPARSE_SIDE_DENSITY` nonzero entries."""
    return is_sparse(X) and _few_nonzeros(X.nnz, X.shape)


def model_rows(X, rows, *, xp):
    """Rows ``rows`` of ``X`` that a fitted model keeps (its support vectors or landmarks): a
    sparse X's rows stay CSR where at most :data:`SPARSE_SIDE_DENSITY` of their entries are
    nonzero, as scikit-learn keeps a sparse fit's support vectors sparse (taken dense, 2,000
    text rows of 100,000 features were a 1.6 GB attribute); denser ones, and dense X's, are
    dense (:func:`dense_rows`)."""
    if not is_sparse(X):
        return take_rows(X, rows, xp=xp)
    Z = X[rows if isinstance(rows, slice) else _module(X).asarray(rows)]
    return Z if _few_nonzeros(Z.nnz, Z.shape) else _module(X).asarray(Z.toarray())


def concat_rows(blocks, *, xp):
    """The row blocks stacked (sparse blocks: one CSR matrix, never densified)."""
    if is_sparse(blocks[0]):
        return _sparse_module(blocks[0]).vstack(blocks, format="csr")
    return xp.concat(blocks, axis=0)


def dense_rows(X, rows, *, xp):
    """Rows ``rows`` of ``X`` as a dense array (the landmarks or reduced set of a sparse X)."""
    if is_sparse(X):
        mod = _module(X)
        return mod.asarray(X[rows if isinstance(rows, slice) else mod.asarray(rows)].toarray())
    return take_rows(X, rows, xp=xp)


def row_sq_norms(X, *, xp):
    """``‖xᵢ‖²`` for each row, shape (n,)."""
    if is_sparse(X):
        return _module(X).asarray(X.multiply(X).sum(axis=1)).reshape(-1)
    return xp.sum(X * X, axis=1)


def sparse_product_t(X, Z):
    """``X Zᵀ`` for sparse ``X`` (n × d) and dense or sparse ``Z`` (k × d): dense (n × k).
    Sparse Z stays sparse in the product (its rows densified first took 2,000 × 100,000
    rows of 50 nonzeros each to a 1.6 GB array and SVC's exact kernel matrix to 35 s, against
    scikit-learn's 2.3 s for the whole fit)."""
    P = X @ Z.T
    return P.toarray() if is_sparse(P) else _module(X).asarray(P)


def all_finite(X, *, xp) -> bool:
    """Whether ``X`` has no NaN or infinity (for sparse X: its stored values)."""
    if is_sparse(X):
        mod = _module(X)
        return bool(mod.all(mod.isfinite(X.data)))
    return bool(xp.all(xp.isfinite(X)))


def column_moments(X, weight=None, *, xp=None):
    """Per-column variances and the variance of all entries of ``X`` (``weight``: rows counted
    as repetitions), as ``gamma="scale"`` needs them, in float64 (for float32 X too: at an
    offset of 10³ float32's sums gave γ 0.145 for 0.117).

    Sparse X: ``E[x²] − E[x]²``. Dense X (``xp`` its namespace): two passes over blocks of
    rows, the column means and then the squared deviations from them, and the variance of all
    entries from those, ``mean(col_var) + var(col_mean)``: no temporary of X's size (NumPy's
    ``var`` made two, 376 MB each for 60,000 × 784 float64 rows: 0.5 s of fresh memory)."""
    if not is_sparse(X):
        return _dense_moments(X, weight, xp=xp)
    mod = _module(X)
    m = X.shape[0]
    X = X.astype(mod.float64, copy=False)  # (float32 sums of x² lose an offset's spread)
    if weight is None:
        w = mod.full(m, 1.0 / m, dtype=X.dtype)
    else:
        w = mod.asarray(weight, dtype=X.dtype) / mod.sum(mod.asarray(weight, dtype=X.dtype))
    mean = mod.asarray(X.T @ w).reshape(-1)
    sq = mod.asarray(X.multiply(X).T @ w).reshape(-1)
    col_var = mod.maximum(sq - mean * mean, 0.0)
    total_mean, total_sq = mean.mean(), sq.mean()
    return col_var, mod.maximum(total_sq - total_mean * total_mean, 0.0)


def column_range(X, *, xp, keep=None):
    """``(lo, hi)``: each column's smallest and largest entry of a dense X over the rows where
    the boolean (n,) array ``keep`` holds (all rows: None), by blocks of :data:`_BLOCK_BYTES`
    (no masked copy of X's size; a column without such rows gets ``(inf, -inf)``)."""
    if keep is None:
        return xp.min(X, axis=0), xp.max(X, axis=0)
    rows, step = xp.nonzero(keep)[0], _row_step(X)
    dev = getattr(X, "device", None)
    lo = xp.full((X.shape[1],), math.inf, dtype=X.dtype, device=dev)
    hi = xp.full((X.shape[1],), -math.inf, dtype=X.dtype, device=dev)
    n = int(rows.shape[0])
    for s in range(0, n, step):  # (the kept rows, a block at a time)
        A = xp.take(X, rows[s:min(s + step, n)], axis=0)
        lo, hi = xp.minimum(lo, xp.min(A, axis=0)), xp.maximum(hi, xp.max(A, axis=0))
    return lo, hi


def _dense_moments(X, weight, *, xp):
    """:func:`column_moments` of a dense X, row block by row block (float64 blocks of
    :data:`_BLOCK_BYTES`)."""
    m, d = X.shape
    f64, dev = xp.float64, getattr(X, "device", None)
    step = _row_step(X, 8)
    w = None if weight is None else xp.astype(weight, f64)
    total_w = float(m) if w is None else xp.sum(w)

    def blocks():
        for s in range(0, m, step):
            e = min(s + step, m)
            yield xp.astype(X[s:e, ...], f64), (None if w is None else w[s:e, None])

    acc = xp.zeros((d,), dtype=f64, device=dev)
    for A, wb in blocks():
        acc = acc + xp.sum(A if wb is None else wb * A, axis=0)
    mean = acc / total_w
    acc = xp.zeros((d,), dtype=f64, device=dev)
    for A, wb in blocks():
        D = A - mean
        D = D * D
        acc = acc + xp.sum(D if wb is None else wb * D, axis=0)
    col_var = acc / total_w
    return col_var, xp.mean(col_var) + xp.mean((mean - xp.mean(mean)) ** 2)
