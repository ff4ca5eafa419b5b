"""The backtracking Armijo line search of the semi-smooth Newton solver."""

from __future__ import annotations


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
