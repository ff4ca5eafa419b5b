"""Reduced sets ``J`` of the reduced-kernel models (Zhou 2013): random choice or pivots."""

from __future__ import annotations

import functools

from svmgpu.backend import (
    array_device,
    asarray,
    check_fits,
    get_namespace,
    is_dask_collection,
    parse_bytes,
    random_subset,
    resolve_budget,
    take_rows,
)
from svmgpu.kernels import kernel_columns
from svmgpu.lowrank._factor import pivoted_cholesky
from svmgpu.lowrank._operator import FeatureOperator

#: Reduced-set selection schemes.
REDUCED_SETS = ("random", "pivoted_cholesky")


def select_reduced_set(X, kernel, rank, method, *, candidates=None, random_state=None,
                       memory_budget=None):
    """Indices ``J`` of the reduced set (int64 array on X's device, sorted for "random").

    Parameters
    ----------
    X : array of shape (m, n_features)
    kernel : Kernel
    rank : int
        ``|J|`` (pivoted Cholesky may return fewer when the kernel matrix has lower numerical
        rank).
    method : {"random", "pivoted_cholesky"}
        Uniform draw without replacement (Zhou 2013's RC scheme, RSVM), or the pivots of the
        greedy pivoted Cholesky factorization of the kernel matrix (largest residual diagonal
        first).
    candidates : int array on X's device, optional
        Rows eligible for J, ascending (default: all; the estimators pass the rows of positive
        weight).
    random_state : int, Generator or None
        The positions are drawn on the host (so that every backend draws the same set) and
        uploaded; the rows themselves never leave the device.
    memory_budget : int or str, optional
    """
    xp = get_namespace(X)
    device = array_device(X)
    n_cand = X.shape[0] if candidates is None else int(candidates.shape[0])
    if method == "random":
        pos = random_subset(n_cand, rank, seed=random_state, device=device)
    else:
        if method != "pivoted_cholesky":
            raise ValueError(f"unknown reduced_set {method!r}; valid: {list(REDUCED_SETS)}")
        if memory_budget is not None:  # the greedy pivots' m × r factor is held whole
            check_fits(n_cand * rank * 8, parse_bytes(memory_budget),
                       what=f"the pivoted-Cholesky reduced set ({n_cand:,} x {rank} factor)",
                       hint="use reduced_set='random' or a lower rank")
        Xc = X if candidates is None else take_rows(X, candidates, xp=xp)
        factor = pivoted_cholesky(Xc, kernel, max_rank=rank, tol=0.0, memory_budget=memory_budget)
        pos = asarray(factor.landmarks, device=device)
    return pos if candidates is None else xp.take(candidates, pos)


def reduced_kernel_features(X, kernel, Z, *, intercept=False, in_memory=True,
                            memory_budget=None, known=None, out=None,
                            filled=0, dtype=None) -> FeatureOperator:
    """The features ``P = K(X, Z)`` (or ``[K(X, Z), 1]`` with ``intercept``, the offset as a
    constant attribute) of the reduced-kernel models (GSVM / RKHS of Zhou 2013, reduced LS-SVM,
    PSVM) as a :class:`FeatureOperator` whose map also gives the features of new points.

    Parameters
    ----------
    X : array of shape (m, n_features)
    kernel : Kernel
    Z : array of shape (r, n_features)
        The reduced set's points ``X_J``.
    intercept : bool
    in_memory : bool
        Compute the m × r(+1) matrix once and hold it (default), or recompute its rows per
        block at every pass (for a matrix larger than the memory budget).
    memory_budget : int or str, optional
        Bytes for the row blocks (recomputed rows: the operator's blocks and the kernel blocks
        that compute them share it).
    known : array of shape (m, r₀), optional
        With ``in_memory``: the columns ``K(X, Z[:r₀])`` of a nested smaller set, copied
        instead of computed (:func:`~svmgpu.kernels.kernel_columns`; a rank grown from r₀).
    out, filled : array of shape (m, r(+1)), int
        With ``in_memory``: the array the features are written into, whose first ``filled``
        columns hold the nested smaller set's already (:func:`~svmgpu.kernels.kernel_columns`).
    dtype : dtype, optional
        With ``in_memory`` and no ``out``: the dtype the held features are stored in (None:
        X's), each value computed in X's dtype; the map of new points keeps X's.

    Raises
    ------
    TypeError
        For a Dask ``X``: its features are built on its workers by
        :func:`svmgpu.distributed.reduced_kernel_features`.
    """
    if is_dask_collection(X):
        raise TypeError("reduced_kernel_features takes in-memory rows; the features of a Dask "
                        "X stay on its workers: use "
                        "svmgpu.distributed.reduced_kernel_features(X, kernel, Z)")
    budget = resolve_budget(memory_budget, array_device(X))  # once, for every block
    if in_memory:
        fmap = functools.partial(kernel_columns, kernel, Z=Z, intercept=bool(intercept),
                                 memory_budget=budget)
        return FeatureOperator(fmap(X, progress="features", known=known, out=out,
                                    filled=filled, dtype=dtype),
                               feature_map=fmap, memory_budget=budget)
    if known is not None or out is not None:
        raise ValueError("known columns and out are for features held in memory only")
    # recomputed rows: half the budget for the operator's row blocks, half for the kernel
    # blocks that compute them
    fmap = functools.partial(kernel_columns, kernel, Z=Z, intercept=bool(intercept),
                             memory_budget=budget // 2)
    return FeatureOperator(X=X, feature_map=fmap, rank=Z.shape[0] + int(bool(intercept)),
                           memory_budget=budget // 2)
