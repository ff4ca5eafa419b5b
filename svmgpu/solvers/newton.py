"""The library's one semi-smooth Newton method (:func:`semismooth_newton`), and its set-up for
the reduced SVMs of Zhou 2013 ("Which is better? Regularization in RKHS vs ℝᵐ on reduced SVMs",
sections 3–4), :func:`newton_reduced`. UniSVM's low-rank Newton
(:func:`svmgpu.solvers.unisvm.unisvm_newton`) is the same solver with ``B = I``, any
piecewise-quadratic loss of the registry and regression residuals.

The reduced problem (17) is written in the library's form

    min_z  ½ zᵀ B z + C Σᵢ sᵢ ψ(uᵢ),      uᵢ = 1 − yᵢ Pᵢ z,                         (17)

where ``P = K(X, X_J)`` (m × r, the paper's F) holds the kernel columns of the reduced set ``J``, ``s`` are
sample weights, ``B = I`` for GSVM ("M2", (16)) and ``B = K_JJ`` for the RKHS regularizer
("M1", (15)). ψ is the paper's loss ``L`` of Table 1 times ``κ`` with ``κ = 2`` for the least
squares (ψ = u²) and squared hinge (ψ = u₊²) losses and ``κ = 1`` for the Huber hinge and
logistic (ψ = L); every ψ comes from the library's one loss registry (:mod:`svmgpu.losses`),
so the paper's λ is

    λ = 1 / (κ C):   C = 1/(2λ) (least squares, squared hinge),   C = 1/λ (Huber hinge, logistic).

Internally the solver uses the paper's scaling ``λ/2 zᵀBz + Σ sᵢ L(uᵢ)`` (the objective
divided by ``κ C``), so that the Newton equations are literally (20)–(26):

    (λB + P_Iᵀ Λ P_I) z̄ = Σ_{i ∈ I ∪ I₊} sᵢ yᵢ (L''(uᵢ)(1 − uᵢ) + L'(uᵢ)) Pᵢ            (20)

with ``Λ = diag(sᵢ L''(uᵢ))`` on the rows ``I`` of positive curvature. The full step
``z̄`` is taken when it passes the Armijo test, otherwise a backtracking line search along
``z̄ − z`` (whose margins are linear in the step, so each trial costs O(m)).

* **Least squares** (21): one Newton step solves the problem.
* **Squared hinge** (22): semi-smooth Newton; the Hessian ``λB + P_IᵀS P_I`` is updated with
  the rows entering and leaving the active set (23); terminates in finitely many steps when the
  active set no longer changes after a full step.
* **Huber hinge** (24)/(25): piecewise quadratic; δ continuation ``δ ← 0.1 δ`` from ``delta0 = 1``
  down to ``max(1e-4, delta_min)``; the Hessian ``λB + P_IᵀS P_I / (2δ)`` is updated like (23).
* **Logistic** (26): stable form ``L_p(u) = u₊ + log(1 + exp(−p|u|))/p``; p continuation
  ``p ← 10 p`` from 10 to 10⁴; rows with ``L'' < τ = 1e-10`` are left out of the Hessian.

For GSVM (``B = I``) the Newton equation is solved by the SMW identity (28) when the active set
is smaller than r (cost O(r|I|²) instead of O(r³)); this is not possible for ``B = K_JJ``.

**Offset.** Following the paper (section 1, and Steinwart et al. on kernels such as the
Gaussian), the model has no offset: ``f(x) = Σ_{j∈J} z_j k(x, x_j)``. An offset is obtained
by giving every sample an extra constant attribute 1 (the paper's remark, after Keerthi et
al. [5]): append a column of ones to ``P`` and extend ``B`` by a diagonal entry 1, i.e. the
offset is regularized by ``½ b²`` as in PSVM. The estimators do this for ``fit_intercept``.

**RKHS ridge.** As in the paper's experiments, a ridge ``ε I`` (``ridge``, default 1e-8) is
added to the Newton Hessian ``λB + …`` of M1. The solver folds it into the objective, i.e. it
minimizes (17) with ``B + (ε/λ) I``, so Newton equations and line search agree.
"""

from __future__ import annotations

import logging
import math
import time

from svmgpu._log import fields, get_logger, honours_verbose, progress
from svmgpu.backend import (
    LinAlgError,
    fetch_scalars,
    is_numpy,
    nonzero_indices,
    smw_factor_solve,
    spd_factor_solve,
)
from svmgpu.losses import get_loss
from svmgpu.lowrank import CurvatureGram, as_operator, combine
from svmgpu.solvers._linesearch import armijo as armijo_search
from svmgpu.solvers._result import SolverResult

#: Loss names accepted by :func:`newton_reduced`, and the loss of the library's one registry
#: (:mod:`svmgpu.losses`) each one is, with the name of its smoothing parameter: the paper's
#: logistic loss ``log(1 + exp(pu))/p`` is UniSVM's smooth hinge ψ^(6), its Huber loss the
#: classification Huber hinge (named apart from the regression Huber).
LOSSES = ("least_squares", "squared_hinge", "huber_hinge", "logistic")
_log = get_logger("newton")

_REGISTRY = {"least_squares": ("least_squares", None), "squared_hinge": ("squared_hinge", None),
             "huber_hinge": ("huber_hinge", "delta"), "logistic": ("smooth_hinge", "p")}

#: ψ = κ L: the library's loss over the paper's (Table 1); λ = 1 / (κ C).
LOSS_SCALE = {"least_squares": 2.0, "squared_hinge": 2.0, "huber_hinge": 1.0, "logistic": 1.0}

#: The paper's threshold τ on L' and L'' for the logistic loss (section 4.2.4).
LOGISTIC_TAU = 1e-10


def check_loss(loss):
    """Return ``loss`` if it is a valid loss name, else raise ``ValueError``."""
    if loss == "huber":
        raise ValueError(
            "loss 'huber' is the regression Huber loss (UniSVR); the reduced SVM's Huber loss "
            "of Zhou 2013 is the Huber hinge: use loss='huber_hinge'"
        )
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; valid losses: {list(LOSSES)}")
    return loss


def c_to_lambda(C, loss):
    """The paper's λ for the library's ``C``: ``λ = 1/(2C)`` (least squares, squared hinge),
    ``λ = 1/C`` (Huber hinge, logistic)."""
    return 1.0 / (LOSS_SCALE[check_loss(loss)] * float(C))


def lambda_to_c(lam, loss):
    """The library's ``C`` for the paper's λ (inverse of :func:`c_to_lambda`)."""
    return 1.0 / (LOSS_SCALE[check_loss(loss)] * float(lam))


# ------------------------------------------------------------------------------------ losses
def registry_loss(loss, param=None):
    """The registry's :class:`svmgpu.losses.Loss` ψ for a loss name of this solver and its
    smoothing parameter (δ for the Huber hinge, p for logistic; ignored otherwise)."""
    name, key = _REGISTRY[check_loss(loss)]
    return get_loss(name, **({} if key is None else {key: float(param)}))


def loss_terms(psi, kappa, u, *, xp, derivatives=True):
    """The paper's loss ``L = ψ/κ`` and its first two derivatives (Table 1, section 4.2), from
    the registry's ψ (:func:`registry_loss`) and the scale κ of :data:`LOSS_SCALE`.

    Returns
    -------
    L, L1, L2 : arrays of shape (m,)
        ``L(u)``, ``L'(u)``, ``L''(u)`` (the last two None when ``derivatives`` is False).
        For the piecewise losses ``L''`` is the generalized (semi-smooth) second derivative.
    """
    inv = 1.0 / kappa  # 1 or 1/2: exact in floating point
    L = psi.value(u, xp=xp) * inv
    if not derivatives:
        return L, None, None
    return L, psi.grad(u, xp=xp) * inv, psi.curvature(u, xp=xp) * inv


def _schedule(loss, *, delta0, delta_min, p0, p_max):
    """Smoothing parameters of the continuation (one stage each); [None] for LS / SH."""
    if loss == "huber_hinge":
        final = max(1e-4, float(delta_min))
        out, d = [], float(delta0)
        while d > final * (1 + 1e-12):
            out.append(d)
            d *= 0.1
        return out + [final]
    if loss == "logistic":
        out, p = [], float(p0)
        while p < float(p_max) * (1 - 1e-12):
            out.append(p)
            p *= 10.0
        return out + [float(p_max)]
    return [None]


def _identity(n, *, xp, device):
    return xp.eye(n, dtype=xp.float64, device=device)


# ------------------------------------------------------------------- the semi-smooth Newton
#: Relative tolerance of a presolve, per stopping rule: a loose start is all it must give.
_PRESOLVE_TOL = {"gradient": 1e-3, "kkt": 1e-2}

#: Iterations between recomputations of the margins ``P z`` (against drift of ``o + η P d``).
_REFRESH_EVERY = 20

#: Rows of a distributed fit's presolve at most: they are gathered to the client (10⁶ rows at
#: r = 300 are 1.2 GB of float32 features), where the presolve runs in memory.
DISTRIBUTED_PRESOLVE_MAX = 1_000_000

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
    poorly: on Covtype (m = 381,012, r = 1000) 7r rows left 16 full Newton steps (14.6 s),
    40r rows 8 (9.0 s). A presolve only needs a start for a loose tolerance, so its own
    presolve may be smaller: on 1M Checkerboard (r = 300) 20,000 rows then 2,100 take 3 + 3
    steps, 20,000 rows alone 11 + 3; and m/50 rows beat m/8 there (0.85 s vs 1.1 s)."""
    n = max(m // 50, (7 if nested else 40) * r, 2000)
    return n if 8 * n <= m else None


def _presolve_size(presolve, m, r, *, xp, nested):
    """Rows of the presolve asked for by ``presolve`` (None: no presolve)."""
    if presolve is None or presolve is False:
        return None
    if presolve == "auto" or presolve is True:
        # "auto": on NumPy only. On a GPU a full Hessian takes milliseconds and each extra
        # iteration costs more than it saves (H100, bench/bench_gpu.py: the Covtype solve
        # 0.08 s without vs 0.33 s with; on 16 CPU cores 1M Checkerboard 2.7 s vs 0.35 s).
        return presolve_rows(m, r, nested=nested) if (presolve is True or is_numpy(xp)) else None
    if isinstance(presolve, bool) or not isinstance(presolve, int) or presolve < 1:
        raise ValueError(f"presolve must be 'auto', True, False, None or a positive int, "
                         f"got {presolve!r}")
    return presolve if presolve < m else None


@honours_verbose
def semismooth_newton(P, y, losses, *, C, B=None, task="classification", sample_weight=None,
                      z0=None, tol=1e-6, stop="gradient", stage_tol=1e-4, max_iter=500,
                      smw="auto", hessian_update="auto", tau=0.0, presolve="auto",
                      C_continuation="auto", armijo=1e-4,
                      backtrack=0.5, max_backtracks=50, decrease_tol=None, verbose=0,
                      label="newton", xp):
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

    Two device→host reads per iteration (row counts, then the stopping test, slope and the full
    step's objective); one more per backtrack.

    Parameters
    ----------
    P : FeatureOperator or array of shape (m, r)
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
    tol : float
    stop : {"gradient", "kkt"}
        ``‖∇F‖ <= tol · ‖∇F(0)‖`` (Zhou 2013), or ``‖∇F‖ <= tol · max(‖Bz‖, ‖C Pᵀ(s σ ψ')‖)``
        (scale-free: the two parts of a stationary gradient balance). For piecewise-quadratic
        losses also: a full step that leaves every row on its piece of ψ (the active sets)
        lands on the exact stationary point (finite termination, Zhou 2013 section 4.2.2).
    stage_tol : float
    max_iter : int
        Newton steps over all stages.
    smw : {"auto", "always", "never"}
    hessian_update : {"auto", "incremental", "recompute"}
    tau : float
        Rows with ``ψ'' < tau`` leave the Hessian and rows with ``|ψ'| < tau`` (and ψ'' < tau)
        the gradient (Zhou 2013's τ for the logistic loss; 0: exact).
    presolve : "auto", bool, None or int
        Solve first on an evenly strided subset of rows (:func:`presolve_rows` of them, or the
        given number) with C scaled by ``Σs / Σs_subset``, recursively, and start there (in the
        last stage): from z = 0 every row is active, from the presolve only those near the
        margin. "auto": on NumPy only (see :func:`_presolve_size`); True: on every namespace.
    C_continuation : {"auto", False}
        "auto": for ``C m > 1e8``, first solve at C / 10^K, …, C / 10 with the first loss
        (:func:`c_schedule`), each stage starting from the last.
    armijo, backtrack, max_backtracks
        Armijo constant σ, step reduction and maximum reductions.
    decrease_tol : float, optional
        For non-convex losses: also stop (converged, ``stop="decrease"``) once a step of the
        last stage lowers F by at most ``decrease_tol · |F|`` (DCA's usual rule, UniSVM
        Algorithm 1's "while not convergence"). A truncated loss has a kink where it meets its
        ceiling (ψ' jumps from 2√a to 0 for the truncated squared hinge), so the gradient test
        cannot hold while rows sit near it, and the active-set test waits until no row crosses
        it: on UniSVM's Covtype set-up 73 steps on all rows, the last 58 of them lowering F by
        3e-4 or less each (down to 1e-5) and moving the test accuracy by 0.03 points
        (bench/README.md). None:
        off (convex losses: the gradient and active-set tests are exact).
    verbose : int
        1: a summary line (and a progress bar with tqdm), 2: a line per Newton step, through
        the ``svmgpu.newton`` logger (fields: :mod:`svmgpu._log`).
    label : str
        The run's name in the log lines.
    xp : namespace

    Returns
    -------
    SolverResult
        ``coef``: z (float64, shape (r,)); ``objective_history``: F at each iterate (index 0: the
        start). ``info``: ``stop`` ("active_set", "gradient", "decrease", "max_iter",
        "line_search"),
        ``active_set_sizes`` / ``plus_set_sizes`` (rows with ψ'' > 0 / with ψ' ≠ 0 and ψ'' = 0,
        per iterate), ``step_sizes``, ``grad_norms``, ``grad_scale`` (``‖∇F(0)‖`` for
        ``stop="gradient"``), ``kkt`` (the last relative gradient), ``stages`` (the loss
        index, C and Newton steps of each stage), ``smw_steps``, ``hessian_incremental`` /
        ``hessian_recomputed``,
        ``n_backtracks``, ``n_margin_violators`` (classification: ``#{i : yᵢ f(xᵢ) <= 1}``),
        ``margins`` (``P z``, float64), ``presolve`` (its rows, iterations, seconds) and
        ``n_presolve_iter`` (Newton steps of all presolves), ``C_stages`` (the C of each stage).
    """
    if stop not in _PRESOLVE_TOL:
        raise ValueError(f"stop must be 'gradient' or 'kkt', got {stop!r}")
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    t_start = time.perf_counter()
    # the rows of the problem: here, or one NewtonRows per partition of a distributed source
    rows = as_operator(P).rows(NewtonRows, y, sample_weight, task=task, tau=tau)
    return _newton(rows, losses, C=C, B=B, task=task, z0=z0, tol=tol, stop=stop,
                   stage_tol=stage_tol, max_iter=max_iter, smw=smw, hessian_update=hessian_update,
                   tau=tau, presolve=presolve, C_continuation=C_continuation, armijo=armijo,
                   backtrack=backtrack, max_backtracks=max_backtracks, decrease_tol=decrease_tol,
                   verbose=verbose, label=label, xp=xp, t_start=t_start)


def _newton(rows, losses, *, C, B, task, z0, tol, stop, stage_tol, max_iter, smw, hessian_update,
            tau, presolve, C_continuation, armijo, backtrack, max_backtracks, decrease_tol,
            verbose, label, xp, t_start, _nested=False):
    """:func:`semismooth_newton` on its row object ``rows`` (a :class:`NewtonRows` or its Dask
    form; a presolve's rows are in memory)."""
    m, r = rows.shape
    f64 = xp.float64
    dev = rows.device.native_device
    C = float(C)
    piecewise = all(getattr(psi, "piecewise_quadratic", False) for psi in losses)
    Cs = c_schedule(C, m, C_continuation)
    stages = [(0, c) for c in Cs[:-1]] + [(k, C) for k in range(len(losses))]  # (loss, C)
    info = {"presolve": None, "n_presolve_iter": 0}
    tm = {"rhs": 0.0, "hessian": 0.0, "solve": 0.0, "matvec": 0.0, "line_search": 0.0}

    # ---- warm start from a strided subset of the rows (recursively)
    stage, gscale = 0, None
    n_pre = None if z0 is not None else _presolve_size(presolve, m, r, xp=xp, nested=_nested)
    if n_pre is not None and rows.distributed:  # gathered to the client: bounded
        n_pre = min(n_pre, DISTRIBUTED_PRESOLVE_MAX)
    if n_pre is not None:
        t0 = time.perf_counter()
        sub, scale = rows.strided(n_pre)
        pre = _newton(
            sub, losses, C=C * scale, B=B, task=task, z0=None,
            tol=max(tol, _PRESOLVE_TOL[stop]), stop=stop,
            stage_tol=stage_tol, max_iter=max_iter, smw=smw, hessian_update=hessian_update,
            tau=tau, presolve=presolve if presolve in ("auto", True) else None,
            C_continuation=C_continuation, armijo=armijo,
            backtrack=backtrack, max_backtracks=max_backtracks,
            decrease_tol=None if decrease_tol is None else max(decrease_tol, _PRESOLVE_TOL[stop]),
            verbose=verbose, label=f"{label} presolve", xp=xp, t_start=time.perf_counter(),
            _nested=True)
        z0, stage = pre.coef, len(stages) - 1
        gscale = pre.info["grad_scale"]  # ‖∇F(0)‖ of the subset problem estimates the full one
        info["presolve"] = {"rows": sub.shape[0], "n_iter": pre.n_iter,
                            "converged": pre.converged, "seconds": time.perf_counter() - t0,
                            "presolve": pre.info["presolve"]}
        info["n_presolve_iter"] = pre.n_iter + pre.info["n_presolve_iter"]

    z = xp.zeros((r,), dtype=f64, device=dev) if z0 is None else xp.astype(z0, f64)
    if tuple(z.shape) != (r,):
        raise ValueError(f"the start must have shape ({r},), got {tuple(z.shape)}")
    rows.start(z if z0 is not None else None)

    def Bmul(v):
        return v if B is None else xp.matmul(B, v)

    # The objective is the loss term ``c Σ sᵢ ψ(rᵢ)`` (a 0-d array from the rows, read with
    # other scalars) plus ``½ zᵀBz``, whose values along a step are formed on the host from
    # ``zᵀBz``, ``zᵀBd`` and ``dᵀBd``: differences of F near the optimum stay above rounding.
    if stop == "gradient" and gscale is None:  # ‖∇F(0)‖, the scale of the gradient test
        gscale = C * float(xp.linalg.vector_norm(rows.gradient_at_zero(losses[-1])))
    if gscale is not None:
        gscale = max(gscale, 1e-300)

    eye = _identity(r, xp=xp, device=dev) if B is None else None
    history, sizes, plus, steps, gnorms, stage_log = [], [], [], [], [], []
    n_iter = n_stage = n_smw = n_back = 0
    converged, why, kkt = False, "max_iter", float("inf")
    F, new_point, last_full = None, True, False
    bar = progress(label)
    while True:
        final = stage == len(stages) - 1
        k_loss, c = stages[stage]
        psi = losses[k_loss]
        check_stable = piecewise and last_full
        counts, loss = rows.examine(psi, c, check_stable=check_stable)
        Bz = Bmul(z)
        vals = fetch_scalars(*counts, xp.vecdot(z, Bz), loss, xp=xp)  # read 1
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
        use_smw = B is None and (smw == "always" or (smw == "auto" and n_act < r))
        if stable:  # the exact stationary point: only its gradient norm is still read
            gn, bn, vn = fetch_scalars(xp.linalg.vector_norm(grad), xp.linalg.vector_norm(Bz),
                                       xp.linalg.vector_norm(v), xp=xp)
        else:
            # ---- Newton direction: SMW (28) or Cholesky of B + C·PᵀΛP
            t0 = time.perf_counter()
            if use_smw:
                U, kap_act = rows.active_rows(n_act)
            else:
                M = rows.curvature(mode=hessian_update if piecewise else "recompute",
                                   n_changed=n_ch, n_active=n_act)
                H = (eye if B is None else B) + c * M
            tm["hessian"] += time.perf_counter() - t0
            checked = False  # the factor's check joins read 2 (solved again, checked, if it failed)
            while True:
                t0 = time.perf_counter()
                try:
                    if use_smw:
                        d, ok = smw_factor_solve(U, kap_act, 1.0 / c, grad / c, xp=xp,
                                                 checked=checked)
                    else:
                        d, ok = spd_factor_solve(H, grad, xp=xp, allow_jitter=B is not None,
                                                 checked=checked)
                except LinAlgError as exc:
                    raise FloatingPointError(
                        f"the Newton Hessian B + C·PᵀΛP with C={c:g} could not be factored "
                        f"at iteration {n_iter + 1}: at this C the regularizer B is below the "
                        f"rounding of C·PᵀΛP; lower C, or center and scale the features "
                        f"(e.g. StandardScaler)") from exc
                d = -d
                tm["solve"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                L_full = rows.trial(d, psi, c)
                Bd = Bmul(d)
                tm["matvec"] += time.perf_counter() - t0
                vals = fetch_scalars(  # read 2
                    xp.linalg.vector_norm(grad), xp.linalg.vector_norm(Bz),
                    xp.linalg.vector_norm(v), xp.vecdot(grad, d), xp.vecdot(z, Bd),
                    xp.vecdot(d, Bd), L_full, *(() if ok is None else (ok,)), xp=xp)
                if ok is None or vals[-1]:
                    break
                checked = True
            gn, bn, vn, slope, zBd, dBd, L_full = vals[:7]
            F_full = 0.5 * (zBz + 2.0 * zBd + dBd) + L_full
        kkt = gn / max(gscale if stop == "gradient" else max(bn, vn), 1e-300)
        if new_point:
            gnorms.append(gn)
        end = "active_set" if stable else \
            ("gradient" if kkt <= (tol if final else max(tol, stage_tol)) else None)
        if end is not None:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            if final:
                converged, why = True, end
                break
            stage, n_stage, last_full, new_point = stage + 1, 0, False, False
            continue
        if n_iter >= max_iter:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            break
        if not math.isfinite(slope):
            raise FloatingPointError(
                f"the Newton step is not finite at iteration {n_iter + 1} (C={c:g}); lower C or "
                "use dtype='float64'")

        # ---- backtracking Armijo line search (margins are linear in the step)
        def along(eta, zBz=zBz, zBd=zBd, dBd=dBd, psi=psi, c=c):
            """F at z + eta d."""
            return (0.5 * (zBz + 2.0 * eta * zBd + eta * eta * dBd)
                    + fetch_scalars(rows.loss_along(eta, psi, c), xp=xp)[0])

        t0 = time.perf_counter()
        eta, F_next, n_b, accepted = 0.0, F, 0, False
        if slope < 0:
            eta, F_next, n_b, accepted = armijo_search(along, F, slope, phi1=F_full,
                                                       sigma=armijo, factor=backtrack,
                                                       max_backtracks=max_backtracks)
        tm["line_search"] += time.perf_counter() - t0
        n_back += n_b
        if not accepted:
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            why = "line_search"
            converged = final and kkt <= math.sqrt(tol)
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
        if final and decrease_tol is not None and F - F_next <= decrease_tol * abs(F_next):
            history.append(F_next)
            stage_log.append({"loss": k_loss, "C": c, "n_iter": n_stage})
            converged, why, F = True, "decrease", F_next
            break
    bar.close()
    _log.info("%s %s", label, fields(it=n_iter, stop=why, converged=converged, obj=F, kkt=kkt,
                                     seconds=time.perf_counter() - t_start))
    n_incremental, n_recompute = rows.hessian_counts()
    info.update(
        stop=why, active_set_sizes=sizes, plus_set_sizes=plus, step_sizes=steps,
        grad_norms=gnorms, grad_scale=gscale, kkt=kkt, stages=stage_log, smw_steps=n_smw,
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
        self.g = self.kap = self.g_prev = self.kap_prev = self.Pd = None

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
    def start(self, z):
        """Margins at ``z`` (``P z``; None: z = 0)."""
        if z is not None:
            self.o = self.P.matvec(z)
            self.res = self._residual(self.o)

    @combine("sum")
    def gradient_at_zero(self, psi):
        """``Pᵀ(s σ ψ'(r))`` at z = 0 (``‖∇F(0)‖ = C`` times its norm)."""
        xp = self.xp
        g0 = psi.grad(self._residual(xp.zeros_like(self.o)), xp=xp)
        return self.P.rmatvec(self._weighted(self.y * g0 if self.cls else g0))

    @combine("sum")
    def examine(self, psi, c, *, check_stable):
        """Each row's ψ' and curvature at the current margins; returns the unread 0-d counts
        ``[n_u, n_changed, n_active, n_plus(, n_unstable)]`` (rows with ψ' ≠ 0, whose
        curvature changed since the Hessian was built, with ψ'' > 0, with ψ' ≠ 0 and ψ'' = 0,
        and with ``check_stable`` the rows that left their piece of ψ in the last step) and
        the loss term ``c Σ sψ``."""
        xp = self.xp
        g = psi.grad(self.res, xp=xp)
        k = psi.curvature(self.res, xp=xp)
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
    def trial(self, d, psi, c):
        """Keep ``P d`` and return the loss term at the full step."""
        self.Pd = self.P.matvec(d)
        return self.loss_along(1.0, psi, c)

    @combine("sum")
    def loss_along(self, eta, psi, c):
        """The loss term at ``z + eta d`` (margins are linear in the step)."""
        return self.loss_term(self._residual(self.o + eta * self.Pd), psi, c)

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


# ------------------------------------------------------------------ Zhou 2013's reduced SVM
def newton_reduced(P, y, *, loss="squared_hinge", C=1.0, B=None, ridge=1e-8, sample_weight=None,
                   z0=None, tol=1e-6, max_iter=500, stage_tol=1e-4, delta0=1.0, delta_min=1e-4,
                   p0=10.0, p_max=1e4, smw="auto", hessian_update="auto", presolve="auto",
                   armijo=1e-4, backtrack=0.5, max_backtracks=50, memory_budget=None, verbose=0,
                   xp):
    """Newton method for the reduced SVM (17) with the four smooth losses of Zhou (2013): the
    paper's set-up of :func:`semismooth_newton` (losses by name with their continuation, λ,
    the RKHS ridge, zero-weight rows dropped).

    Parameters
    ----------
    P : FeatureOperator or array of shape (m, r)
        Kernel columns of the reduced set, ``P = K(X, X_J)`` (a column of ones appended for an
        offset), float32 or float64. All r × r algebra is done in float64.
    y : array of shape (m,)
        Labels in {−1, +1}.
    loss : {"least_squares", "squared_hinge", "huber_hinge", "logistic"}
    C : float
        Loss weight; the paper's ``λ = 1/(2C)`` (least squares, squared hinge) or ``1/C``.
    B : array of shape (r, r) or None
        Regularizer: None for GSVM (``B = I``, M2); ``K_JJ`` for the RKHS norm (M1).
    ridge : float
        ε added to the Newton Hessian when ``B`` is given (the objective uses ``B + (ε/λ) I``).
    sample_weight : array of shape (m,), optional
        Non-negative weights ``sᵢ`` of the losses; rows with weight 0 are dropped.
    z0 : array of shape (r,), optional
        Starting point (default 0, or a pre-solve, see ``presolve``).
    tol : float
        Stop when ``‖g‖ <= tol · ‖g₀‖`` (g₀: the gradient at z = 0, ``−Σ sᵢ yᵢ Pᵢ`` for every
        loss in the paper's scaling; estimated on the subset after a pre-solve) in the final
        smoothing stage, or — for the piecewise-quadratic losses — when a full Newton step leaves
        the active sets unchanged (the exact minimizer).
    max_iter : int
        Maximum number of Newton steps (over all continuation stages).
    stage_tol : float
        Relative gradient tolerance that ends an intermediate continuation stage.
    delta0, delta_min : float
        Huber continuation: δ from ``delta0`` down to ``max(1e-4, delta_min)`` (× 0.1 a stage).
    p0, p_max : float
        Logistic continuation: p from ``p0`` up to ``p_max`` (× 10 a stage).
    smw : {"auto", "always", "never"}
        SMW solve (28) for GSVM: when ``|I| < r`` ("auto"), at every step ("always", for
        testing) or never.
    hessian_update : {"auto", "incremental", "recompute"}
        How ``P_Iᵀ S P_I`` follows the active set (LS, SH, Huber): (23)/(25) when fewer rows
        change than remain active ("auto"), always incrementally, or recomputed every step.
    presolve : {"auto"} or int or None
        Warm start for large m (:func:`semismooth_newton`): "auto" uses :func:`presolve_rows`
        rows (``max(m/50, 40r, 2000)`` when that is at most m/8, so never for the paper's
        Checkerboard tables) on NumPy, recursively, except for least squares (one Newton step);
        an int that many rows; None disables it.
    armijo, backtrack, max_backtracks : float, float, int
        Armijo constant σ, step reduction factor and maximum reductions of the line search.
    memory_budget : int, str or None
        Bytes for the row blocks of the Hessian and right-hand-side accumulations (None: half
        the free memory of P's device, read once here), for an array ``P``.
    verbose : int
    xp : namespace
        Array namespace of ``P`` (resolved by the caller).

    Returns
    -------
    SolverResult
        As :func:`semismooth_newton`, with ``info["lambda"]``, ``info["stages"]`` as the
        smoothing parameter and Newton steps of each stage and ``info["final_param"]``.
        ``margins`` cover the rows with positive weight.

    Raises
    ------
    ValueError
        For an unknown loss or option, non-positive C, shapes that do not match, labels that
        are not ±1 or negative weights.
    """
    check_loss(loss)
    if smw not in ("auto", "always", "never"):
        raise ValueError(f"smw must be 'auto', 'always' or 'never', got {smw!r}")
    if hessian_update not in ("auto", "incremental", "recompute"):
        raise ValueError("hessian_update must be 'auto', 'incremental' or 'recompute', "
                         f"got {hessian_update!r}")
    for name, v in (("C", C), ("tol", tol), ("stage_tol", stage_tol), ("delta0", delta0),
                    ("delta_min", delta_min), ("p0", p0), ("p_max", p_max)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float)) or not ridge >= 0:
        raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if presolve != "auto" and presolve is not None and (
            isinstance(presolve, bool) or not isinstance(presolve, int) or presolve < 1):
        raise ValueError(f"presolve must be 'auto', None or a positive int, got {presolve!r}")
    P = as_operator(P, memory_budget=memory_budget)  # the budget is read once, here
    m, r = P.shape
    if tuple(y.shape) != (m,):
        raise ValueError(f"y must have shape ({m},), got {tuple(y.shape)}")
    f64 = xp.float64
    dev = P.device.native_device
    s = sample_weight
    if P.distributed:
        pass  # Dask rows: labels and weights come validated from the estimator; rows of
        # weight 0 stay (they add nothing to the loss, gradient or Hessian)
    elif not bool(xp.all((y == 1.0) | (y == -1.0))):
        raise ValueError("y must hold labels -1 and +1 only")
    elif sample_weight is not None:
        s = xp.astype(sample_weight, f64)
        if tuple(s.shape) != (m,):
            raise ValueError(f"sample_weight must have shape ({m},), got {tuple(s.shape)}")
        if not bool(xp.all(s >= 0)) or not bool(xp.all(xp.isfinite(s))):
            raise ValueError("sample_weight must be finite and non-negative")
        keep = s > 0
        if not bool(xp.all(keep)):
            idx = xp.nonzero(keep)[0]
            P, y, s = P.take(idx), xp.take(y, idx, axis=0), xp.take(s, idx, axis=0)
            m = P.shape[0]
        if m == 0:
            raise ValueError("all sample weights are zero")
    lam = c_to_lambda(C, loss)
    if B is not None:
        if tuple(B.shape) != (r, r):
            raise ValueError(f"B must have shape ({r}, {r}), got {tuple(B.shape)}")
        B = xp.astype(B, f64) + (float(ridge) / lam) * _identity(r, xp=xp, device=dev)
    params = _schedule(loss, delta0=delta0, delta_min=delta_min, p0=p0, p_max=p_max)
    if presolve == "auto" and loss == "least_squares":
        presolve = None  # one Newton step solves it
    res = semismooth_newton(
        P, y, [registry_loss(loss, p) for p in params], C=C, B=B, sample_weight=s, z0=z0,
        tol=tol, stop="gradient", stage_tol=stage_tol, max_iter=max_iter, smw=smw,
        hessian_update=hessian_update, tau=LOGISTIC_TAU if loss == "logistic" else 0.0,
        presolve=presolve, armijo=armijo, backtrack=backtrack, max_backtracks=max_backtracks,
        verbose=verbose, label=f"newton {loss}", xp=xp)
    info = res.info
    info["lambda"] = lam
    info["stages"] = [{"param": params[st["loss"]], "C": st["C"], "n_iter": st["n_iter"]}
                      for st in info["stages"]]
    info["final_param"] = info["stages"][-1]["param"] if info["stages"] else params[0]
    return res


__all__ = [
    "LOSSES",
    "LOSS_SCALE",
    "NewtonRows",
    "c_to_lambda",
    "check_loss",
    "lambda_to_c",
    "loss_terms",
    "newton_reduced",
    "presolve_rows",
    "registry_loss",
    "semismooth_newton",
]
