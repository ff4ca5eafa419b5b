"""Low-rank kernel factors ``K ≈ P Pᵀ``: Nyström (uniform landmarks) and pivoted Cholesky."""

from svmgpu.lowrank._factor import LowRankFactor, nystrom, pivoted_cholesky

__all__ = ["LowRankFactor", "nystrom", "pivoted_cholesky"]
