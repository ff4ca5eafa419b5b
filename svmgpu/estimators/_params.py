"""The estimators' parameters, declared once as scikit-learn ``_parameter_constraints``.

Each estimator's ``_parameter_constraints`` is built from the entries below (one entry per
parameter that several estimators share) plus its own. scikit-learn checks them at the start of
``fit`` (:meth:`~sklearn.base.BaseEstimator._validate_params`): a bad value raises
``InvalidParameterError`` (a ``ValueError``) that names the parameter, the accepted values and
what was given. The command line builds its ``train`` flags from the same declarations
(:func:`svmgpu.cli`), so a value is checked in one place.

:func:`ignored_parameters` names the parameters that a configuration would ignore (``gamma``
with the linear kernel, ...): the estimators warn about those instead of taking them silently.
"""

from __future__ import annotations

from numbers import Integral, Real

# NumPy here names host values of the constraints (infinity, the float dtypes a user may
# pass as ``dtype``); no array goes through it.
import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions

from svmgpu.backend import Device
from svmgpu.kernels import KERNELS, Kernel

#: A positive finite real (C, gamma, ...).
POSITIVE = Interval(Real, 0, np.inf, closed="neither")
#: A finite real >= 0 (tolerances).
NON_NEGATIVE = Interval(Real, 0, np.inf, closed="left")
#: A finite real.
FINITE = Interval(Real, -np.inf, np.inf, closed="neither")
#: An integer >= 1.
POSITIVE_INT = Interval(Integral, 1, None, closed="left")

#: The parameters several estimators share, by name.
COMMON = {
    "C": [POSITIVE],
    "kernel": [StrOptions(set(KERNELS)), Kernel],
    "gamma": [StrOptions({"scale", "auto"}), POSITIVE],
    "degree": [POSITIVE_INT],
    "coef0": [FINITE],
    "rank": [StrOptions({"auto"}), POSITIVE_INT, None],
    "lowrank": [StrOptions({"nystrom", "pivoted_cholesky"})],
    "lowrank_tol": [NON_NEGATIVE],
    "tol": [NON_NEGATIVE],
    "max_iter": [POSITIVE_INT],
    "multi_class": [StrOptions({"ovr", "ovo"})],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "probability": ["boolean"],
    "fit_intercept": ["boolean"],
    "device": [str, Device, None],
    "dtype": [StrOptions({"float32", "float64"}), Options(type, {np.float32, np.float64}), None],
    "memory_budget": [POSITIVE, str, None],  # bytes, or a string such as "2GB"
    "random_state": ["random_state", np.random.Generator],
    "verbose": ["verbose"],
}


def constraints(*names, **own):
    """The ``_parameter_constraints`` of an estimator: the shared entries ``names`` plus its
    own ``own`` (name: list of constraints)."""
    unknown = [n for n in names if n not in COMMON]
    if unknown:  # pragma: no cover - a programming error in an estimator's declaration
        raise KeyError(f"no shared constraint for {unknown}")
    return {**{n: COMMON[n] for n in names}, **own}


#: The kernel parameters each named kernel uses (the others are ignored).
_KERNEL_USES = {"linear": set(), "rbf": {"gamma"}, "laplacian": {"gamma"},
                "poly": {"gamma", "degree", "coef0"}}


def ignored_parameters(params, defaults):
    """The parameters in ``params`` that differ from their ``defaults`` but that this
    configuration does not use, each with the reason: a kernel's parameters another kernel
    ignores (a Kernel object carries its own), the pivoted Cholesky's ``lowrank_tol`` with
    Nyström landmarks or with no low-rank factor, SVC / SVR's ``rank`` on a path without
    landmarks and ``region_*`` off the partitioned path. Returns ``{name: reason}``."""
    kernel = params.get("kernel")
    reasons = {}
    if isinstance(kernel, Kernel):
        for k in ("gamma", "degree", "coef0"):
            reasons[k] = f"the Kernel object {kernel!r} carries its own parameters"
    elif kernel in _KERNEL_USES:
        for k in {"gamma", "degree", "coef0"} - _KERNEL_USES[kernel]:
            reasons[k] = f"kernel={kernel!r} does not use it"
    solver, rank = params.get("solver"), params.get("rank", "auto")
    if solver in ("exact", "partition"):  # (SVC / SVR's paths)
        reasons["rank"] = f"solver={solver!r} uses no landmarks"
    if solver in ("exact", "lowrank") or (solver == "auto" and rank != "auto"):
        for k in ("region_rows", "region_overlap"):
            reasons[k] = ("only the partitioned path uses it (solver='partition', or 'auto' "
                          "with rank='auto')")
    if rank is None:
        reasons["lowrank_tol"] = "rank=None uses the full kernel (no low-rank factor)"
    elif params.get("lowrank") != "pivoted_cholesky":
        reasons["lowrank_tol"] = "only lowrank='pivoted_cholesky' uses it"
    return {k: why for k, why in sorted(reasons.items())
            if k in params and k in defaults and not _same(params[k], defaults[k])}


def _same(a, b) -> bool:
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # arrays and other values without a plain ==
        return False
