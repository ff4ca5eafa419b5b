"""The backtracking Armijo line search of the semi-smooth Newton solver."""

from __future__ import annotations


def armijo(phi, phi0: float, slope: float, *, phi1: float | None = None, sigma: float = 1e-4,
           factor: float = 0.5, max_backtracks: int = 40):
    """The first step ``η = factor^k`` (k = 0, 1, …, max_backtracks) with
    ``φ(η) <= φ0 + σ η slope`` (Armijo's sufficient decrease along a descent direction).

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

    Returns
    -------
    eta, phi_eta : float
        The step (the last one tried when none passed) and the objective there.
    n_backtracks : int
        Reductions made.
    accepted : bool
        Whether the test passed.
    """
    eta = 1.0
    val = phi(1.0) if phi1 is None else float(phi1)
    for k in range(max_backtracks + 1):
        if val <= phi0 + sigma * eta * slope:
            return eta, val, k, True
        if k == max_backtracks:
            break
        eta *= factor
        val = phi(eta)
    return eta, val, max_backtracks, False
