"""Sparse row matrices (SciPy CSR on the CPU) as training and prediction input.

The kernel models read X in three ways only: row blocks against dense rows (kernel blocks, by a
sparse · dense product plus row norms, :meth:`svmgpu.kernels.Kernel.sparse_block`), a few
rows taken dense (landmarks, reduced sets), and per-row or per-column sums (kernel diagonals,
``gamma="scale"``). These helpers do each for sparse and dense arrays alike, so the callers
keep one code path; X itself is never densified.
"""

from __future__ import annotations

import numpy as np


def is_sparse(x) -> bool:
    """Whether ``x`` is a SciPy sparse matrix or array (no SciPy import for other inputs)."""
    return type(x).__module__.startswith("scipy.sparse")


def as_csr(x, dtype):
    """``x`` as a CSR matrix of ``dtype`` (canonical: sorted indices, no duplicates)."""
    x = x.tocsr().astype(dtype, copy=False)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()
    return x


def take_rows(X, rows, *, xp):
    """Rows ``rows`` (a slice or an integer index array) of ``X``: sparse stays sparse."""
    if is_sparse(X):
        return X[rows]
    return X[rows, ...] if isinstance(rows, slice) else xp.take(X, rows, axis=0)


def dense_rows(X, rows, *, xp):
    """Rows ``rows`` of ``X`` as a dense array (the landmarks or reduced set of a sparse X)."""
    if is_sparse(X):
        return np.asarray(X[rows if isinstance(rows, slice) else np.asarray(rows)].toarray())
    return take_rows(X, rows, xp=xp)


def row_sq_norms(X, *, xp):
    """``‖xᵢ‖²`` for each row, shape (n,)."""
    if is_sparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).reshape(-1)
    return xp.sum(X * X, axis=1)


def sparse_product_t(X, Z):
    """``X Zᵀ`` for sparse ``X`` (n × d) and dense ``Z`` (k × d): dense (n × k)."""
    return np.asarray(X @ Z.T)


def all_finite(X, *, xp) -> bool:
    """Whether ``X`` has no NaN or infinity (for sparse X: its stored values)."""
    if is_sparse(X):
        return bool(np.all(np.isfinite(X.data)))
    return bool(xp.all(xp.isfinite(X)))


def column_moments(X, weight=None):
    """Per-column variances and the variance of all entries of a sparse ``X`` (``weight``:
    rows counted as repetitions), as ``gamma="scale"`` needs them: ``E[x²] − E[x]²``."""
    m, d = X.shape
    if weight is None:
        w = np.full(m, 1.0 / m)
    else:
        w = np.asarray(weight, dtype=np.float64) / float(np.sum(weight))
    mean = np.asarray(X.T @ w).reshape(-1)
    sq = np.asarray(X.multiply(X).T @ w).reshape(-1)
    col_var = np.maximum(sq - mean * mean, 0.0)
    total_mean, total_sq = mean.mean(), sq.mean()
    return col_var, max(total_sq - total_mean * total_mean, 0.0)
