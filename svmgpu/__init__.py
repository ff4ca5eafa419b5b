"""svmgpu: kernel SVM solvers for NumPy (CPU) and CuPy (GPU), written once against the
Python array API."""

from svmgpu.backend import get_device
from svmgpu.estimators.closed_form import LSSVC, PSVC, WPSVC
from svmgpu.estimators.greedy import GreedySVC
from svmgpu.estimators.path import L2SVMPath
from svmgpu.estimators.reduced import ReducedSVC
from svmgpu.estimators.unisvm import UniSVC, UniSVR
from svmgpu.io import load_model, save_model
from svmgpu.kernels import RBF, Laplacian, Linear, Polynomial, make_kernel
from svmgpu.lowrank import LowRankFactor, nystrom, pivoted_cholesky

__version__ = "0.1.0"

__all__ = [
    "GreedySVC",
    "L2SVMPath",
    "LSSVC",
    "PSVC",
    "ReducedSVC",
    "WPSVC",
    "RBF",
    "UniSVC",
    "UniSVR",
    "Laplacian",
    "Linear",
    "LowRankFactor",
    "Polynomial",
    "__version__",
    "get_device",
    "load_model",
    "make_kernel",
    "nystrom",
    "pivoted_cholesky",
    "save_model",
]
