"""Kernel functions and blocked kernel products that respect a memory budget."""

from svmgpu.kernels._blocked import (
    KernelRows,
    check_kernel_finite,
    iter_kernel_blocks,
    kernel_block_min_bytes,
    kernel_columns,
    kernel_matvec,
    map_kernel_blocks,
)
from svmgpu.kernels._kernels import (
    KERNELS,
    RBF,
    Kernel,
    Laplacian,
    Linear,
    Polynomial,
    Prepared,
    distance_range_problem,
    make_kernel,
)
from svmgpu.kernels._partition import RowPartition, negligible_level

__all__ = [
    "KernelRows",
    "KERNELS",
    "RBF",
    "Kernel",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Prepared",
    "RowPartition",
    "check_kernel_finite",
    "distance_range_problem",
    "iter_kernel_blocks",
    "kernel_block_min_bytes",
    "kernel_columns",
    "kernel_matvec",
    "make_kernel",
    "map_kernel_blocks",
    "negligible_level",
]
