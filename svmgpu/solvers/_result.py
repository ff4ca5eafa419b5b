"""The common return type of every solver."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SolverResult:
    """What a solver returns.

    Attributes
    ----------
    coef : array
        The solution (its meaning is documented by each solver, e.g. β in feature
        coordinates, α over the training points, or z over a reduced set).
    n_iter : int
        Iterations (or stages) performed.
    converged : bool
        Whether the stopping criterion was met before ``max_iter``.
    objective_history : list of float
        Objective value after each iteration (index 0: the starting point, when computed).
    timings : dict of str to float
        Wall-clock seconds per phase (e.g. ``{"factor": 0.8, "iterations": 1.2}``).
    info : dict
        Solver-specific extras (active-set sizes, intercept, selected indices, ...).
    """

    coef: object
    n_iter: int
    converged: bool
    objective_history: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
