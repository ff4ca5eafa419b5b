"""Nyström and pivoted-Cholesky factors of a kernel matrix (UniSVM paper, section 4.2).

Both produce ``P`` of shape (m, r) with ``K ≈ P Pᵀ`` whose landmark rows ``B`` reproduce the
visited rows of ``K`` exactly, ``P_B Pᵀ = K_B``, because ``P = K(X, X_B) L⁻ᵀ`` with ``L`` the
(lower) Cholesky factor of ``K_BB`` taken in pivot order, so that ``P_B = L``.
Features of new points are ``p(x) = L⁻¹ k_B(x)``; for training points ``p(x_i) = P_i``.

The landmark factor ``L`` is computed by a greedy (diagonal-pivoted) Cholesky of ``K_BB``,
which drops landmarks that are numerically dependent on the earlier ones (duplicates, or
a rank-deficient ``K_BB``) instead of adding a jitter that would break ``P_B Pᵀ = K_B``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from numbers import Integral

from svmgpu.backend import (
    Device,
    all_finite,
    array_device,
    asarray,
    astype_rows,
    block_rows,
    compute_context,
    dense_rows,
    float_eps,
    floating_dtype,
    fortran_order,
    greedy_pivoted_cholesky,
    host_array,
    is_dask_collection,
    is_sparse,
    model_rows,
    native_device,
    numpy_dtype,
    pivoted_cholesky_dense,
    random_subset,
    resolve_budget,
    set_rows,
    tri_inv,
    tri_inv_matmul_inplace,
)
from svmgpu.kernels import Kernel, check_kernel_finite, make_kernel, map_kernel_blocks
from svmgpu.lowrank._operator import FeatureOperator


def _rank_tol(dtype) -> float:
    """Relative pivot threshold: residual diagonals below ``tol · max diag`` are noise."""
    return 100.0 * float_eps(dtype)


def independent_landmarks(kernel, Z, dtype, *, xp):
    """``(L, piv)``: the pivoted Cholesky factor of the kernel block of the rows ``Z`` (its
    symmetric part: rounding makes it slightly asymmetric) and its pivots, the rows of a
    numerically independent set (:func:`~svmgpu.backend.pivoted_cholesky_dense`, stopped at
    :func:`_rank_tol` of ``dtype``): every other row's kernel function lies in their span to
    that tolerance. Nyström's landmarks, and the exact path's fallback
    (:class:`svmgpu.SVC`)."""
    K = kernel.block(Z, Z)
    return pivoted_cholesky_dense(0.5 * (K + xp.matrix_transpose(K)), rel_tol=_rank_tol(dtype),
                                  xp=xp)


@dataclass
class LowRankFactor:
    """A low-rank factor ``K ≈ P Pᵀ`` of the kernel matrix of the training set.

    Attributes
    ----------
    P : array of shape (m, r), or None
        Features of the training points (device-resident). A fitted estimator keeps its
        factor without them (:meth:`without_features`): prediction needs the landmarks and
        ``L_inv`` only, and P is m × r (2.4 GB at a million points and r = 300).
    landmarks : array of shape (r,)
        Indices ``B`` of the landmark rows in the training set (int64, on the device of the
        data), in pivot order.
    landmark_X : array of shape (r, n_features)
        The landmark points.
    kernel : Kernel
    L_inv : array of shape (r, r)
        Inverse of the lower-triangular ``L = P_B``; ``p(x) = L_inv @ k_B(x)``.
    trace_residual : float
        ``trace(K − P Pᵀ)`` (exact for pivoted Cholesky; for Nyström computed from the rows).
    method : str
        ``"nystrom"`` or ``"pivoted_cholesky"``.
    """

    P: object
    landmarks: object
    landmark_X: object
    kernel: Kernel
    L_inv: object
    trace_residual: float
    method: str
    _center: object = field(default=None, repr=False)

    @property
    def rank(self) -> int:
        return int(self.L_inv.shape[0])

    def without_features(self) -> LowRankFactor:
        """This factor without the training features ``P`` (what prediction needs)."""
        return dataclasses.replace(self, P=None)

    def features(self, X=None, *, memory_budget=None) -> FeatureOperator:
        """The training features as a :class:`FeatureOperator`: ``P`` in memory, or, for a
        factor without ``P``, recomputed per row block from the training points ``X`` (the same
        map as :meth:`transform`; the landmark rows then equal ``L`` up to rounding).

        Raises
        ------
        TypeError
            For a Dask ``X``: its features are built on its workers by
            :func:`svmgpu.distributed.factor_features`.
        """
        if X is not None and is_dask_collection(X):
            raise TypeError("LowRankFactor.features takes in-memory rows; the features of a "
                            "Dask X stay on its workers: use "
                            "svmgpu.distributed.factor_features(factor, X)")
        budget = resolve_budget(memory_budget, array_device(self.landmark_X))  # once
        if self.P is not None:
            fmap = functools.partial(self.transform, memory_budget=budget)
            return FeatureOperator(self.P, feature_map=fmap, memory_budget=budget)
        if X is None:
            raise ValueError("this factor holds no training features: pass the training X to "
                             "recompute them per block")
        # half the budget for the operator's row blocks, half for the kernel blocks of the map
        fmap = functools.partial(self.transform, memory_budget=budget // 2)
        return FeatureOperator(X=X, feature_map=fmap, rank=self.rank, memory_budget=budget // 2)

    def operator(self, X, *, in_memory=True, memory_budget=None) -> FeatureOperator:
        """The features of the points ``X`` as a :class:`FeatureOperator`: computed and held
        (``in_memory``), or recomputed per block from ``X`` (a Dask partition's features)."""
        if in_memory:
            budget = resolve_budget(memory_budget, array_device(self.landmark_X))
            fmap = functools.partial(self.transform, memory_budget=budget)
            return FeatureOperator(fmap(X), feature_map=fmap, memory_budget=budget)
        return self.without_features().features(X, memory_budget=memory_budget)

    def transform(self, X_new, *, memory_budget=None):
        """Features ``p(x)`` of new points, shape (n, r), with ``p(x)ᵀ p(z) ≈ k(x, z)``."""
        device = array_device(self.landmark_X)
        X_new = asarray(X_new, device=device, dtype=self.landmark_X.dtype)
        if X_new.ndim != 2 or X_new.shape[1] != self.landmark_X.shape[1]:
            raise ValueError(
                f"X_new must have shape (n, {self.landmark_X.shape[1]}), got {tuple(X_new.shape)}"
            )
        return _features(self.kernel, X_new, self.landmark_X, self.L_inv, self._center,
                         device=device, memory_budget=memory_budget)


def _features(kernel, X, Z, L_inv, center, *, device, memory_budget, progress=None,
              dtype=None):
    """``K(X, Z) L_invᵀ`` block by block (the Nyström feature map): each kernel block of the one
    blocked loop is multiplied by ``L_invᵀ`` in place (BLAS ``trmm`` on NumPy). ``dtype`` (None:
    X's): the dtype the features are stored in; each block is computed in X's dtype and cast
    (float64 features stored in float32: :func:`nystrom`'s ``feature_dtype``)."""
    xp = device.xp
    store = X.dtype if dtype is None else dtype
    out = xp.empty((X.shape[0], Z.shape[0]), dtype=store, device=native_device(X))
    same = store == X.dtype
    L_inv = fortran_order(L_inv, xp=xp)  # once: trmm reads it without a copy per block

    def features(s, e, blk):
        res = tri_inv_matmul_inplace(blk, L_inv, xp=xp)
        if not same:
            out[s:e, ...] = xp.astype(res, store)
        elif res is not blk:
            out[s:e, ...] = res

    map_kernel_blocks(kernel, X, Z, features, memory_budget=memory_budget, center=center,
                      out=out if same else None, progress=progress)
    return out


def _prepare_input(X, kernel, *, device, dtype, memory_budget, gamma="scale"):
    """The input on its device, the kernel and the call's :class:`ComputeContext` (namespace,
    device, dtype and budget resolved once, here)."""
    if not hasattr(X, "ndim"):
        X = host_array(X, "float64")
    ctx = compute_context(X, device=device, dtype=dtype, memory_budget=memory_budget)
    X = asarray(X, device=ctx.device, dtype=ctx.dtype)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of shape (n_samples, n_features), got {X.ndim}-D")
    xp = ctx.xp
    if not all_finite(X, xp=xp):
        raise ValueError("X contains NaN or infinity; remove or impute those values first")
    kernel = make_kernel(kernel, gamma=gamma, X=X)
    return X, kernel, ctx


def _check_rank(rank, m, name):
    if isinstance(rank, bool) or not isinstance(rank, Integral) or rank < 1:
        raise ValueError(f"{name} must be a positive integer, got {rank!r}")
    if rank > m:
        raise ValueError(f"{name}={rank} exceeds the number of samples ({m}); use {name} <= {m}")
    return int(rank)


def _check_nonzero_kernel(n, kernel):
    if n == 0:
        raise ValueError(
            f"the {kernel!r} kernel matrix is zero on the training rows (e.g. a linear or "
            "polynomial kernel on all-zero features, or zero sample weights): there are no "
            "features to learn from; check the features or use another kernel")


def _finish(X, kernel, L, landmarks, *, device, memory_budget, method, P=None, trace=None,
            keep=True, feature_dtype=None):
    """Build the factor from the landmark Cholesky ``L`` (r × r lower triangular, rows and
    columns in the order of ``landmarks``, an int64 array of training-row indices on the
    device); ``P`` computed here is stored in ``feature_dtype`` (None: X's)."""
    xp = device.xp
    landmark_X = model_rows(X, landmarks, xp=xp)  # (sparse rows of few nonzeros: CSR)
    L_inv = xp.astype(tri_inv(xp.astype(L, xp.float64, copy=False), lower=True, xp=xp), X.dtype)
    center = kernel.center_of(landmark_X, xp=xp)  # (None for sparse rows)
    if not keep:
        return LowRankFactor(P=None, landmarks=landmarks, landmark_X=landmark_X, kernel=kernel,
                             L_inv=L_inv, trace_residual=math.nan, method=method,
                             _center=center)
    if P is None:
        P = _features(kernel, X, landmark_X, L_inv, center, device=device,
                      memory_budget=memory_budget, progress="features", dtype=feature_dtype)
        # The landmark rows are L itself: set them exactly (rounding in K_BB L⁻ᵀ would
        # otherwise leave a tiny upper triangle).
        P = set_rows(P, landmarks, xp.astype(L, P.dtype), xp=xp)
    if trace is None:  # row norms, no (m, r) temporary; the sums in float64 (in float32 the
        # total alone rounds to ulp(m)/2: 1.5e-5 of a residual near 1e-3 at m = 400, on CuPy)
        trace = (float(xp.sum(kernel.diag(X), dtype=xp.float64))
                 - float(xp.sum(xp.vecdot(P, P), dtype=xp.float64)))
    # NaN or inf anywhere in P (an overflowed kernel) reaches the trace: no extra read
    check_kernel_finite(math.isfinite(trace), kernel=kernel, dtype=P.dtype)
    return LowRankFactor(P=P, landmarks=landmarks, landmark_X=landmark_X, kernel=kernel,
                         L_inv=L_inv, trace_residual=max(trace, 0.0), method=method,
                         _center=center)


def nystrom(X, kernel="rbf", rank=100, *, gamma="scale", random_state=None, candidates=None,
            keep_features=True, device=None, dtype=None, memory_budget=None,
            feature_dtype=None) -> LowRankFactor:
    """Nyström factor with ``rank`` landmarks drawn uniformly without replacement.

    This is the random-chosen reduced set of the papers (UniSVM section 4.2; Zhou 2013 RC).
    ``P = K(X, X_B) L⁻ᵀ`` is computed block by block under ``memory_budget``; landmarks
    numerically dependent on others are dropped (so ``factor.rank`` may be below ``rank``).

    Parameters
    ----------
    X : array of shape (m, n_features)
    kernel : str or Kernel
    rank : int
        Number of landmarks, ``1 <= rank <= m``.
    gamma : "scale", "auto" or float
        Used when ``kernel`` is a name.
    random_state : int, numpy Generator or None
    candidates : int array on X's device, optional
        The rows landmarks may be drawn from, ascending (the estimators pass the rows of
        positive sample weight). Rows whose kernel diagonal ``k(x, x)`` is zero (all-zero
        rows for the linear and polynomial kernels without offset) are never drawn: their
        kernel column is zero. ``rank`` is capped by the number of eligible rows.
    keep_features : bool
        Compute and hold ``P`` (m × r). False: only the landmarks and ``L⁻¹`` (``P`` None,
        ``trace_residual`` NaN); :meth:`LowRankFactor.features` then recomputes the rows of
        ``P`` from ``X`` per block (for a ``P`` larger than the memory budget).
    device : {"cpu", "cuda", "cuda:N", "auto"}, optional
        Default: the device of ``X``.
    dtype : dtype, optional
        Default: the dtype of ``X`` (non-floating input becomes float64).
    memory_budget : int or str, optional
        Bytes for the temporaries (``P`` itself is not counted).
    feature_dtype : {None, "float32", "float64"}
        The dtype ``P`` is stored in (None: ``dtype``'s). "float32" with float64 ``dtype``:
        every value computed in float64 (the landmarks kept by float64's tolerance, each
        block's ``K(X, X_B) L⁻ᵀ``) and rounded once into ``P``, half the memory and the
        solvers' passes over it.

    Returns
    -------
    LowRankFactor

    Raises
    ------
    ValueError
        When the kernel matrix is zero on the eligible rows (there are no features).
    """
    X, kernel, ctx = _prepare_input(X, kernel, device=device, dtype=dtype,
                                    memory_budget=memory_budget, gamma=gamma)
    store = None if feature_dtype is None else floating_dtype(feature_dtype, ctx.xp,
                                                               what="feature_dtype")
    xp, device = ctx.xp, ctx.device
    m = X.shape[0]
    rank = _check_rank(rank, m, "rank")
    eligible = kernel.diag(X) > 0
    if candidates is not None:
        mask = xp.zeros((m,), dtype=xp.bool, device=device.native_device)
        eligible = eligible & set_rows(mask, candidates, xp.ones(candidates.shape, dtype=xp.bool,
                                                                  device=device.native_device),
                                       xp=xp)
    n_el = int(xp.count_nonzero(eligible))
    _check_nonzero_kernel(n_el, kernel)
    if n_el == m:
        B = random_subset(m, rank, seed=random_state, device=device)  # sorted, on the device
    else:
        rows = xp.nonzero(eligible)[0]
        B = xp.take(rows, random_subset(n_el, min(rank, n_el), seed=random_state, device=device))
    # K_BB in float64 whatever X's dtype: the factorization decides which landmarks are
    # independent, and float32 rounding of K_BB (~1e-7) would hide a good part of the spectrum.
    L, piv = independent_landmarks(kernel, astype_rows(model_rows(X, B, xp=xp), xp.float64,
                                                       xp=xp),
                                   X.dtype, xp=xp)
    _check_nonzero_kernel(len(piv), kernel)
    return _finish(X, kernel, L, xp.take(B, asarray(piv, device=device)), device=device,
                   memory_budget=ctx.budget_bytes, method="nystrom", keep=keep_features,
                   feature_dtype=store)


def pivoted_cholesky(X, kernel="rbf", max_rank=100, tol=1e-3, *, gamma="scale", device=None,
                     dtype=None, memory_budget=None) -> LowRankFactor:
    """Greedy pivoted Cholesky factor of the kernel matrix (Zhou 2016; UniSVM section 4.2).

    At each step the pivot is the largest diagonal of the residual ``K − P Pᵀ``; only the
    visited columns of ``K`` are computed, in O(m r²) time. Stops when
    ``trace(K − P Pᵀ) <= tol · m`` or at ``max_rank``, whichever comes first (or when the
    residual is numerically zero).

    Parameters
    ----------
    X : array of shape (m, n_features)
    kernel : str or Kernel
    max_rank : int
    tol : float
        Relative trace tolerance (the UniSVM paper uses 1e-3).
    gamma, device, dtype, memory_budget
        As in :func:`nystrom`.

    Returns
    -------
    LowRankFactor
        ``P`` is returned as the transpose of a (r, m) C-ordered buffer.
    """
    X, kernel, ctx = _prepare_input(X, kernel, device=device, dtype=dtype,
                                    memory_budget=memory_budget, gamma=gamma)
    xp, device = ctx.xp, ctx.device
    m = X.shape[0]
    max_rank = _check_rank(max_rank, m, "max_rank")
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a non-negative finite number, got {tol!r}")
    budget = ctx.budget_bytes
    if is_sparse(X):  # a column is a sparse product with the pivot's (dense) row
        def column(j):
            return kernel.sparse_block(X, dense_rows(X, slice(j, j + 1), xp=xp), xp=xp)[:, 0]
    else:
        center = kernel.center_of(X, xp=xp)
        # The prepared training set is reused for every column: check it fits the budget.
        block_rows(m * (X.shape[1] + 3), numpy_dtype(X.dtype).itemsize, budget)
        px = kernel.prepare(X, center, xp=xp)

        def column(j):
            return kernel.evaluate(px, px.rows(j, j + 1), xp=xp)[:, 0]

    Pt, piv, trace = greedy_pivoted_cholesky(
        kernel.diag(X), column, max_rank, stop_trace=float(tol) * m,
        rel_tol=_rank_tol(X.dtype), xp=xp,
    )
    check_kernel_finite(math.isfinite(trace), kernel=kernel, dtype=X.dtype)
    _check_nonzero_kernel(len(piv), kernel)
    piv = asarray(host_array(piv, "int64"), device=device)
    L = xp.matrix_transpose(xp.take(Pt, piv, axis=1))
    return _finish(X, kernel, L, piv, device=device,
                   memory_budget=budget, method="pivoted_cholesky",
                   P=xp.matrix_transpose(Pt), trace=trace)


__all__ = ["Device", "LowRankFactor", "independent_landmarks", "nystrom", "pivoted_cholesky"]
