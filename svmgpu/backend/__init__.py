"""The only place in svmgpu that tells NumPy from CuPy (and from other array-API namespaces).

Everything else receives a :class:`ComputeContext` (namespace ``xp``, :class:`Device`, dtype,
byte budget; resolved once by a public entry point) or its namespace, and calls the helpers
below for the few operations the Python array API standard lacks (triangular solves, Cholesky
factor/solve, SPD and Woodbury solves, in-place elementwise updates) or for device facts (free
memory). It also tells a Dask collection from an array (:func:`is_dask_collection`, without
importing Dask), so that every layer can refuse or route one; the Dask engine itself is
:mod:`svmgpu.distributed`.
"""

#: The exception of a failed factorization on every backend (NumPy's; the backend raises it for
#: CuPy and other namespaces too).
from numpy.linalg import LinAlgError  # noqa: E402

from svmgpu.backend._context import ComputeContext, compute_context
from svmgpu.backend._dask import is_dask_collection, require_dask
from svmgpu.backend._device import (
    Device,
    array_device,
    asarray,
    cupy_available,
    float_eps,
    get_device,
    get_namespace,
    host_array,
    is_cupy,
    is_foreign_array,
    is_numpy,
    numpy_dtype,
    random_subset,
    random_uniforms,
    seed_from,
    to_device,
    to_host,
    to_numpy,
)
from svmgpu.backend._linalg import (
    GramAccumulator,
    cho_factor,
    cho_solve,
    cholesky,
    factor_ok,
    greedy_pivoted_cholesky,
    jittered_cholesky,
    pivoted_cholesky_dense,
    smw_factor_solve,
    solve_smw,
    solve_triangular,
    spd_factor,
    spd_factor_solve,
    tri_inv,
    tri_inv_matmul_inplace,
)
from svmgpu.backend._memory import (
    available_memory,
    block_rows,
    check_fits,
    format_bytes,
    parse_bytes,
    peak_host_bytes,
    resolve_budget,
)
from svmgpu.backend._ops import (
    BlockScratch,
    clip,
    exp_neg_clipped_inplace,
    fetch_scalars,
    fortran_order,
    matmul,
    nonzero_indices,
    power_inplace,
    set_rows,
)
from svmgpu.backend._sparse import (
    all_finite,
    column_moments,
    dense_rows,
    is_device_sparse,
    is_sparse,
    native_device,
    row_sq_norms,
    sparse_product_t,
    take_rows,
)
from svmgpu.backend._threads import map_threads, serial_blas, small_blas
from svmgpu.backend._tree import tree_to_device

__all__ = [
    "BlockScratch",
    "GramAccumulator",
    "all_finite",
    "column_moments",
    "dense_rows",
    "is_device_sparse",
    "is_sparse",
    "native_device",
    "row_sq_norms",
    "sparse_product_t",
    "take_rows",
    "array_device",
    "asarray",
    "available_memory",
    "block_rows",
    "check_fits",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "factor_ok",
    "clip",
    "compute_context",
    "ComputeContext",
    "cupy_available",
    "Device",
    "exp_neg_clipped_inplace",
    "fetch_scalars",
    "float_eps",
    "format_bytes",
    "fortran_order",
    "get_device",
    "get_namespace",
    "greedy_pivoted_cholesky",
    "host_array",
    "is_cupy",
    "is_dask_collection",
    "is_foreign_array",
    "is_numpy",
    "jittered_cholesky",
    "LinAlgError",
    "matmul",
    "nonzero_indices",
    "numpy_dtype",
    "parse_bytes",
    "peak_host_bytes",
    "pivoted_cholesky_dense",
    "power_inplace",
    "random_subset",
    "random_uniforms",
    "require_dask",
    "resolve_budget",
    "seed_from",
    "map_threads",
    "serial_blas",
    "set_rows",
    "small_blas",
    "smw_factor_solve",
    "solve_smw",
    "solve_triangular",
    "spd_factor",
    "spd_factor_solve",
    "to_device",
    "to_host",
    "to_numpy",
    "tree_to_device",
    "tri_inv",
    "tri_inv_matmul_inplace",
]
