"""Newton solvers for reduced SVMs (Zhou 2013, "Which is better? Regularization in RKHS vs
ℝᵐ on reduced SVMs", sections 3–4).

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

import contextlib
import math
import time

from svmgpu.backend import (
    LinAlgError,
    cho_solve,
    cholesky,
    jittered_cholesky,
    small_blas,
)
from svmgpu.losses import get_loss
from svmgpu.lowrank import CurvatureGram, as_operator
from svmgpu.solvers._linesearch import armijo as armijo_search
from svmgpu.solvers._result import SolverResult

#: Loss names accepted by :func:`newton_reduced`, and the loss of the library's one registry
#: (:mod:`svmgpu.losses`) each one is, with the name of its smoothing parameter: the paper's
#: logistic loss ``log(1 + exp(pu))/p`` is UniSVM's smooth hinge ψ^(6), its Huber loss the
#: classification Huber hinge (named apart from the regression Huber).
LOSSES = ("least_squares", "squared_hinge", "huber_hinge", "logistic")
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


def _auto_presolve_rows(m, r):
    """Rows of the automatic pre-solve: ``max(m/50, 7r, 2000)`` when that is at most m/8."""
    n = max(m // 50, 7 * r, 2000)
    return n if 8 * n <= m else None


# ------------------------------------------------------------------------- blocked products
def _count(mask, xp):
    return int(xp.sum(xp.astype(mask, xp.int64)))


def _identity(n, *, xp, device):
    return xp.eye(n, dtype=xp.float64, device=device)


def solve_smw(U, lam_diag, lam, b, *, xp):
    """Solve ``(λ I + Uᵀ Λ U) z = b`` by the SMW identity (28).

    ``z = (b − Uᵀ (λ Λ⁻¹ + U Uᵀ)⁻¹ U b) / λ``, an |I| × |I| SPD system: O(r |I|²).

    Parameters
    ----------
    U : array of shape (n, r), float64
        The active rows ``P_I``.
    lam_diag : array of shape (n,)
        The positive diagonal of Λ.
    lam : float
    b : array of shape (r,)
    """
    n = U.shape[0]
    if n == 0:
        return b / lam
    M = xp.matmul(U, xp.matrix_transpose(U))
    M = M + _identity(n, xp=xp, device=getattr(U, "device", None)) * (lam / lam_diag)[None, :]
    t = spd_solve(spd_factor(M, xp=xp, allow_jitter=False), xp.matmul(U, b), xp=xp)
    return (b - xp.matmul(t, U)) / lam


def spd_factor(H, *, xp, allow_jitter):
    """Lower Cholesky factor of an SPD matrix; a jittered factor when ``allow_jitter``."""
    with small_blas(H.shape[0], xp=xp):
        try:
            return cholesky(H, lower=True, xp=xp)
        except LinAlgError:
            if not allow_jitter:
                raise
            return jittered_cholesky(H, lower=True, xp=xp)[0]


def spd_solve(L, b, *, xp):
    """Solve ``L Lᵀ x = b`` for the factor of :func:`spd_factor`."""
    with small_blas(L.shape[0], xp=xp):
        return cho_solve((L, True), b, xp=xp)


def _factor_solve(H, rhs, *, xp, allow_jitter):
    """Cholesky solve of the SPD Newton system; a jittered factor for the RKHS model."""
    with small_blas(H.shape[0], xp=xp):
        return spd_solve(spd_factor(H, xp=xp, allow_jitter=allow_jitter), rhs, xp=xp)


# ----------------------------------------------------------------------------- the solver
def newton_reduced(P, y, *, loss="squared_hinge", C=1.0, B=None, ridge=1e-8, sample_weight=None,
                   z0=None, tol=1e-6, max_iter=500, stage_tol=1e-4, delta0=1.0, delta_min=1e-4,
                   p0=10.0, p_max=1e4, smw="auto", hessian_update="auto", presolve="auto",
                   armijo=1e-4, backtrack=0.5, max_backtracks=50, memory_budget=None, verbose=0,
                   xp):
    """Newton method for the reduced SVM (17) with the four smooth losses of Zhou (2013).

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
        loss; estimated on the subset after a pre-solve) in the final smoothing stage, or —
        for the piecewise-quadratic losses — when a full Newton step leaves the active sets
        unchanged (the exact minimizer).
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
        Warm start for large m: first solve the problem on an evenly strided subset of this
        many rows (C scaled by ``Σ s / Σ s_subset`` so the loss term keeps its weight), then
        start the full problem there (and, for Huber / logistic, at the final smoothing
        parameter). From z = 0 every row is active and the first Hessian costs O(m r²);
        from the pre-solve only the rows near the margin are. "auto" uses
        ``max(m/50, 7r, 2000)`` rows when that is at most m/8 (so never for the paper's
        Checkerboard tables), recursively; None disables it.
    armijo, backtrack, max_backtracks : float, float, int
        Armijo constant σ, step reduction factor and maximum reductions of the line search.
    memory_budget : int, str or None
        Bytes for the row blocks of the Hessian and right-hand-side accumulations (None: half
        the free memory of P's device, read once here).
    verbose : int
    xp : namespace
        Array namespace of ``P`` (resolved by the caller).

    Returns
    -------
    SolverResult
        ``coef``: z of shape (r,) (float64). ``objective_history``: the objective (17) in the
        library's scaling ``½ zᵀBz + C Σ sᵢ ψ(uᵢ)`` at each iterate (index 0: the start), for
        the smoothing parameter of that iterate. ``info``: ``lambda``, ``stop`` (``"active_set"``,
        ``"gradient"``, ``"max_iter"`` or ``"line_search"``), ``active_set_sizes`` (|I| per
        iterate), ``plus_set_sizes`` (|I₊|, Huber/logistic), ``step_sizes``, ``grad_norms``,
        ``stages`` (smoothing parameter and Newton steps of each stage), ``smw_steps``,
        ``hessian_incremental`` / ``hessian_recomputed``, ``n_margin_violators``
        (``#{i : yᵢ f(xᵢ) <= 1}``), ``margins`` (``P z``, float64, rows with positive weight)
        and ``presolve`` (the pre-solve's result info, or None).

    Raises
    ------
    ValueError
        For an unknown loss or option, non-positive C, shapes that do not match, labels that
        are not ±1 or negative weights.
    """
    t_start = time.perf_counter()
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
    P = as_operator(P, memory_budget=memory_budget)  # the budget is read once, here
    m, r = P.shape
    if y.shape != (m,):
        raise ValueError(f"y must have shape ({m},), got {tuple(y.shape)}")
    f64 = xp.float64
    dev = P.device.native_device
    y = xp.astype(y, f64)
    if not bool(xp.all((y == 1.0) | (y == -1.0))):
        raise ValueError("y must hold labels -1 and +1 only")
    if sample_weight is None:
        s = xp.ones((m,), dtype=f64, device=dev)
    else:
        s = xp.astype(sample_weight, f64)
        if s.shape != (m,):
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
    kappa_c = 1.0 / lam  # objective (17) in the library's scaling = paper's objective / λ
    B_user = B
    if B is not None:
        if tuple(B.shape) != (r, r):
            raise ValueError(f"B must have shape ({r}, {r}), got {tuple(B.shape)}")
        B = xp.astype(B, f64) + (float(ridge) / lam) * _identity(r, xp=xp, device=dev)
    gsvm = B is None
    piecewise = loss != "logistic"
    kappa = LOSS_SCALE[loss]
    psi_cache = {}

    def psi_of(param):  # one registry loss per smoothing parameter of the continuation
        if param not in psi_cache:
            psi_cache[param] = registry_loss(loss, param)
        return psi_cache[param]

    stages = _schedule(loss, delta0=delta0, delta_min=delta_min, p0=p0, p_max=p_max)

    info = {"lambda": lam, "presolve": None}
    tm = {}

    @contextlib.contextmanager
    def clock(key):
        t0 = time.perf_counter()
        yield
        tm[key] = tm.get(key, 0.0) + time.perf_counter() - t0

    # ---- warm start on a strided subset of the rows (large m only)
    n_pre = None
    if presolve == "auto":
        if loss != "least_squares" and z0 is None:
            n_pre = _auto_presolve_rows(m, r)
    elif presolve is not None:
        if isinstance(presolve, bool) or not isinstance(presolve, int) or presolve < 1:
            raise ValueError(f"presolve must be 'auto', None or a positive int, got {presolve!r}")
        n_pre = presolve if (z0 is None and presolve < m) else None
    stage = 0
    if n_pre is not None:
        t0 = time.perf_counter()
        sub = xp.arange(0, m, max(m // n_pre, 1), device=dev)
        s_sub = xp.take(s, sub, axis=0)
        scale = float(xp.sum(s)) / float(xp.sum(s_sub))
        pre = newton_reduced(
            P.take(sub), xp.take(y, sub, axis=0), loss=loss, C=C * scale,
            B=B_user, ridge=ridge / scale, sample_weight=s_sub, tol=max(tol, 1e-3),
            max_iter=max_iter, stage_tol=stage_tol, delta0=delta0, delta_min=delta_min, p0=p0,
            p_max=p_max, smw=smw, hessian_update=hessian_update,
            presolve="auto" if presolve == "auto" else None, armijo=armijo, backtrack=backtrack,
            max_backtracks=max_backtracks, verbose=verbose, xp=xp)
        z0 = pre.coef
        stage = len(stages) - 1
        info["presolve"] = {"rows": int(sub.shape[0]), "n_iter": pre.n_iter,
                            "converged": pre.converged, "seconds": time.perf_counter() - t0,
                            "presolve": pre.info["presolve"]}
    z = xp.zeros((r,), dtype=f64, device=dev) if z0 is None else xp.astype(xp.asarray(z0), f64)
    if z.shape != (r,):
        raise ValueError(f"z0 must have shape ({r},), got {tuple(z.shape)}")
    o = P.matvec(z)
    if n_pre is not None:  # ‖g₀‖ estimated from the strided subset: saves a pass over P
        gscale = pre.info["grad_scale"] * scale
    else:
        gscale = float(xp.linalg.vector_norm(P.rmatvec(s * y)))
    gscale = max(gscale, 1e-300)
    active_gram = CurvatureGram(P) if piecewise else None

    def quad(a, b_):
        return float(xp.vecdot(a, b_ if gsvm else xp.matmul(B, b_)))

    def evaluate(z, o, param):
        """Everything Newton needs at z: objective, masks, rhs of (20), gradient, solver."""
        u = 1.0 - y * o
        L, L1, L2 = loss_terms(psi_of(param), kappa, u, xp=xp)
        phi = 0.5 * lam * quad(z, z) + float(xp.sum(s * L))
        hmask = (L2 > 0) if piecewise else (L2 >= LOGISTIC_TAU)
        rmask = hmask | ((L1 != 0) if piecewise else (L1 >= LOGISTIC_TAU))
        w = s * y * (L2 * (1.0 - u) + L1)
        ridx = xp.nonzero(rmask)[0]
        n_r = ridx.shape[0]
        with clock("rhs"):
            if 2 * n_r > m:
                rhs = P.rmatvec(xp.where(rmask, w, xp.zeros_like(w)))
            else:
                rhs = P.rmatvec(w, rows=ridx)
        n_i = _count(hmask, xp)
        st = {"u": u, "phi": phi, "rhs": rhs, "n_active": n_i, "n_plus": n_r - n_i,
              "part": None}
        if loss == "squared_hinge":
            st["part"] = (hmask,)
        elif loss == "huber_hinge":
            st["part"] = (hmask, L1 >= 1.0)
        if gsvm and (smw == "always" or (smw == "auto" and n_i < r)):
            with clock("hessian"):
                hidx = xp.nonzero(hmask)[0]
                U = P.take(hidx).to_array(f64)
                lw = xp.take(s * L2, hidx, axis=0)
            Hz = lam * z + xp.matmul(lw * xp.matmul(U, z), U)
            st.update(mode="smw", U=U, lw=lw)
        else:
            with clock("hessian"):
                if piecewise:
                    Hl = active_gram.update(s * L2, mode=hessian_update)  # (23)/(25)
                else:
                    Hl = P.gram(s * L2, rows=xp.nonzero(hmask)[0], nonnegative=True)
            H = Hl + (lam * _identity(r, xp=xp, device=dev) if gsvm else lam * B)
            Hz = xp.matmul(H, z)
            st.update(mode="cholesky", H=H)
        st["g"] = Hz - rhs
        st["gnorm"] = float(xp.linalg.vector_norm(st["g"]))
        return st

    param = stages[stage]
    st = evaluate(z, o, param)
    history = [st["phi"] * kappa_c]
    sizes, plus, steps, gnorms = [st["n_active"]], [st["n_plus"]], [], [st["gnorm"]]
    stage_log = []
    n_iter = n_stage = n_smw = 0
    last_full, prev_part = False, None
    converged, stop = False, "max_iter"
    t_iter = time.perf_counter()
    while True:
        final = stage == len(stages) - 1
        thr = (tol if final else max(tol, stage_tol)) * gscale
        stable = (last_full and st["part"] is not None and prev_part is not None
                  and all(bool(xp.all(a == b)) for a, b in zip(st["part"], prev_part)))
        stable = stable or (last_full and loss == "least_squares")
        if st["gnorm"] <= thr or stable:
            stage_log.append({"param": param, "n_iter": n_stage})
            if final:
                converged, stop = True, ("active_set" if stable else "gradient")
                break
            stage += 1
            param, n_stage = stages[stage], 0
            st = evaluate(z, o, param)
            last_full, prev_part = False, None
            continue
        if n_iter >= max_iter:
            stage_log.append({"param": param, "n_iter": n_stage})
            break
        # ---- Newton equation (20): Cholesky of the r × r Hessian, or SMW (28)
        with clock("solve"):
            if st["mode"] == "smw":
                zbar = solve_smw(st["U"], st["lw"], lam, st["rhs"], xp=xp)
                n_smw += 1
            else:
                zbar = _factor_solve(st["H"], st["rhs"], xp=xp, allow_jitter=True)
        d = zbar - z
        with clock("matvec"):
            od = P.matvec(zbar) - o
        # ---- backtracking Armijo line search; margins are linear in the step
        slope = float(xp.vecdot(st["g"], d))
        zBz, zBd, dBd = quad(z, z), quad(z, d), quad(d, d)

        def along(eta, o=o, od=od, zBz=zBz, zBd=zBd, dBd=dBd, param=param):
            """The objective at z + eta d (margins are linear in eta)."""
            u_t = 1.0 - y * (o + eta * od)
            return (0.5 * lam * (zBz + 2 * eta * zBd + eta * eta * dBd)
                    + float(xp.sum(s * loss_terms(psi_of(param), kappa, u_t, xp=xp,
                                                  derivatives=False)[0])))

        eta, accepted = 1.0, False
        t_ls = time.perf_counter()
        if slope < 0:
            eta, _, _, accepted = armijo_search(along, st["phi"], slope, sigma=armijo,
                                                factor=backtrack, max_backtracks=max_backtracks)
        tm["line_search"] = tm.get("line_search", 0.0) + time.perf_counter() - t_ls
        if not accepted:
            stage_log.append({"param": param, "n_iter": n_stage})
            stop = "line_search"
            converged = final and st["gnorm"] <= math.sqrt(tol) * gscale
            break
        z = z + eta * d
        o = o + eta * od
        n_iter += 1
        n_stage += 1
        prev_part, last_full = st["part"], eta == 1.0
        st = evaluate(z, o, param)
        history.append(st["phi"] * kappa_c)
        sizes.append(st["n_active"])
        plus.append(st["n_plus"])
        steps.append(eta)
        gnorms.append(st["gnorm"])
        if verbose:
            print(f"[newton {loss}] it {n_iter:3d} param {param!s:>8} obj {history[-1]:.8e} "
                  f"|I| {st['n_active']:7d} |g|/|g0| {st['gnorm'] / gscale:.2e} step {eta:g}")
    u = st["u"]
    info.update(
        stop=stop, active_set_sizes=sizes, plus_set_sizes=plus, step_sizes=steps,
        grad_norms=gnorms, grad_scale=gscale, stages=stage_log, smw_steps=n_smw,
        hessian_incremental=active_gram.n_incremental if active_gram else 0,
        hessian_recomputed=active_gram.n_recompute if active_gram else 0,
        n_margin_violators=_count(u >= 0, xp), margins=o, final_param=param,
    )
    now = time.perf_counter()
    timings = {"iterations": now - t_iter, "total": now - t_start, **tm}
    if info["presolve"] is not None:
        timings["presolve"] = info["presolve"]["seconds"]
    return SolverResult(coef=z, n_iter=n_iter, converged=converged, objective_history=history,
                        timings=timings, info=info)


__all__ = [
    "LOSSES",
    "LOSS_SCALE",
    "c_to_lambda",
    "check_loss",
    "lambda_to_c",
    "loss_terms",
    "registry_loss",
    "newton_reduced",
    "solve_smw",
    "spd_factor",
    "spd_solve",
]
