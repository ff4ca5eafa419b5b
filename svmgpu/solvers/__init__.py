"""Solvers: pure functions over device arrays, each returning a :class:`SolverResult`."""

from svmgpu.solvers._result import SolverResult

__all__ = ["SolverResult"]
