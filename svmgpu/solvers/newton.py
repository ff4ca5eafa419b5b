"""The library's one semi-smooth Newton method, :func:`semismooth_newton`, and the row side it
reads (:class:`NewtonRows`).

The method minimizes ``F(z) = ½ zᵀBz + C Σᵢ sᵢ ψ(rᵢ)`` over the features ``P`` of any row source
(:class:`~svmgpu.lowrank.RowSource`: in memory, recomputed per block, or on the partitions of a
Dask array) with the generalized Newton equation of Zhou 2013 (20). Its knobs (tolerances,
stopping rules, presolve, continuation, line search) are one :class:`NewtonOptions`. UniSVM's
low-rank Newton (:func:`svmgpu.solvers.unisvm.unisvm_newton`) is this solver with ``B = I``, any
piecewise-quadratic loss of the registry and regression residuals; Zhou 2013's reduced SVMs
(:func:`svmgpu.solvers.reduced.newton_reduced`) set it up with the paper's losses, λ and the
RKHS regularizer.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass

from svmgpu._log import fields, get_logger, honours_verbose, progress
from svmgpu.backend import (
    LinAlgError,
    check_positive,
    fetch_scalars,
    is_numpy,
    matmul,
    nonzero_indices,
    smw_factor_solve,
    spd_factor_solve,
    vecdot,
    vector_norm,
)
from svmgpu.lowrank import CurvatureGram, as_operator, combine
from svmgpu.solvers._linesearch import armijo as armijo_search
from svmgpu.solvers._linesearch import convex_minimum
from svmgpu.solvers._result import SolverResult

_log = get_logger("newton")

#: Relative tolerance of a presolve, per stopping rule: a loose start is all it must give.
_PRESOLVE_TOL = {"gradient": 1e-3, "kkt": 1e-2}

#: Iterations between recomputations of the margins ``P z`` (against drift of ``o + η P d``).
_REFRESH_EVERY = 20

#: The exact line search (``NewtonOptions.line_search``) needs F' along the step computed
#: from the step's margins ``P d`` to agree with ``∇F · d`` to this fraction: they are equal
#: but for the rounding of the products with P. On friedman1, friedman2 and
#: ``make_classification`` at 20k rows (float32 features) they agreed to 6e-5; float32
#: features of a wide kernel (γ = 0.01, 400 landmarks), ill-conditioned, differed by 30–100 %,
#: and their minimizers along the step were the rounding's (41 Newton steps against 21
#: backtracking). There the step backtracks.
_SLOPE_AGREEMENT = 1e-2

#: Rows of a distributed fit's presolve at most: they are gathered to the client (10⁶ rows at
#: r = 300 are 1.2 GB of float32 features), where the presolve runs in memory.
DISTRIBUTED_PRESOLVE_MAX = 1_000_000

#: A stage of a convex loss ends (the last one: ``stop="rounding"``, converged where the
#: relative gradient is within ``√tol``, as after a failed line search) after this many
#: accepted steps in a row shorter than ``_FLAT_STEP`` that moved F by less than
#: ``_FLAT_DECREASE`` (relative): steps along directions that the rounding of the products
#: with P has made useless. (A non-convex loss's clipped curvature can take such steps before
#: it converges: the smooth ramp of UniSVM's tests, at tol = 1e-10.) A fuzz case
#: (SVR, 12,000 rows of 3 features, ``gamma=0.003``: kernel values 0.99 between random rows,
#: float32 features; targets of spread 100, C = 0.05, ε = 0.01) took 1,000 steps of 1e-11 to
#: 1e-8 at each of its two ranks, F level to 1e-10 and the relative gradient at 0.014–0.016,
#: 5.6 s and a ConvergenceWarning; scikit-learn 3.0 s, the same R² (0.0547).
_FLAT_STEPS = 5
_FLAT_STEP = 2.0 ** -10
_FLAT_DECREASE = 1e-9

#: ``C · m`` above which the automatic C continuation starts (at ``C · m = 1e8``, ×10 a stage).
_C_CONTINUATION_FROM = 1e8
#: At most this many continuation stages before C (C / 1e16 first).
_C_CONTINUATION_MAX_STAGES = 16


def c_schedule(C, m, continuation="auto"):
    """The loss weights of the C continuation, ending at ``C``: ``[C / 10^K, …, C / 10, C]``
    with ``K = ⌈log10(C m / 1e8)⌉`` when ``C m > 1e8`` (else ``[C]``).

    With a huge C (the hard-margin limit of separable data) the semi-smooth Newton method from
    z = 0 wanders: its active set flips and the Armijo search takes tiny steps (separable
    data, C = 1e12, r = 100: no convergence in 1000 steps). Following C up from where the
    regularizer still matters, each stage starts near its solution: 71 steps over 9 stages
    there, and 65 instead of 252 at C = 1e6. The library's paper set-ups (λ ≥ 1e-8, i.e.
    ``C m <= 1e8``) are not affected.
    """
    if continuation not in ("auto", False, None):
        raise ValueError(f"C_continuation must be 'auto' or False, got {continuation!r}")
    if continuation != "auto" or C * m <= _C_CONTINUATION_FROM:
        return [C]
    K = min(math.ceil(math.log10(C * m / _C_CONTINUATION_FROM)), _C_CONTINUATION_MAX_STAGES)
    return [C / 10.0 ** k for k in range(K, 0, -1)] + [C]


def presolve_rows(m, r, *, nested=False):
    """Rows of an automatic presolve: ``max(m/50, k·r, 2000)`` when that is at most m/8, else
    None (the problem is too small for a presolve to pay), with k = 40, or k = 7 for the
    presolve of a presolve.

    The subset must be large next to the rank, or its solution predicts the full active set
    poorly: on Covtype (m = 381,012, r = 1000) 7r rows left 16 full Newton steps, 40r rows 8.
    A presolve only needs a start for a loose tolerance, so its own presolve may be smaller: on
    1M Checkerboard (r = 300) 20,000 rows then 2,100 take 3 + 3 steps, 20,000 rows alone
    11 + 3; and m/50 rows beat m/8 there (the timings: bench/README.md)."""
    n = max(m // 50, (7 if nested else 40) * r, 2000)
    return n if 8 * n <= m else None


def _presolve_size(presolve, m, r, *, xp, nested):
    """Rows of the presolve asked for by ``presolve`` (None: no presolve)."""
    if presolve is None or presolve is False:
        return None
    if presolve == "auto" or presolve is True:
        # "auto": on NumPy only. On a GPU a full Hessian is cheap and each extra iteration
        # costs more than the presolve saves (bench/bench_gpu.py; bench/README.md).
        return presolve_rows(m, r, nested=nested) if (presolve is True or is_numpy(xp)) else None
    if isinstance(presolve, bool) or not isinstance(presolve, int) or presolve < 1:
        raise ValueError(f"presolve must be 'auto', True, False, None or a positive int, "
                         f"got {presolve!r}")
    return presolve if presolve < m else None


@dataclass(frozen=True)
class NewtonOptions:
    """The knobs of :func:`semismooth_newton` (the problem itself, ``P, y, losses, C, B``, the
    task and the weights, are its arguments).

    Attributes
    ----------
    tol : float
        Relative tolerance of the stopping rule ``stop`` in the last stage.
    stop : {"gradient", "kkt"}
        ``‖∇F‖ <= tol · ‖∇F(0)‖`` (Zhou 2013), or ``‖∇F‖ <= tol · max(‖Bz‖, ‖C Pᵀ(s σ ψ')‖)``
        (scale-free: the two parts of a stationary gradient balance). For piecewise-quadratic
        losses also: a full step that leaves every row on its piece of ψ (the active sets)
        lands on the exact stationary point (finite termination, Zhou 2013 section 4.2.2).
    stage_tol : float
        Relative tolerance that ends an intermediate continuation stage.
    max_iter : int
        Newton steps over all stages.
    smw : {"auto", "always", "never"}
        SMW solve (28) for ``B = I``: when fewer rows are active than r ("auto"), at every step
        ("always", for testing) or never.
    hessian_update : {"auto", "incremental", "recompute"}
        How ``PᵀΛP`` follows the active set for piecewise-quadratic losses ((23)/(25) when fewer
        rows change than remain active, always incrementally, or rebuilt every step).
    tau : float
        Rows with ``ψ'' < tau`` leave the Hessian and rows with ``|ψ'| < tau`` (and ψ'' < tau)
        the gradient (Zhou 2013's τ for the logistic loss; 0: exact).
    presolve : "auto", bool, None or int
        Solve first on an evenly strided subset of rows (:func:`presolve_rows` of them, or the
        given number) with C scaled by ``Σs / Σs_subset``, recursively, and start there (in the
        last stage): from z = 0 every row is active, from the presolve only those near the
        margin. "auto": on NumPy only (see :func:`_presolve_size`); True: on every namespace.
        With a piecewise-quadratic loss the full problem takes one Newton step at least from
        there (a full step on the right pieces lands on its minimizer): the presolve's point
        solves another problem, and the gradient test, scaled by the subset's ``‖∇F(0)‖``,
        accepted it as it was on Covtype's smaller one-vs-one pairs (0.07 points of accuracy
        lost).
    C_continuation : {"auto", False}
        "auto": for ``C m > 1e8``, first solve at C / 10^K, …, C / 10 with the first loss
        (:func:`c_schedule`), each stage starting from the last.
    line_search : {"exact", "backtrack"}
        "exact": for a convex piecewise-quadratic ψ (the Huber hinge and ε-insensitive losses,
        the squared hinge, least squares, Huber), the step is F's minimizer along the Newton
        direction (:func:`~svmgpu.solvers._linesearch.convex_minimum`: Newton's iteration on
        F', each trial one pass over the rows and one read of three scalars), where halving
        from the full step took ½ when the minimizer lay at 0.6–0.9 (friedman1's SVR at 20k
        rows: 69 Newton steps over its stages by halving, 39 exact). Other losses, and a
        minimizer that fails Armijo's test, backtrack.
    armijo, backtrack, max_backtracks : float, float, int
        Armijo constant σ, step reduction and maximum reductions of the line search.
    max_extensions : int
        For losses with a concave piece (the smoothed ramps, the exponential loss): lengthen an
        accepted full step up to this many times (by ``1/backtrack`` each) while F keeps
        decreasing (:func:`~svmgpu.solvers._linesearch.armijo`). The clipped curvature
        overestimates F's where rows sit on ψ's concave part, so the full steps fall short
        there; each trial reads one scalar (the margins are linear in the step).
    curvature_levels : float, optional
        For losses whose ψ'' is not piecewise constant (the smooth hinge, the smoothed ramps, the
        exponential loss, the smooth ε-insensitive and absolute losses): each row's curvature
        is rounded to the nearest power of this ratio, and set to 0 below
        ``curvature_floor · sup ψ''`` (``sup ψ'' = 2 A_min``), so that the Hessian ``PᵀΛP``
        follows the rows whose level changed ((23)/(25)) instead of being rebuilt from every
        row at every step; the gradient and the line search stay exact, so the method still
        converges to the same stationary point, linearly at a rate near
        ``|1 − ratio^(±1/2)|`` per step (:func:`level_curvature`). None: the exact ψ''
        (rebuilt every step).
    curvature_floor : float
        See ``curvature_levels``.
    min_iter : int
        For piecewise-quadratic losses: Newton steps taken before the gradient test may end the
        iteration (a full step on the right pieces lands on the minimizer). A start ``z0`` near
        the solution of a neighbouring problem (a smaller set of landmarks, its coefficients
        padded with zeros) can pass the test as it is, since the test is relative to
        ``‖∇F(0)‖``; a presolve's start counts as 1.
    decrease_tol : float, optional
        For non-convex losses: also stop (converged, ``stop="decrease"``) once a step of the
        last stage lowers F by at most ``decrease_tol · |F|`` (DCA's usual rule, UniSVM
        Algorithm 1's "while not convergence"). A truncated loss has a kink where it meets its
        ceiling (ψ' jumps from 2√a to 0 for the truncated squared hinge), so the gradient test
        cannot hold while rows sit near it, and the active-set test waits until no row crosses
        it: on UniSVM's Covtype set-up 73 steps on all rows, the last 58 of them lowering F by
        3e-4 or less each (down to 1e-5) and moving the test accuracy by 0.03 points
        (bench/README.md). None: off (convex losses: the gradient and active-set tests are
        exact).
    balance_tol : float, optional
        With ``stop="gradient"``: the last stage's gradient test also asks that the gradient's
        two parts balance, ``‖∇F‖ <= balance_tol · max(‖Bz‖, ‖C Pᵀ(s σ ψ')‖)`` (``stop="kkt"``'s
        measure, loosely). ``‖∇F(0)‖`` can be far larger than any gradient near the optimum:
        SVR's ε-insensitive loss at z = 0 counts every row outside the tube, and where ε is as
        wide as the targets' spread few rows stay outside at the optimum (mixed fuzz seed
        6161's trial 44: the test passed at twice the minimum's F, the measure 1.0). None: off.
    decrement_tol : float, optional
        For piecewise-quadratic losses: the last stage's gradient test also asks that the
        Newton decrement be small, ``½ ∇Fᵀ H⁻¹ ∇F <= decrement_tol · |F|`` (the decrease the
        step's quadratic model predicts; Boyd and Vandenberghe 2004, 9.5.1), else the step it
        was formed for is taken. The gradient test is relative to ``‖∇F(0)‖``, which a kernel
        of huge values makes far larger than the gradient along the flat directions of the
        penalty ``B = K_ZZ``: mixed fuzz seed 9191's trial 2 ('poly' at ``gamma=3``, kernel
        values to 4·10⁵, balanced class weights) passed it where the model predicted a
        decrease 5 and 583 times F itself, 98.0 % against the exact SVM's 99.6 %; at the stops
        of ijcnn1's, ``make_classification``'s and four hard-margin fuzz fits (mixed seed
        1010's trials 15, 36, 40 and 44) the ratio was 1.2·10⁻³ or less (one pair of 1010's
        trial 5: 0.96). Each stop pays a Hessian update and its factor. None: off.
    crawl_steps : int, optional
        For convex losses: end the iteration, unconverged and ``info["stalled"]``
        (``stop="crawl"``), after this many accepted steps in a row of at most
        ``crawl_step`` (steps that leave F level end a stage first, as ``stop="rounding"``):
        the Newton direction then describes F over a sliver of the step
        only (every row on a linear piece, the intercept's curvature its small penalty), and a
        caller solves again through a continuation from wider pieces (:class:`svmgpu.SVR`).
        None: off.

    Raises
    ------
    ValueError
        For an unknown ``stop``.
    """

    tol: float = 1e-6
    stop: str = "gradient"
    stage_tol: float = 1e-4
    max_iter: int = 500
    smw: str = "auto"
    hessian_update: str = "auto"
    tau: float = 0.0
    presolve: object = "auto"
    C_continuation: object = "auto"
    line_search: str = "exact"
    armijo: float = 1e-4
    backtrack: float = 0.5
    max_backtracks: int = 50
    max_extensions: int = 0
    curvature_levels: float | None = None
    curvature_floor: float = 1e-4
    decrease_tol: float | None = None
    min_iter: int = 0
    crawl_steps: int | None = None
    crawl_step: float = _FLAT_STEP
    balance_tol: float | None = None
    decrement_tol: float | None = None

    def __post_init__(self):
        if self.stop not in _PRESOLVE_TOL:
            raise ValueError(f"stop must be 'gradient' or 'kkt', got {self.stop!r}")
        for name in ("balance_tol", "decrement_tol"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name))
        if self.line_search not in ("exact", "backtrack"):
            raise ValueError(f"line_search must be 'exact' or 'backtrack', "
                             f"got {self.line_search!r}")
        if isinstance(self.min_iter, bool) or not isinstance(self.min_iter, int) or \
                self.min_iter < 0:
            raise ValueError(f"min_iter must be a non-negative int, got {self.min_iter!r}")
        if self.crawl_steps is not None and (isinstance(self.crawl_steps, bool) or not isinstance(
                self.crawl_steps, int) or self.crawl_steps < 1):
            raise ValueError(f"crawl_steps must be None or a positive int, got "
                             f"{self.crawl_steps!r}")
        if not 0.0 < self.crawl_step <= 1.0:  # (also NaN)
            raise ValueError(f"crawl_step must be a step length in (0, 1], got "
                             f"{self.crawl_step!r}")
        if self.curvature_levels is not None and not self.curvature_levels > 1.0:
            raise ValueError(f"curvature_levels must be None or a ratio > 1, "
                             f"got {self.curvature_levels!r}")

    def for_presolve(self) -> NewtonOptions:
        """The options of a presolve: the loose tolerance of its stopping rule, and a presolve
        of its own only when this one's is automatic."""
        loose = _PRESOLVE_TOL[self.stop]
        return dataclasses.replace(
            self, tol=max(self.tol, loose),
            presolve=self.presolve if self.presolve in ("auto", True) else None,
            decrease_tol=None if self.decrease_tol is None else max(self.decrease_tol, loose),
            balance_tol=None, decrement_tol=None)


@honours_verbose
def semismooth_newton(P, y, losses, *, C, B=None, task="classification", sample_weight=None,
                      z0=None, margins0=None, options=None, verbose=0, label="newton", xp,
                      **knobs):
    """The semi-smooth Newton method of the library: UniSVM's low-rank problem and Zhou 2013's
    reduced SVM (17) are both

        min_z  F(z) = ½ zᵀBz + C Σᵢ sᵢ ψ(rᵢ),   rᵢ = 1 − yᵢ Pᵢz (classification), yᵢ − Pᵢz (regression),

    with ``B = I`` (UniSVM in feature coordinates, GSVM) or an SPD ``B`` (``K_JJ`` plus the
    ridge, the RKHS model M1). Each step solves the generalized Newton equation (Zhou 2013 (20))

        (B + C Pᵀ Λ P) d = −∇F(z),   Λ = diag(sᵢ ψ''(rᵢ)),   ∇F = Bz − C Pᵀ(s ∘ σ ∘ ψ'(r))

    (σ = y or 1), by Cholesky of the r × r Hessian, whose ``PᵀΛP`` follows the rows entering and
    leaving the active set ((23)/(25), :class:`~svmgpu.lowrank.CurvatureGram`), or, for
    ``B = I`` and fewer active rows than r, by the SMW identity (28). The step length comes from
    a backtracking Armijo search along d (margins are linear in the step).

    Three device→host reads per iteration (row counts; the stopping test, before the direction
    is formed: a point that ends the iteration forms none; the slope and the full step's
    objective); one more per backtrack.

    Parameters
    ----------
    P : RowSource or array of shape (m, r)
        The features (:class:`~svmgpu.lowrank.FeatureOperator`, an array, or a distributed
        source whose rows stay on their partitions).
    y : array of shape (m,)
        Labels ±1 (classification) or targets.
    losses : sequence of svmgpu.losses.Loss
        ψ of each continuation stage (one for no continuation): a stage ends when the
        gradient test with ``stage_tol`` holds (the last with ``tol``).
    C : float
        The loss weight (of the last stage, see ``C_continuation``).
    B : array of shape (r, r), optional
        The regularizer, SPD, float64 (None: the identity).
    task : {"classification", "regression"}
    sample_weight : array of shape (m,), optional
    z0 : array of shape (r,), optional
        Start (default 0, or the presolve's solution).
    margins0 : array of shape (m,), optional
        ``P z0``, where the caller has it (a grown rank's start, whose new coefficients are 0,
        has the last rank's margins): the pass over P that computes it is saved. Needs ``z0``;
        rows in memory (not a distributed source).
    options : NewtonOptions, optional
        The method's knobs (default: ``NewtonOptions()``).
    verbose : int
        1: a summary line (and a progress bar with tqdm), 2: a line per Newton step, through
        the ``svmgpu.newton`` logger (fields: :mod:`svmgpu._log`).
    label : str
        The run's name in the log lines.
    xp : namespace
    **knobs
        Fields of :class:`NewtonOptions` (``tol``, ``stop``, ``max_iter``, ``presolve``, ...),
        replacing those of ``options``.

    Returns
    -------
    SolverResult
        ``coef``: z (float64, shape (r,)); ``objective_history``: F at each iterate (index 0: the
        start). ``info``: ``stop`` ("active_set", "gradient", "decrease", "max_iter",
        "line_search", "rounding": :data:`_FLAT_STEPS`),
        ``active_set_sizes`` / ``plus_set_sizes`` (rows with ψ'' > 0 / with ψ' ≠ 0 and ψ'' = 0,
        per iterate), ``step_sizes``, ``grad_norms``, ``grad_scale`` (``‖∇F(0)‖`` for
        ``stop="gradient"``), ``kkt`` (the last relative gradient), ``stages`` (the loss
        index, C and Newton steps of each stage), ``smw_steps``, ``hessian_incremental`` /
        ``hessian_recomputed``,
        ``n_backtracks``, ``n_margin_violators`` (classification: ``#{i : yᵢ f(xᵢ) <= 1}``),
        ``margins`` (``P z``, float64), ``presolve`` (its rows, iterations, seconds) and
        ``n_presolve_iter`` (Newton steps of all presolves), ``C_stages`` (the C of each stage).
    """
    opts = NewtonOptions(**knobs) if options is None else dataclasses.replace(options, **knobs)
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    t_start = time.perf_counter()
    # the rows of the problem: here, or one NewtonRows per partition of a distributed source
    rows = as_operator(P).rows(NewtonRows, y, sample_weight, task=task, tau=opts.tau)
    if margins0 is not None:
        if z0 is None:
            raise ValueError("margins0 (P z0) needs the start z0")
        if rows.distributed:
            raise ValueError("margins0 needs the rows in memory; a distributed source "
                             "computes P z0 on its partitions: pass z0 alone")
        if tuple(margins0.shape) != (rows.shape[0],):
            raise ValueError(f"margins0 must have shape ({rows.shape[0]},), got "
                             f"{tuple(margins0.shape)}")
    return _newton(rows, losses, C=C, B=B, z0=z0, opts=opts, label=label, xp=xp,
                   t_start=t_start, margins0=margins0)


def _presolve(rows, losses, *, C, B, opts, label, xp, nested):
    """The solution on an evenly strided subset of the rows (a presolve, recursively) and its
    record, ``(result, info)``; None when ``opts.presolve`` asks for none at this size."""
    m, r = rows.shape
    n_pre = _presolve_size(opts.presolve, m, r, xp=xp, nested=nested)
    if n_pre is not None and rows.distributed:  # gathered to the client: bounded
        n_pre = min(n_pre, DISTRIBUTED_PRESOLVE_MAX)
    if n_pre is None:
        return None
    t0 = time.perf_counter()
    sub, scale = rows.strided(n_pre)
    pre = _newton(sub, losses, C=C * scale, B=B, z0=None, opts=opts.for_presolve(),
                  label=f"{label} presolve", xp=xp, t_start=time.perf_counter(), nested=True)
    return pre, {"rows": sub.shape[0], "n_iter": pre.n_iter, "converged": pre.converged,
                 "seconds": time.perf_counter() - t0, "presolve": pre.info["presolve"]}


def level_curvature(k, ratio, floor, *, xp):
    """Curvatures ``k >= 0`` rounded to the nearest power of ``ratio`` (in log scale), and 0
    below ``floor``: a piecewise-constant stand-in for a smooth ψ''.

    Rounded, a row's curvature changes only when it moves by a factor ``√ratio``, so the
    incremental Hessian of :class:`~svmgpu.lowrank.CurvatureGram` touches the few rows whose
    level changed. The Hessian ``B + C PᵀΛ̃P`` stays SPD and within a factor ``√ratio`` of the
    exact one row by row, so the Newton direction is a descent direction and, with the exact
    gradient and line search, the iteration converges linearly with a contraction near
    ``√ratio − 1`` (a quasi-Newton method with a bounded Hessian error; Dembo, Eisenstat and
    Steihaug, "Inexact Newton methods", SIAM J. Numer. Anal. 1982)."""
    keep = k >= floor
    one = xp.ones_like(k)
    step = math.log(ratio)
    q = xp.exp(xp.round(xp.log(xp.where(keep, k, one)) / step) * step)
    return xp.where(keep, q, xp.zeros_like(k))


def _clipped(psi):
    """Whether ψ has a concave piece whose negative curvature Newton clips to 0 (the smoothed
    ramps, the exponential loss); not the truncated losses, flat past a kink, whose clipped
    curvature is exact off the kink."""
    return not getattr(psi, "convex", True) and not getattr(psi, "gradient_jumps", False)


def _direction(grad, c, *, active, H, allow_jitter, checked, iteration, xp):
    """The Newton direction ``d = −(B + c·PᵀΛP)⁻¹ ∇F``: by the SMW identity (28) over the active
    rows ``active = (U, κ)`` (``B = I``), else by Cholesky of ``H``; ``(d, ok)`` as
    :func:`~svmgpu.backend.spd_factor_solve` (``checked``)."""
    try:
        if active is not None:
            U, kap = active
            d, ok = smw_factor_solve(U, kap, 1.0 / c, grad / c, xp=xp, checked=checked)
        else:
            d, ok = spd_factor_solve(H, grad, xp=xp, allow_jitter=allow_jitter, checked=checked)
    except LinAlgError as exc:
        raise FloatingPointError(
            f"the Newton Hessian B + C·PᵀΛP with C={c:g} could not be factored "
            f"at iteration {iteration}: at this C the regularizer B is below the "
            f"rounding of C·PᵀΛP; lower C, or center and scale the features "
            f"(e.g. StandardScaler)") from exc
    return -d, ok


def _newton(rows, losses, *, C, B, z0, opts, label, xp, t_start, nested=False, margins0=None):
    """:func:`semismooth_newton` on its row object ``rows`` (a :class:`NewtonRows` or its Dask
    form; a presolve's rows are in memory)."""
    m, r = rows.shape
    f64 = xp.float64
    dev = rows.device.native_device
    C = float(C)
    piecewise = all(getattr(psi, "piecewise_quadratic", False) for psi in losses)
    leveled = not piecewise and opts.curvature_levels is not None
    Cs = c_schedule(C, m, opts.C_continuation)
    stages = [(0, c) for c in Cs[:-1]] + [(k, C) for k in range(len(losses))]  # (loss, C)
    info = {"presolve": None, "n_presolve_iter": 0}
    tm = {"rhs": 0.0, "hessian": 0.0, "solve": 0.0, "matvec": 0.0, "line_search": 0.0}

    # ---- warm start from a strided subset of the rows (recursively)
    stage, gscale = 0, None
    presolved = None if z0 is not None else _presolve(rows, losses, C=C, B=B, opts=opts,
                                                       label=label, xp=xp, nested=nested)
    if presolved is not None:
        pre, info["presolve"] = presolved
        z0, stage = pre.coef, len(stages) - 1
        gscale = pre.info["grad_scale"]  # ‖∇F(0)‖ of the subset problem estimates the full one
        info["n_presolve_iter"] = pre.n_iter + pre.info["n_presolve_iter"]

    z = xp.zeros((r,), dtype=f64, device=dev) if z0 is None else xp.astype(z0, f64)
    if tuple(z.shape) != (r,):
        raise ValueError(f"the start must have shape ({r},), got {tuple(z.shape)}")
    rows.start(z if z0 is not None else None, margins0)

    def Bmul(v):
        return v if B is None else matmul(B, v, xp=xp)  # (SciPy's BLAS on NumPy: _ops.matmul)

    # The objective is the loss term ``c Σ sᵢ ψ(rᵢ)`` (a 0-d array from the rows, read with
    # other scalars) plus ``½ zᵀBz``, whose values along a step are formed on the host from
    # ``zᵀBz``, ``zᵀBd`` and ``dᵀBd``: differences of F near the optimum stay above rounding.
    if opts.stop == "gradient" and gscale is None:  # ‖∇F(0)‖, the scale of the gradient test
        gscale = C * float(vector_norm(rows.gradient_at_zero(losses[-1]), xp=xp))
    if gscale is not None:
        gscale = max(gscale, 1e-300)

    eye = xp.eye(r, dtype=f64, device=dev) if B is None else None

    def hessian(c, n_changed, n_active):
        """``B + c·PᵀΛP`` at the current point (its Gram matrix following the rows whose
        curvature changed: ``opts.hessian_update``), timed."""
        t0 = time.perf_counter()
        M = rows.curvature(mode=opts.hessian_update if piecewise or leveled else "recompute",
                           n_changed=n_changed, n_active=n_active)
        tm["hessian"] += time.perf_counter() - t0
        return (eye if B is None else B) + c * M
    history, sizes, plus, steps, gnorms, stage_log = [], [], [], [], [], []
    n_iter = n_stage = n_smw = n_back = 0
    converged, why, kkt = False, "max_iter", float("inf")
    F, new_point, last_full = None, True, False
    flat = 0  # (short steps in a row that left F level: _FLAT_STEPS)
    crawl = 0  # (short steps in a row: opts.crawl_steps)
    bar = progress(label)
    while True:
        final = stage == len(stages) - 1
        k_loss, c = stages[stage]
        psi = losses[k_loss]
        exact_ok = False
        exact_search = opts.line_search == "exact" and getattr(psi, "convex", False) and \
            getattr(psi, "piecewise_quadratic", False)
        check_stable = piecewise and last_full
        levels = None if getattr(psi, "piecewise_quadratic", False) or not leveled else \
            (opts.curvature_levels, opts.curvature_floor * 2.0 * psi.A_min)
        counts, loss = rows.examine(psi, c, check_stable=check_stable, levels=levels)
        Bz = Bmul(z)
        vals = fetch_scalars(*counts, vecdot(z, Bz, xp=xp), loss, xp=xp)  # read 1
        n_u, n_ch, n_act, n_plus = (int(v) for v in vals[:4])
        stable = check_stable and int(vals[4]) == 0
        zBz = vals[-2]
        F = 0.5 * zBz + vals[-1]
        if new_point:
            history.append(F)
            sizes.append(n_act)
            plus.append(n_plus)

        # ---- the gradient −∇F = C Pᵀu − Bz over the rows with ψ' ≠ 0
        t0 = time.perf_counter()
        v = c * rows.gradient(n_u)
        grad = Bz - v
        tm["rhs"] += time.perf_counter() - t0
        use_smw = B is None and (opts.smw == "always" or (opts.smw == "auto" and n_act < r))
        # ---- the gradient test first (read 2), and the Newton direction only where it goes
        # on: a direction formed before the test (its Hessian, factor and P d in one read with
        # the gradient's norm) was thrown away at every stage's last point; on ijcnn1's
        # growth (ranks 125–1,003, a step or two a stage) 80–100 ms of a 0.55 s fit
        gn, bn, vn = fetch_scalars(vector_norm(grad, xp=xp), vector_norm(Bz, xp=xp),
                                   vector_norm(v, xp=xp), xp=xp)
        kkt = gn / max(gscale if opts.stop == "gradient" else max(bn, vn), 1e-300)
        if new_point:
            gnorms.append(gn)
        end = "active_set" if stable else \
            ("gradient" if kkt <= (opts.tol if final else max(opts.tol, opts.stage_tol)) and (
                not final or opts.balance_tol is None or
                gn <= opts.balance_tol * max(bn, vn)) else None)
        if piecewise and n_iter < max(opts.min_iter, presolved is not None):
            end = None  # (steps from a presolve's or a given start; see NewtonOptions)
        formed = None  # (the Newton direction formed for the decrement test: its step's)
        if end == "gradient" and final and piecewise and opts.decrement_tol is not None \
                and not use_smw and n_iter < opts.max_iter:
            H = hessian(c, n_ch, n_act)
            t0 = time.perf_counter()
            formed = _direction(grad, c, active=None, H=H, allow_jitter=B is not None,
                                checked=False, iteration=n_iter + 1, xp=xp)
            (gd,) = fetch_scalars(vecdot(grad, formed[0], xp=xp), xp=xp)
            tm["solve"] += time.perf_counter() - t0
            if -0.5 * gd > opts.decrement_tol * abs(F):  # (see NewtonOptions.decrement_tol)
                end = None
        if end is not None:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            if final:
                converged, why = True, end
                break
            stage, n_stage, last_full, new_point = stage + 1, 0, False, False
            continue
        if n_iter >= opts.max_iter:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            break
        # ---- Newton direction: SMW (28) or Cholesky of B + C·PᵀΛP
        if use_smw:
            t0 = time.perf_counter()
            U, kap_act = rows.active_rows(n_act)
            tm["hessian"] += time.perf_counter() - t0
        elif formed is None:
            H = hessian(c, n_ch, n_act)
        checked = False  # the factor's check joins read 3 (solved again, checked, if it failed)
        while True:
            t0 = time.perf_counter()
            d, ok = formed if formed is not None and not checked else _direction(
                grad, c, active=(U, kap_act) if use_smw else None, H=None if use_smw else H,
                allow_jitter=B is not None, checked=checked, iteration=n_iter + 1, xp=xp)
            tm["solve"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            L_full = rows.trial(d, psi, c, derivatives=exact_search)
            Bd = Bmul(d)
            tm["matvec"] += time.perf_counter() - t0
            vals = fetch_scalars(  # read 3
                vecdot(grad, d, xp=xp), vecdot(z, Bd, xp=xp), vecdot(d, Bd, xp=xp),
                *(L_full if exact_search else (L_full,)), *(() if ok is None else (ok,)),
                xp=xp)
            if ok is None or vals[-1]:
                break
            checked = True
        slope, zBd, dBd, L_full = vals[:4]
        F_full = 0.5 * (zBz + 2.0 * zBd + dBd) + L_full
        # F' along the step from its margins' products (P d) must agree with ∇F·d: with
        # float32 features of a wide kernel their roundings differed by 30–100 % of it
        exact_ok = exact_search and abs(zBd + vals[6] - slope) <= _SLOPE_AGREEMENT * abs(slope)
        first = (F_full, zBd + dBd + vals[4], dBd + vals[5]) if exact_ok else None
        if not math.isfinite(slope):
            raise FloatingPointError(
                f"the Newton step is not finite at iteration {n_iter + 1} (C={c:g} at this "
                f"stage, {C:g} in all): lower C, or scale the features (e.g. StandardScaler); "
                "float32 features: dtype='float64'")

        # ---- line search (margins are linear in the step): exact for a convex
        # piecewise-quadratic ψ, else (or where its minimizer fails Armijo's test) backtracking
        def along(eta, zBz=zBz, zBd=zBd, dBd=dBd, psi=psi, c=c):
            """F at z + eta d."""
            return (0.5 * (zBz + 2.0 * eta * zBd + eta * eta * dBd)
                    + fetch_scalars(rows.loss_along(eta, psi, c), xp=xp)[0])

        def along3(eta, zBz=zBz, zBd=zBd, dBd=dBd, psi=psi, c=c):
            """F, F' and F'' at z + eta d."""
            L, dL, ddL = fetch_scalars(*rows.loss_along(eta, psi, c, derivatives=True), xp=xp)
            return 0.5 * (zBz + 2.0 * eta * zBd + eta * eta * dBd) + L, zBd + eta * dBd + dL, \
                dBd + ddL

        t0 = time.perf_counter()
        eta, F_next, n_b, accepted = 0.0, F, 0, False
        found = convex_minimum(along3, F, slope, first=first, sigma=opts.armijo) \
            if exact_ok and slope < 0 else None
        if found is not None:
            eta, F_next, n_b, accepted = found
        elif slope < 0:
            eta, F_next, n_b, accepted = armijo_search(
                along, F, slope, phi1=F_full, sigma=opts.armijo, factor=opts.backtrack,
                max_backtracks=opts.max_backtracks,
                max_extensions=opts.max_extensions if _clipped(psi) else 0)
        tm["line_search"] += time.perf_counter() - t0
        n_back += n_b
        if not accepted:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            why = "line_search"
            converged = final and kkt <= math.sqrt(opts.tol)
            break
        z = z + eta * d
        n_iter += 1
        n_smw += use_smw
        n_stage += 1
        last_full, new_point = eta == 1.0, True
        rows.accept(eta, z if n_iter % _REFRESH_EVERY == 0 else None)
        steps.append(eta)
        bar.update(1, obj=F, kkt=kkt)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("%s %s", label, fields(it=n_iter, stage=stage, obj=F, kkt=kkt,
                                              active=n_act, step=eta))
        flat = flat + 1 if eta < _FLAT_STEP and getattr(psi, "convex", False) and \
            abs(F - F_next) <= _FLAT_DECREASE * abs(F) else 0
        if flat >= _FLAT_STEPS:  # (the rounding's steps: the stage ends)
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            if final:
                history.append(F_next)
                converged, why, F = kkt <= math.sqrt(opts.tol), "rounding", F_next
                break
            stage, n_stage, last_full, flat = stage + 1, 0, False, 0  # (from the new point)
            continue
        crawl = crawl + 1 if eta <= opts.crawl_step and getattr(psi, "convex", False) else 0
        if opts.crawl_steps is not None and crawl >= opts.crawl_steps:
            history.append(F_next)
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            converged, why, F = False, "crawl", F_next
            break
        if final and opts.decrease_tol is not None and \
                F - F_next <= opts.decrease_tol * abs(F_next):
            history.append(F_next)
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            converged, why, F = True, "decrease", F_next
            break
    bar.close()
    _log.info("%s %s", label, fields(it=n_iter, stop=why, converged=converged, obj=F, kkt=kkt,
                                     seconds=time.perf_counter() - t_start))
    n_incremental, n_recompute = rows.hessian_counts()
    info.update(
        stop=why, stalled=why == "crawl", active_set_sizes=sizes, plus_set_sizes=plus,
        step_sizes=steps, grad_norms=gnorms, grad_scale=gscale, kkt=kkt, stages=stage_log,
        smw_steps=n_smw,
        hessian_incremental=n_incremental, hessian_recomputed=n_recompute,
        n_backtracks=n_back, margins=rows.margins(), C_stages=Cs,
        n_margin_violators=int(fetch_scalars(rows.n_margin_violators(), xp=xp)[0])
        if rows.cls else None,
    )
    timings = {"total": time.perf_counter() - t_start, **tm}
    if info["presolve"] is not None:
        timings["presolve"] = info["presolve"]["seconds"]
    return SolverResult(coef=z, n_iter=n_iter, converged=converged, objective_history=history,
                        timings=timings, info=info)


class NewtonRows:
    """The row side of :func:`semismooth_newton`: the features ``P``, labels ``y``, weights
    ``s``, margins ``o = P z`` and each row's piece of ψ, behind a few methods whose results are
    small (0-d arrays, r-vectors, r × r matrices) and add up over any split of the rows.

    The solver does its r × r algebra on these results; it never touches an m-vector. A row
    partition of a Dask array is one ``NewtonRows`` on its worker
    (:class:`svmgpu.distributed.DaskNewtonRows` maps each method over the partitions and
    combines the results as the method declares, :func:`~svmgpu.lowrank.combine`), so both run
    this one implementation of the per-row work (the :class:`~svmgpu.lowrank.AdditiveRows`
    contract).

    Counts (``n_u``, ...) may be passed by a caller that has read them already (in one batched
    read); otherwise they are read here (a partition reads its own: they are ``totals``).

    Parameters
    ----------
    P : FeatureOperator or array of shape (m, r)
    y : array of shape (m,)
    sample_weight : array of shape (m,), optional
    task : {"classification", "regression"}
    tau : float
        Zhou 2013's threshold on ψ'' and ψ' (see :func:`semismooth_newton`).
    """

    distributed = False

    def __init__(self, P, y, sample_weight=None, *, task="classification", tau=0.0):
        P = as_operator(P)
        self.P, self.xp, self.shape, self.device = P, P.xp, P.shape, P.device
        xp = self.xp
        m = P.shape[0]
        if tuple(y.shape) != (m,):
            raise ValueError(f"y must have shape ({m},), got {tuple(y.shape)}")
        self.task, self.cls, self.tau = task, task == "classification", tau
        self.y = xp.astype(y, xp.float64)
        self.s = None if sample_weight is None else xp.astype(sample_weight, xp.float64)
        self.hessian = CurvatureGram(P)  # PᵀΛP, updated (23)/(25)
        self.o = xp.zeros((m,), dtype=xp.float64, device=P.device.native_device)
        self.res = self._residual(self.o)
        self.g = self.kap = self.g_prev = self.kap_prev = self.Pd = self._step_weights = None

    def _residual(self, o):
        return 1.0 - self.y * o if self.cls else self.y - o

    def _weighted(self, v):
        return v if self.s is None else self.s * v

    def _read(self, count, mask):
        return count if count is not None else int(self.xp.count_nonzero(mask))

    def loss_term(self, res, psi, c):
        """``c Σ sᵢ ψ(rᵢ)`` as a 0-d array."""
        return c * self.xp.sum(self._weighted(psi.value(res, xp=self.xp)))

    @combine("client")
    def strided(self, n):
        """``(rows, scale)``: the rows of an evenly strided subset of about ``n`` rows (a
        presolve, in memory here), and ``Σs / Σs_subset`` (the factor on C that keeps the
        loss's weight)."""
        P, y, s, total = self.strided_rows(max(self.shape[0] // n, 1), as_array=False)
        return NewtonRows(P, y, s, task=self.task, tau=self.tau), \
            float(total) / float(y.shape[0] if s is None else self.xp.sum(s))

    @combine("list")
    def strided_rows(self, step, *, as_array=True):
        """``(P, y, s, Σs)`` of the rows 0, step, 2·step, …: their features (an array, or with
        ``as_array=False`` the operator of those rows), labels and weights (None), and the
        total weight of all rows (``m`` without weights)."""
        xp = self.xp
        sub = xp.arange(0, self.shape[0], step, device=self.device.native_device)
        P = self.P.take(sub)
        total = self.shape[0] if self.s is None else xp.sum(self.s)
        return (P.to_array() if as_array else P, xp.take(self.y, sub),
                None if self.s is None else xp.take(self.s, sub), total)

    @combine("none")
    def start(self, z, margins=None):
        """Margins at ``z`` (``P z``, or ``margins`` where the caller has them; None: z = 0)."""
        if z is not None:
            self.o = self.P.matvec(z) if margins is None else \
                self.xp.astype(margins, self.xp.float64)
            self.res = self._residual(self.o)

    @combine("sum")
    def gradient_at_zero(self, psi):
        """``Pᵀ(s σ ψ'(r))`` at z = 0 (``‖∇F(0)‖ = C`` times its norm)."""
        xp = self.xp
        g0 = psi.grad(self._residual(xp.zeros_like(self.o)), xp=xp)
        return self.P.rmatvec(self._weighted(self.y * g0 if self.cls else g0))

    @combine("sum")
    def examine(self, psi, c, *, check_stable, levels=None):
        """Each row's ψ' and curvature at the current margins; returns the unread 0-d counts
        ``[n_u, n_changed, n_active, n_plus(, n_unstable)]`` (rows with ψ' ≠ 0, whose
        curvature changed since the Hessian was built, with ψ'' > 0, with ψ' ≠ 0 and ψ'' = 0,
        and with ``check_stable`` the rows that left their piece of ψ in the last step) and
        the loss term ``c Σ sψ``. ``levels = (ratio, floor)``: the curvatures rounded by
        :func:`level_curvature`."""
        xp = self.xp
        g = psi.grad(self.res, xp=xp)
        k = psi.curvature(self.res, xp=xp)
        if levels is not None:
            k = level_curvature(k, *levels, xp=xp)
        if self.tau > 0:
            k = xp.where(k >= self.tau, k, xp.zeros_like(k))
            g = xp.where((xp.abs(g) >= self.tau) | (k > 0), g, xp.zeros_like(g))
        self.g, self.u = g, self._weighted(self.y * g if self.cls else g)  # −∇F = C Pᵀu − Bz
        self.kap = self._weighted(k)
        self.u_mask, self.act_mask = self.u != 0, self.kap != 0
        self.ch_mask = self.kap != self.hessian.kappa
        counts = [xp.count_nonzero(self.u_mask), xp.count_nonzero(self.ch_mask),
                  xp.count_nonzero(self.act_mask), xp.count_nonzero(self.u_mask & ~self.act_mask)]
        if check_stable:
            counts.append(xp.count_nonzero((self.kap != self.kap_prev)
                                           | (~self.act_mask & (g != self.g_prev))))
        return counts, self.loss_term(self.res, psi, c)

    @combine("sum", totals=("n_u",))
    def gradient(self, n_u=None):
        """``Pᵀu`` over the rows with ψ' ≠ 0 (gathered when they are under a quarter)."""
        n_u = self._read(n_u, self.u_mask)
        rows = nonzero_indices(self.u_mask, n_u, xp=self.xp) if 4 * n_u < self.shape[0] else None
        return self.P.rmatvec(self.u, rows=rows)

    @combine("sum", totals=("n_changed", "n_active"))
    def curvature(self, *, mode, n_changed=None, n_active=None):
        """``PᵀΛP`` (Λ = diag(sψ'')), following the rows that changed (23)/(25)."""
        if n_changed is None or n_active is None:
            n_changed = self._read(None, self.ch_mask)
            n_active = self._read(None, self.act_mask)
        return self.hessian.update(self.kap, mode=mode, changed=self.ch_mask, active=self.act_mask,
                              n_changed=n_changed, n_active=n_active)

    @combine("concat", totals=("n_active",))
    def active_rows(self, n_active=None):
        """``(U, κ)``: the rows of P with ψ'' > 0 (float64) and their curvatures (SMW (28))."""
        xp = self.xp
        idx = nonzero_indices(self.act_mask, self._read(n_active, self.act_mask), xp=xp)
        return self.P.take(idx).to_array(xp.float64), xp.take(self.kap, idx)

    @combine("sum")
    def trial(self, d, psi, c, *, derivatives=False):
        """Keep ``P d`` and return the loss term at the full step; with ``derivatives``,
        ``[L(1), L'(1), L''(1), L'(0)]`` (see :meth:`loss_along`)."""
        self.Pd, self._step_weights = self.P.matvec(d), None
        out = self.loss_along(1.0, psi, c, derivatives=derivatives)
        if derivatives:
            out.append(c * vecdot(self._along_weights()[0], psi.grad(self.res, xp=self.xp),
                                  xp=self.xp))
        return out

    def _along_weights(self):
        """``(s q, s q²)`` for ``q = dr/dη``, the residuals' change along the step ``P d``:
        the same at every trial of a step's line search, computed at its first."""
        if self._step_weights is None:
            q = -self.y * self.Pd if self.cls else -self.Pd
            sq = self._weighted(q)
            self._step_weights = (sq, sq * q)
        return self._step_weights

    @combine("sum")
    def loss_along(self, eta, psi, c, *, derivatives=False):
        """The loss term ``L(η)`` at ``z + η d`` (margins are linear in the step); with
        ``derivatives``, ``[L(η), L'(η), L''(η)]`` (0-d arrays; ``L''`` from ψ's curvature,
        exact for a convex piecewise-quadratic ψ)."""
        res = self._residual(self.o + eta * self.Pd)
        if not derivatives:
            return self.loss_term(res, psi, c)
        xp = self.xp
        sq, sq2 = self._along_weights()
        return [self.loss_term(res, psi, c), c * vecdot(sq, psi.grad(res, xp=xp), xp=xp),
                c * vecdot(sq2, psi.curvature(res, xp=xp), xp=xp)]

    @combine("none")
    def accept(self, eta, z=None):
        """Move the margins to ``z + eta d`` (recomputed as ``P z`` for a given ``z``)."""
        self.o = self.P.matvec(z) if z is not None else self.o + eta * self.Pd
        self.res = self._residual(self.o)
        self.kap_prev, self.g_prev = self.kap, self.g

    @combine("sum")
    def n_margin_violators(self):
        """``#{i : yᵢ f(xᵢ) <= 1}`` (classification) as a 0-d array."""
        return self.xp.count_nonzero(self.res >= 0)

    @combine("stay")
    def margins(self):
        """``P z`` at the current point, float64."""
        return self.o

    @combine("max")
    def hessian_counts(self):
        """``(incremental updates, rebuilds)`` of ``PᵀΛP``."""
        return self.hessian.n_incremental, self.hessian.n_recompute


__all__ = [
    "DISTRIBUTED_PRESOLVE_MAX",
    "NewtonOptions",
    "NewtonRows",
    "c_schedule",
    "level_curvature",
    "presolve_rows",
    "semismooth_newton",
]
