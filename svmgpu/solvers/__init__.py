"""Solvers: pure functions over device arrays, each returning a :class:`SolverResult`."""

from svmgpu.solvers._result import SolverResult
from svmgpu.solvers.stagewise import greedy_stagewise
from svmgpu.solvers.unisvm import unisvm, unisvm_newton

__all__ = ["SolverResult", "greedy_stagewise", "unisvm", "unisvm_newton"]
