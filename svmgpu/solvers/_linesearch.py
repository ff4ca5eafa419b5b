"""The line searches of the Newton solvers: backtracking Armijo, and the exact minimizer along
the step of a convex piecewise-quadratic objective."""

from __future__ import annotations

import math


def armijo(phi, phi0: float, slope: float, *, phi1: float | None = None, sigma: float = 1e-4,
           factor: float = 0.5, max_backtracks: int = 40, max_extensions: int = 0,
           fallback_below: float | None = None):
    """The first step ``η = factor^k`` (k = 0, 1, …, max_backtracks) with
    ``φ(η) <= φ0 + σ η slope`` (Armijo's sufficient decrease along a descent direction).

    With ``fallback_below``, a step that lowers φ at all (``φ(η) <= φ0``) stands in where
    none decreases enough: the longest such step is taken once a step of at most
    ``fallback_below`` lowers φ without the sufficient decrease, or when the reductions run
    out (the exact path's steps, whose rounding near the solution or float32 products can
    keep the sufficient decrease out of reach).

    When the full step passes and ``max_extensions > 0``, the step is then lengthened,
    ``η = factor^−j`` (j = 1, …, max_extensions), while φ keeps decreasing and the test holds:
    for a Hessian that overestimates the curvature (a non-convex loss whose negative curvature
    was clipped), where every full step is accepted and too short.

    Parameters
    ----------
    phi : callable ``η -> float``
        The objective along the direction (a Python float: the caller decides how it is read).
    phi0, slope : float
        ``φ(0)`` and the directional derivative ``φ'(0) < 0``.
    phi1 : float, optional
        ``φ(1)`` when the caller already has it (read together with other scalars).
    sigma, factor, max_backtracks
        Armijo constant, step reduction and maximum number of reductions.
    max_extensions : int
        Maximum number of lengthenings of an accepted full step.
    fallback_below : float, optional
        The step from which the longest plain decrease is taken (None: never).

    Returns
    -------
    eta, phi_eta : float
        The step (the last one tried when none passed) and the objective there.
    n_backtracks : int
        Reductions made.
    accepted : bool
        Whether the test passed (or, with ``fallback_below``, a plain decrease was taken).
    """
    eta = 1.0
    val = phi(1.0) if phi1 is None else float(phi1)
    fallback = None  # (the longest step that lowered φ, with fallback_below)
    for k in range(max_backtracks + 1):
        if val <= phi0 + sigma * eta * slope:
            for _ in range(max_extensions if k == 0 else 0):
                longer = eta / factor
                v = phi(longer)
                if not (v < val and v <= phi0 + sigma * longer * slope):
                    break
                eta, val = longer, v
            return eta, val, k, True
        if fallback_below is not None and val <= phi0:
            fallback = fallback or (eta, val)
            if eta <= fallback_below:
                return (*fallback, k, True)
        if k == max_backtracks:
            break
        eta *= factor
        val = phi(eta)
    if fallback is not None:
        return (*fallback, max_backtracks, True)
    return eta, val, max_backtracks, False


def convex_minimum(along, phi0: float, slope: float, *, first, sigma: float = 1e-4,
                   rtol: float = 1e-3, max_iter: int = 20, min_step: float = 2.0 ** -10):
    """The minimizer of a convex, piecewise-quadratic φ along a descent direction: safeguarded
    Newton iterations on φ' (an exact line search, as the finite Newton methods of linear SVMs
    take: Keerthi and DeCoste 2005, JMLR 6, who sort φ's breakpoints instead; Shea and Schmidt
    2024, arXiv:2401.06809, on Newton's method with exact line searches).

    φ' is continuous, piecewise linear and increasing, so Newton's iteration lands on its
    root once it stands on the root's piece; the bracket ``lo < η < hi`` (φ'(lo) < 0 <
    φ'(hi)) keeps an iterate that would leave it at the bracket's middle (or doubles η while
    no ``hi`` is known). The iteration ends once ``|φ'(η)| <= rtol · |φ'(0)|``; the full step
    ``η = 1`` is returned as exactly 1 when it passes that test (a Newton step on the right
    pieces). Backtracking by halves takes η = ½ where the minimizer lies at 0.6 or 0.9 (the
    semi-smooth Newton steps of the ε-insensitive loss, rows moving across the tube), and the
    next Newton step starts that much farther from the solution.

    Parameters
    ----------
    along : callable ``η -> (φ(η), φ'(η), φ''(η))``
        Python floats; φ'' > 0 (the regularizer's curvature ``dᵀBd`` at least).
    phi0, slope : float
        ``φ(0)`` and ``φ'(0) < 0``.
    first : tuple of float
        ``along(1.0)``, read by the caller with its other scalars.
    sigma, rtol, max_iter
        Armijo's constant (the step found must pass its test, or None is returned), the
        tolerance on φ' and the most evaluations of ``along`` after the first.
    min_step : float
        A shorter minimizer is not taken (None is returned): φ' there is the rounding of the
        margins' products (float32 features near the solution, where φ'(0) from the gradient
        and φ' from the step's margins disagree in sign), not φ's.

    Returns
    -------
    (eta, phi_eta, n_evaluations, True), or None where the minimizer found is shorter than
    ``min_step`` or does not decrease φ enough (rounding near the solution): the caller
    backtracks (:func:`armijo`).
    """
    lo, hi = 0.0, math.inf
    eta, (val, g, h) = 1.0, first
    best, n = (eta, val), 0
    while abs(g) > rtol * abs(slope) and n < max_iter:
        if g < 0:
            lo = eta
        else:
            hi = eta
        nxt = eta - g / h if h > 0 else math.inf
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * eta
        eta = nxt
        val, g, h = along(eta)
        n += 1
        if val < best[1]:
            best = (eta, val)
    eta, val = best
    if eta >= min_step and val <= phi0 + sigma * eta * slope:
        return eta, val, n, True
    return None
