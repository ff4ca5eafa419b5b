"""Scale-out on Dask (the ``dask`` extra): the estimators that accept a row-chunked
``dask.array`` recognise it and fit through :class:`DaskFeatures` / :class:`DaskNewtonRows`
(see :mod:`svmgpu.distributed._engine`). Importing this package does not import Dask."""

from svmgpu.distributed._engine import (
    DaskFeatures,
    DaskNewtonRows,
    DaskRows,
    DistributedFitError,
    dask_rows,
    executor,
    factor_features,
    fit_scope,
    is_dask_collection,
    reduced_kernel_features,
    require_dask,
)

__all__ = ["DaskFeatures", "DaskNewtonRows", "DaskRows", "DistributedFitError", "dask_rows",
           "executor", "factor_features", "fit_scope", "is_dask_collection", "reduced_kernel_features",
           "require_dask"]
