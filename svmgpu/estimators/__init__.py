"""scikit-learn estimators wrapping the solvers."""

from svmgpu.estimators._base import SVCBase, SVMBase, SVRBase

__all__ = ["SVCBase", "SVMBase", "SVRBase"]
