"""Low-rank kernel factors ``K ≈ P Pᵀ`` (Nyström, pivoted Cholesky), reduced sets, and the one
operator that every solver reads the m × r feature matrix ``P`` through."""

from svmgpu.lowrank._factor import LowRankFactor, nystrom, pivoted_cholesky
from svmgpu.lowrank._operator import CurvatureGram, FeatureOperator, as_operator, feature_plan
from svmgpu.lowrank._reduced import REDUCED_SETS, reduced_kernel_features, select_reduced_set

__all__ = ["REDUCED_SETS", "CurvatureGram", "FeatureOperator", "LowRankFactor", "as_operator",
           "feature_plan", "nystrom", "pivoted_cholesky", "reduced_kernel_features", "select_reduced_set"]
