"""Kernel functions and blocked kernel products that respect a memory budget."""

from svmgpu.kernels._blocked import iter_kernel_blocks, kernel_columns, kernel_matvec
from svmgpu.kernels._kernels import (
    KERNELS,
    RBF,
    Kernel,
    Laplacian,
    Linear,
    Polynomial,
    Prepared,
    make_kernel,
)
from svmgpu.kernels._partition import RowPartition

__all__ = [
    "KERNELS",
    "RBF",
    "Kernel",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Prepared",
    "RowPartition",
    "iter_kernel_blocks",
    "kernel_columns",
    "kernel_matvec",
    "make_kernel",
]
