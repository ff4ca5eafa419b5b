"""Low-rank kernel factors ``K ≈ P Pᵀ``: Nyström (uniform landmarks) and pivoted Cholesky."""

from svmgpu.lowrank._factor import LowRankFactor, gram, nystrom, pivoted_cholesky, rmatvec

__all__ = ["LowRankFactor", "gram", "nystrom", "pivoted_cholesky", "rmatvec"]
