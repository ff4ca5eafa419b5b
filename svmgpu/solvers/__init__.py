"""Solvers: pure functions over device arrays, each returning a :class:`SolverResult`."""

from svmgpu.solvers._result import SolverResult
from svmgpu.solvers.closed_form import center_distance_weights, least_squares
from svmgpu.solvers.newton import NewtonOptions, semismooth_newton
from svmgpu.solvers.path import l2svm_path
from svmgpu.solvers.reduced import newton_reduced
from svmgpu.solvers.stagewise import greedy_stagewise
from svmgpu.solvers.unisvm import unisvm, unisvm_newton

__all__ = ["NewtonOptions", "SolverResult", "center_distance_weights", "greedy_stagewise",
           "l2svm_path", "least_squares", "newton_reduced", "semismooth_newton", "unisvm",
           "unisvm_newton"]
