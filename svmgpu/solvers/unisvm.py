"""UniSVM: DCA with a closed-form step for every LS-DC loss (Zhou & Zhou; Algorithm 1).

Objective (the library's convention, DESIGN.md)::

    F(f) = ½‖f‖²_H + C Σᵢ wᵢ ψ(rᵢ),   rᵢ = 1 − yᵢ f(xᵢ)  (classification)
                                      rᵢ = yᵢ − f(xᵢ)    (regression)

which is the paper's model (2) with ``C = 1/(λ m)``. With the LS-DC decomposition
``ψ(u) = A u² − (A u² − ψ(u))`` (15), each DCA step (24) majorizes the concave part at the
current residuals and minimizes a weighted least-squares problem in closed form. Setting its
gradient to zero gives, with ``c = 1/(2 A C)`` and the targets ``t = f + s ψ'(r)/(2A)``
(``s = y`` for classification, ``s = 1`` for regression; the paper writes ``t = ξ − γ/A``
with ``γ`` of (25)):

* full kernel, ``f = K α`` — (26)/(27): ``(c I + D K D) α̃ = D t``, ``α = D α̃`` with
  ``D = diag(√w)`` (``α = (c I + K)⁻¹ t`` without weights);
* low rank, ``K ≈ P Pᵀ``, ``f = P β`` with ``β = P_Bᵀ α_B`` — (29)/(30) in feature
  coordinates: ``(c I + Pᵀ W P) β = Pᵀ W t``. The SPD r × r matrix is factored once by
  Cholesky and reused every iteration (never the non-symmetric matrix of (30)).
  Because ``f = P β``, ``Pᵀ W t = (Pᵀ W P) β + Pᵀ (W s ψ'(r)/(2A))``, and ψ'(r) vanishes for
  most samples of most losses (all well-classified points): one full pass over ``P`` per
  iteration (``P β``) plus a pass over the rows where ψ' ≠ 0.

The paper's λ/2 in (2) and λ in (23)/(26)/its Matlab code differ by a factor 2; we follow
(2) (``C = 1/(λ m)``, ``c = λ m / (2A)``).

DCA decreases F monotonically and converges linearly. The accelerated variant applies
Anderson mixing (depth ``anderson``) to the fixed-point map ``coef ↦ T(coef)`` and accepts
the extrapolated point only if it does not increase F; otherwise it takes the plain DCA step
and restarts the mixing history, so the objective stays monotone.
"""

from __future__ import annotations

import math
import time

from svmgpu.backend import (
    cho_factor,
    cho_solve,
    fetch_scalars,
    is_numpy,
    nonzero_indices,
    random_subset,
)
from svmgpu.lowrank import CurvatureGram, as_operator
from svmgpu.solvers._linesearch import armijo
from svmgpu.solvers._result import SolverResult


class _LowRankForm:
    """``f = P β``, penalty ``½‖β‖²``, step ``(cI + PᵀWP)⁻¹ (PᵀWP β + Pᵀ u)``.

    ``step`` returns the new β and ``Pᵀ u``; the gradient of F is ``β − 2AC·Pᵀu``."""

    def __init__(self, P, G, c, *, xp):
        self.P, self.xp = P, xp  # P: FeatureOperator
        self.G = G  # float64 (r, r): Pᵀ W P
        r = G.shape[0]
        self.chol = cho_factor(G + c * xp.eye(r, dtype=G.dtype, device=getattr(G, "device", None)),
                               xp=xp)
        self.dtype = P.dtype

    def zero(self):
        return self.xp.zeros((self.P.shape[1],), dtype=self.xp.float64,
                             device=self.P.device.native_device)

    def values(self, coef):
        return self.xp.astype(self.P.matvec(coef), self.dtype, copy=False)

    def penalty(self, coef, f):
        return 0.5 * float(self.xp.vecdot(coef, coef))

    def step(self, coef, f, u):
        xp = self.xp
        nz = xp.nonzero(u)[0]
        Pu = self.P.rmatvec(u, rows=nz if nz.shape[0] * 4 < u.shape[0] else None)
        return cho_solve(self.chol, xp.matmul(self.G, coef) + Pu, xp=xp), Pu


class _FullForm:
    """``f = K α``, penalty ``½ αᵀKα``, step ``α = D (cI + DKD)⁻¹ D (f + u)``.

    ``step`` returns the new α and ``u``; the gradient of F is ``K (α − 2AC·u)``."""

    def __init__(self, K, w, c, *, xp):
        self.K, self.xp = K, xp
        m = K.shape[0]
        self.d = None if w is None else xp.sqrt(w)
        M = K if self.d is None else self.d[:, None] * K * self.d[None, :]
        M = xp.astype(M, xp.float64) + c * xp.eye(m, dtype=xp.float64, device=getattr(K, "device", None))
        self.chol = cho_factor(M, xp=xp)

    def zero(self):
        return self.xp.zeros((self.K.shape[0],), dtype=self.xp.float64,
                             device=getattr(self.K, "device", None))

    def values(self, coef):
        xp = self.xp
        return xp.matmul(self.K, xp.astype(coef, self.K.dtype))

    def penalty(self, coef, f):
        return 0.5 * float(self.xp.vecdot(coef, self.xp.astype(f, self.xp.float64)))

    def step(self, coef, f, u):
        xp = self.xp
        # With weights W, u already carries W; the target of the weighted problem is f + u/w
        # on samples with w > 0, i.e. D t = D f + u / D.
        t = xp.astype(f, xp.float64)
        if self.d is None:
            rhs = t + xp.astype(u, xp.float64)
        else:
            d = xp.astype(self.d, xp.float64)
            safe = xp.where(d > 0, d, xp.ones_like(d))
            rhs = d * t + xp.where(d > 0, xp.astype(u, xp.float64) / safe, xp.zeros_like(d))
            return d * cho_solve(self.chol, rhs, xp=xp), xp.astype(u, xp.float64)
        return cho_solve(self.chol, rhs, xp=xp), xp.astype(u, xp.float64)


def _anderson(X_hist, G_hist, x, g, *, xp):
    """Anderson (type II) extrapolation from the last iterates ``X_hist`` and residuals
    ``G_hist`` (lists of (n,) arrays, oldest first), the current iterate ``x`` and residual
    ``g = T(x) − x``. Returns the mixed point."""
    dX = xp.stack([b - a for a, b in zip(X_hist[:-1], X_hist[1:])] + [x - X_hist[-1]], axis=1)
    dG = xp.stack([b - a for a, b in zip(G_hist[:-1], G_hist[1:])] + [g - G_hist[-1]], axis=1)
    M = xp.matmul(xp.matrix_transpose(dG), dG)
    k = M.shape[0]
    reg = 1e-12 * (float(xp.linalg.trace(M)) + 1e-300)
    M = M + reg * xp.eye(k, dtype=M.dtype, device=getattr(M, "device", None))
    coeffs = xp.linalg.solve(M, xp.matmul(xp.matrix_transpose(dG), g)[:, None])[:, 0]
    return x + g - xp.matmul(dX + dG, coeffs)


def unisvm(y, loss, *, C, P=None, K=None, G=None, A=None, task="classification",
           sample_weight=None, warm_start=None, max_iter=1000, tol=1e-5, accelerate=True,
           anderson=5, stop="kkt", verbose=0, xp) -> SolverResult:
    """Run UniSVM (Algorithm 1) on a low-rank factor ``P`` or a full kernel ``K``.

    Parameters
    ----------
    y : array of shape (m,)
        Labels in {−1, +1} (classification) or real targets (regression), P's dtype.
    loss : svmgpu.losses.Loss
        Any LS-DC loss (Table 5).
    C : float
        Loss weight, ``C = 1/(λ m)`` for the paper's λ.
    P : FeatureOperator or array of shape (m, r), optional
        Low-rank features with ``K ≈ P Pᵀ`` (form (29)/(30)).
    K : array of shape (m, m), optional
        The full kernel matrix (form (27)); exactly one of ``P`` and ``K``.
    G : array of shape (r, r), optional
        ``Pᵀ W P`` in float64 if already computed (:meth:`FeatureOperator.gram`).
    A : float, optional
        LS-DC constant (default: the loss's lower bound ``loss.A_min``).
    task : {"classification", "regression"}
    sample_weight : array of shape (m,), optional
    warm_start : array, optional
        Initial coefficients (β of shape (r,) or α of shape (m,)); default: the paper's start
        ``ξ⁰ = y, γ⁰ = 0``, i.e. the least-squares (LS-SVM) solution.
    max_iter : int
    tol : float
        Tolerance of the stopping rule ``stop``.
    stop : {"kkt", "paper"}
        ``"kkt"``: stop when the relative stationarity residual
        ``‖coef − 2AC·v‖ / ‖2AC·v‖ <= tol`` (v = Pᵀu or u: a DCA fixed point has
        ``c·coef = v``, i.e. a zero gradient of F). ``"paper"``: stop when
        ``‖γᵏ − γᵏ⁻¹‖/√m <= tol`` (Algorithm 1 / Appendix C, scaled by √m) or when the
        relative decrease of F is below ``tol`` — both fire early when DCA crawls, so the
        default is ``"kkt"``.
    accelerate : bool
        Anderson-accelerated DCA with a monotone safeguard.
    anderson : int
        Depth of the Anderson history.
    xp : namespace

    Returns
    -------
    SolverResult
        ``coef`` is β (float64, shape (r,)) or α (shape (m,)); ``info`` holds ``A``, ``c``,
        ``n_rejected`` (Anderson steps refused by the safeguard) and ``form``.
    """
    if (P is None) == (K is None):
        raise ValueError("pass exactly one of P (low-rank factor) and K (full kernel)")
    if stop not in ("kkt", "paper"):
        raise ValueError(f"stop must be 'kkt' or 'paper', got {stop!r}")
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    A = loss.A(A)
    c = 1.0 / (2.0 * A * float(C))
    t0 = time.perf_counter()
    w = sample_weight
    if P is not None:
        P = as_operator(P)
        if G is None:
            G = P.gram(w)
        form = _LowRankForm(P, G, c, xp=xp)
    else:
        form = _FullForm(K, w, c, xp=xp)
    t_setup = time.perf_counter() - t0
    m = y.shape[0]
    cls = task == "classification"
    inv2A = 1.0 / (2.0 * A)

    def evaluate(coef):
        f = form.values(coef)
        r = 1.0 - y * f if cls else y - f
        psi = loss.value(r, xp=xp)
        F = form.penalty(coef, f) + float(C) * float(xp.sum(psi if w is None else w * psi))
        g = loss.grad(r, xp=xp)
        return f, g, F

    def correction(g):
        u = (y * g if cls else g) * inv2A
        return u if w is None else w * u

    if warm_start is None:
        # ξ⁰ = y, γ⁰ = 0: the first step solves the least-squares problem from targets y.
        coef = form.step(form.zero(), y * 0.0, y if w is None else w * y)[0]
    else:
        coef = xp.astype(warm_start, xp.float64)
    f, g, F = evaluate(coef)
    history = [F]
    X_hist, R_hist = [], []
    converged, n_rejected, it, kkt = False, 0, 0, float("inf")
    for it in range(1, max_iter + 1):
        Tcoef, v = form.step(coef, f, correction(g))
        v = (2.0 * A * float(C)) * v
        kkt = float(xp.linalg.vector_norm(coef - v)) / max(float(xp.linalg.vector_norm(v)), 1e-300)
        if stop == "kkt" and kkt <= tol:
            converged = True
            it -= 1
            break
        cand, used_aa = Tcoef, False
        if accelerate and anderson > 0:
            resid = Tcoef - coef
            if X_hist:
                cand, used_aa = _anderson(X_hist, R_hist, coef, resid, xp=xp), True
            X_hist.append(coef)
            R_hist.append(resid)
            if len(X_hist) > anderson:
                X_hist.pop(0)
                R_hist.pop(0)
        f_new, g_new, F_new = evaluate(cand)
        if used_aa and not (F_new <= F * (1 + 1e-12) + 1e-300):
            n_rejected += 1
            X_hist, R_hist = [], []
            cand = Tcoef
            f_new, g_new, F_new = evaluate(cand)
        dgamma = 0.5 * float(xp.linalg.vector_norm(g_new - g)) / math.sqrt(m)
        rel = (F - F_new) / max(abs(F_new), 1e-300)
        coef, f, g, F = cand, f_new, g_new, F_new
        history.append(F)
        if verbose and (it % 10 == 0 or it == 1):
            print(f"[unisvm] iter {it:4d}  objective {F:.10g}  kkt {kkt:.3g}  |dγ|/√m {dgamma:.3g}")
        if stop == "paper" and (dgamma <= tol or 0 <= rel <= tol):
            converged = True
            break
    timings = {"setup": t_setup, "total": time.perf_counter() - t0}
    return SolverResult(coef=coef, n_iter=it, converged=converged, objective_history=history,
                        timings=timings,
                        info={"A": A, "c": c, "n_rejected": n_rejected, "kkt": kkt,
                              "form": "lowrank" if P is not None else "full"})


#: Newton presolves on a random subset when the problem has more rows than this.
_PRESOLVE_MIN_ROWS = 40_000
#: The presolve subset is this fraction of the rows.
_PRESOLVE_FRACTION = 0.125


def unisvm_newton(y, loss, *, C, P, task="classification", sample_weight=None,
                  warm_start=None, max_iter=100, tol=1e-5, presolve="auto", random_state=0,
                  memory_budget=None, verbose=0, xp) -> SolverResult:
    """Semi-smooth Newton on the same low-rank problem, for piecewise-quadratic losses.

    Minimizes ``F(β) = ½‖β‖² + C Σ wᵢ ψ(rᵢ)`` with ``f = P β`` (the objective UniSVM's DCA
    decreases) by Newton steps with the generalized Hessian
    ``H = I + C Pᵀ diag(w ψ''(r)) P`` (Zhou 2013, (20)) and an Armijo backtracking line search.
    ``Pᵀ diag(w ψ'') P`` is updated incrementally with the rows whose curvature changed
    (Zhou 2013, (23)/(25)); a step costs one pass over ``P`` (``P d``) plus work on the rows
    where ψ' ≠ 0 or ψ'' changed. For convex losses (least squares, squared hinge, Huber) it
    converges to the minimizer (squared hinge: finite termination once the active set settles);
    for truncated losses to a stationary point, like DCA. Far fewer iterations than DCA when C
    is large (DESIGN.md, "DCA converges linearly").

    Parameters
    ----------
    y : array of shape (m,)
    loss : Loss
        A loss with ``piecewise_quadratic`` (see :meth:`svmgpu.losses.Loss.curvature`).
    C : float
    P : FeatureOperator or array of shape (m, r)
    task, sample_weight, warm_start, max_iter, verbose, xp
        As in :func:`unisvm`.
    tol : float
        Stop when ``‖∇F‖ <= tol · max(‖β‖, ‖C Pᵀ(w s ψ')‖)``.
    presolve : bool or "auto"
        For more than 40,000 rows and no warm start: first solve the same problem on a random
        eighth of the rows (C scaled by 8, recursively, loose tolerance) and start from its β.
        The full problem's first active set is then small, so its Hessian is built from a few
        percent of the rows instead of all of them (the answer is the same: only the start
        changes). ``"auto"``: on NumPy only. On a GPU a full Hessian is a few milliseconds and
        each extra iteration costs more than it saves (H100, ``bench/bench_gpu.py``: Covtype
        solve 0.08 s without vs 0.33 s with; on 16 CPU cores 1M Checkerboard 2.7 s without vs
        0.35 s with).
    random_state : int
        Seed of the presolve subsets.
    memory_budget : int, str or None
        Bounds the row blocks of the Hessian updates.

    Returns
    -------
    SolverResult
        ``coef`` is β (float64, shape (r,)); ``info`` has ``active_sizes`` (rows with ψ'' ≠ 0
        per iteration), ``kkt`` and ``n_backtracks``.
    """
    if not getattr(loss, "piecewise_quadratic", False):
        raise ValueError(f"the Newton solver needs a piecewise-quadratic loss, not {loss.name!r}")
    t0 = time.perf_counter()
    P = as_operator(P, memory_budget=memory_budget)  # the budget is read once, here
    m, r = P.shape
    cls = task == "classification"
    C = float(C)
    w = sample_weight
    dev = P.device.native_device
    eye = xp.eye(r, dtype=xp.float64, device=dev)
    n_presolve = 0
    if presolve not in (True, False, "auto"):
        raise ValueError(f"presolve must be True, False or 'auto', got {presolve!r}")
    if presolve == "auto":
        presolve = is_numpy(xp)
    if presolve and warm_start is None and m > _PRESOLVE_MIN_ROWS:
        k = int(m * _PRESOLVE_FRACTION)
        sub = random_subset(m, k, seed=random_state, device=P.device)
        pre = unisvm_newton(xp.take(y, sub), loss, C=C * m / k, P=P.take(sub),
                            task=task, sample_weight=None if w is None else xp.take(w, sub),
                            max_iter=max_iter, tol=max(tol, 1e-2), presolve=True,
                            random_state=random_state + 1,
                            verbose=verbose, xp=xp)
        warm_start = pre.coef
        n_presolve = pre.n_iter + pre.info.get("n_presolve_iter", 0)

    matvec = P.matvec

    def rmatvec_rows(u, mask, n):
        """Pᵀ u using only the ``n`` rows where ``mask`` (u ≠ 0) is set."""
        return P.rmatvec(u, rows=nonzero_indices(mask, n, xp=xp) if n * 4 < m else None)

    y64 = xp.astype(y, xp.float64)
    w64 = None if w is None else xp.astype(w, xp.float64)

    def objective_parts(beta, f):
        """Residuals and the objective, the latter as a 0-d device array (no synchronisation)."""
        res = 1.0 - y64 * f if cls else y64 - f
        psi = loss.value(res, xp=xp)
        return res, 0.5 * xp.vecdot(beta, beta) + C * xp.sum(psi if w is None else w64 * psi)

    beta = xp.zeros((r,), dtype=xp.float64, device=dev) if warm_start is None else \
        xp.astype(warm_start, xp.float64)
    f = matvec(beta) if warm_start is not None else xp.zeros((m,), dtype=xp.float64, device=dev)
    res, F = objective_parts(beta, f)
    F = fetch_scalars(F, xp=xp)[0]
    hessian = CurvatureGram(P)  # Pᵀ diag(w ψ'') P, updated (23)/(25)
    history, active_sizes = [F], []
    converged, n_back, it, kkt = False, 0, 0, float("inf")
    # Two device->host reads per iteration: the row counts (which rows enter the gradient and
    # the Hessian update), then the stopping test, the slope and the full step's objective.
    for it in range(1, max_iter + 1):
        g = loss.grad(res, xp=xp)
        u = (y64 * g if cls else g) if w is None else w64 * (y64 * g if cls else g)
        k_new = loss.curvature(res, xp=xp)
        if w is not None:
            k_new = w64 * k_new
        u_mask, ch_mask, act_mask = u != 0, k_new != hessian.kappa, k_new != 0
        n_u, n_ch, n_act = (int(c) for c in fetch_scalars(
            xp.count_nonzero(u_mask), xp.count_nonzero(ch_mask), xp.count_nonzero(act_mask), xp=xp))
        v = C * rmatvec_rows(u, u_mask, n_u)
        grad = beta - v
        M = hessian.update(k_new, changed=ch_mask, active=act_mask, n_changed=n_ch,
                           n_active=n_act)
        d = -cho_solve(cho_factor(eye + C * M, check=False, xp=xp), grad, xp=xp)
        Pd = matvec(d)
        res_t, F_t = objective_parts(beta + d, f + Pd)
        g_norm, b_norm, v_norm, slope, F_t = fetch_scalars(
            xp.linalg.vector_norm(grad), xp.linalg.vector_norm(beta), xp.linalg.vector_norm(v),
            xp.vecdot(grad, d), F_t, xp=xp)
        kkt = g_norm / max(b_norm, v_norm, 1e-300)
        if kkt <= tol:
            converged = True
            it -= 1
            break
        if not math.isfinite(slope):
            raise FloatingPointError(
                f"the Newton step is not finite at iteration {it} (the Hessian I + C·PᵀΛP with "
                f"C={C:g} could not be factored); lower C or use dtype='float64'")
        active_sizes.append(n_act)
        trial = {1.0: res_t}

        def along(eta, trial=trial, beta=beta, d=d, f=f, Pd=Pd):
            """The objective at beta + eta d (margins are linear in eta)."""
            trial[eta], F_eta = objective_parts(beta + eta * d, f + eta * Pd)
            return fetch_scalars(F_eta, xp=xp)[0]

        step, F_t, k, _ = armijo(along, F, slope, phi1=F_t)
        n_back += k
        res_t = trial[step]
        beta = beta + step * d
        f = f + step * Pd
        if it % 20 == 0:  # refresh f against drift of the incremental updates
            f = matvec(beta)
            res_t, F_t = objective_parts(beta, f)
            F_t = fetch_scalars(F_t, xp=xp)[0]
        res, F = res_t, F_t
        history.append(F)
        if verbose:
            print(f"[unisvm-newton] iter {it:3d}  objective {F:.10g}  kkt {kkt:.3g}  "
                  f"active {n_act}  step {step:g}")
    return SolverResult(coef=beta, n_iter=it, converged=converged, objective_history=history,
                        timings={"total": time.perf_counter() - t0},
                        info={"active_sizes": active_sizes, "kkt": kkt, "n_backtracks": n_back,
                              "n_presolve_iter": n_presolve, "form": "lowrank-newton"})
