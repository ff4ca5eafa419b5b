"""svmgpu: kernel SVM solvers for NumPy (CPU) and CuPy (GPU), written once against the
Python array API."""

import importlib

from svmgpu.backend import get_device
from svmgpu.io import load_model, save_model
from svmgpu.kernels import RBF, Laplacian, Linear, Polynomial, make_kernel
from svmgpu.lowrank import LowRankFactor, nystrom, pivoted_cholesky

#: The estimators, imported on first use (PEP 562): they subclass scikit-learn's BaseEstimator,
#: whose import (scipy.stats and more) takes about a second, so ``import svmgpu``, the CLI's
#: help and the backend stay fast.
_LAZY = {
    "GreedySVC": "svmgpu.estimators.greedy",
    "L2SVMPath": "svmgpu.estimators.path",
    "LSSVC": "svmgpu.estimators.closed_form",
    "PSVC": "svmgpu.estimators.closed_form",
    "ReducedSVC": "svmgpu.estimators.reduced",
    "UniSVC": "svmgpu.estimators.unisvm",
    "UniSVR": "svmgpu.estimators.unisvm",
    "WPSVC": "svmgpu.estimators.closed_form",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'svmgpu' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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
