"""The features of the linear kernel: the rows of ``X`` themselves (``K = X Xᵀ``, ``P = X``)."""

from __future__ import annotations

import functools

from svmgpu.backend import dense_rows, is_sparse
from svmgpu.lowrank._operator import FeatureOperator


def linear_features(Xb, *, in_memory=True, memory_budget=None) -> FeatureOperator:
    """The features of a linear model: the rows themselves, as a :class:`FeatureOperator` (of an
    in-memory ``X``, or of a Dask partition through :class:`svmgpu.distributed.DaskFeatures`);
    sparse rows are densified a block at a time, never whole.

    Parameters
    ----------
    Xb : array or sparse matrix of shape (m, n_features)
    in_memory : bool
        Ignored: the rows are held already (the signature of a feature builder).
    memory_budget : int or str, optional
        Bytes for the row blocks.
    """
    if is_sparse(Xb):
        dense = functools.partial(dense_rows, rows=slice(None), xp=None)
        return FeatureOperator(X=Xb, feature_map=dense, rank=Xb.shape[1],
                               memory_budget=memory_budget)
    return FeatureOperator(Xb, memory_budget=memory_budget)


__all__ = ["linear_features"]
