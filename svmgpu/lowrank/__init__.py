"""Low-rank kernel factors ``K ≈ P Pᵀ``: Nyström (uniform landmarks) and pivoted Cholesky."""

from svmgpu.lowrank._factor import (
    CurvatureGram,
    LowRankFactor,
    gram,
    nystrom,
    pivoted_cholesky,
    rmatvec,
)
from svmgpu.lowrank._reduced import REDUCED_SETS, select_reduced_set

__all__ = ["REDUCED_SETS", "CurvatureGram", "LowRankFactor", "gram", "nystrom", "pivoted_cholesky", "rmatvec",
           "select_reduced_set"]
