"""svmgpu: kernel SVM solvers for NumPy (CPU) and CuPy (GPU), written once against the
Python array API."""

from svmgpu.backend import get_device
from svmgpu.estimators import REGISTRY as _REGISTRY
from svmgpu.io import load_model, save_model
from svmgpu.kernels import RBF, Laplacian, Linear, Polynomial, make_kernel
from svmgpu.lowrank import LowRankFactor, nystrom, pivoted_cholesky

# The estimators are imported on first use (PEP 562), from the one registry
# (:data:`svmgpu.estimators.REGISTRY`): they subclass scikit-learn's BaseEstimator, whose import
# (scipy.stats and more) takes about a second, so ``import svmgpu``, the CLI's help and the
# backend stay fast.


def __getattr__(name):
    if name not in _REGISTRY:
        raise AttributeError(f"module 'svmgpu' has no attribute {name!r}")
    value = _REGISTRY[name].load()
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_REGISTRY))


__version__ = "0.1.0"

__all__ = [
    *_REGISTRY,
    "RBF",
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
