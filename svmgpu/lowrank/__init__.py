"""Low-rank kernel factors ``K ≈ P Pᵀ`` (Nyström, pivoted Cholesky), reduced sets, the linear
kernel's features, the one operator that every solver reads the m × r feature matrix ``P``
through, and the row-source contract (:class:`RowSource`, :class:`AdditiveRows`,
:func:`combine`) it and its distributed form fulfil."""

from svmgpu.lowrank._factor import LowRankFactor, independent_landmarks, nystrom, pivoted_cholesky
from svmgpu.lowrank._linear import linear_features
from svmgpu.lowrank._operator import CurvatureGram, FeatureOperator, as_operator, feature_plan
from svmgpu.lowrank._protocol import (
    AdditiveRows,
    FeatureRows,
    RowSource,
    combine,
    combine_rules,
)
from svmgpu.lowrank._reduced import REDUCED_SETS, reduced_kernel_features, select_reduced_set

__all__ = ["REDUCED_SETS", "AdditiveRows", "CurvatureGram", "FeatureOperator", "FeatureRows",
           "LowRankFactor", "RowSource", "as_operator", "combine", "combine_rules", "feature_plan",
           "independent_landmarks", "linear_features", "nystrom", "pivoted_cholesky",
           "reduced_kernel_features", "select_reduced_set"]
