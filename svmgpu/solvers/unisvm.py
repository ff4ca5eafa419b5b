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

import logging
import math
import time

from svmgpu._log import fields, get_logger, honours_verbose, progress
from svmgpu.backend import cho_factor, cho_solve
from svmgpu.lowrank import as_operator, combine
from svmgpu.solvers._result import SolverResult
from svmgpu.solvers.newton import NewtonOptions, semismooth_newton

_log = get_logger("unisvm")

#: The level ratio of the rounded curvature of the losses whose ψ'' is smooth
#: (:func:`~svmgpu.solvers.newton.level_curvature`; measured in bench/bench_losses.py).
CURVATURE_LEVELS = 2.0
#: Lengthenings of an accepted full Newton step for a non-convex loss (×2 each; see
#: :class:`~svmgpu.solvers.newton.NewtonOptions`).
MAX_EXTENSIONS = 8


class DCARows:
    """The row side of UniSVM's DCA: features ``P`` (``f = P coef``), labels, weights and the
    loss's derivative ψ'(r) at the current iterate, behind methods whose results are small
    (0-d arrays, r-vectors, the r × r ``PᵀWP``) and add over any split of the rows (each method
    declares it, :func:`~svmgpu.lowrank.combine`): a Dask partition runs this same code on its
    rows (:func:`svmgpu.distributed.dask_rows`). The m-long :meth:`correction` of the full form
    has no distributed form.

    Parameters
    ----------
    P : FeatureOperator
    y : array of shape (m,)
    sample_weight : array of shape (m,), optional
    loss : Loss
    task : {"classification", "regression"}
    A : float
        The LS-DC constant (the correction is ``s ψ'(r) / (2A)``).
    """

    distributed = False

    def __init__(self, P, y, sample_weight=None, *, loss, task, A):
        self.P, self.xp, self.shape, self.device = P, P.xp, P.shape, P.device
        self.loss, self.cls, self.inv2A = loss, task == "classification", 1.0 / (2.0 * A)
        self.y, self.w = y, sample_weight
        self.f = self.g = self.f_new = self.g_new = None

    @combine("sum")
    def gram(self):
        """``PᵀWP`` (float64)."""
        return self.P.gram(self.w)

    @combine("sum")
    def targets(self):
        """``Pᵀ W y``: the right-hand side of the least-squares start (ξ⁰ = y, γ⁰ = 0)."""
        return self.P.rmatvec(self.y if self.w is None else self.w * self.y)

    @combine("sum")
    def evaluate(self, coef):
        """The loss term ``Σ wᵢ ψ(rᵢ)`` at ``coef`` (0-d), keeping f and ψ' as candidates."""
        xp = self.xp
        self.f_new = xp.astype(self.P.matvec(coef), self.P.dtype, copy=False)
        r = 1.0 - self.y * self.f_new if self.cls else self.y - self.f_new
        psi = self.loss.value(r, xp=xp)
        self.g_new = self.loss.grad(r, xp=xp)
        return xp.sum(psi if self.w is None else self.w * psi)

    @combine("sum")
    def accept(self):
        """Make the candidate current; returns ``Σ (ψ'_new − ψ')²`` (0 at the start)."""
        xp = self.xp
        d = 0.0 if self.g is None else xp.sum((self.g_new - self.g) ** 2)
        self.f, self.g = self.f_new, self.g_new
        return d

    def correction(self):
        """``u = W s ψ'(r) / (2A)`` at the current iterate (shape (m,))."""
        u = (self.y * self.g if self.cls else self.g) * self.inv2A
        return u if self.w is None else self.w * u

    @combine("sum")
    def correction_product(self):
        """``Pᵀu``, over the rows where ψ' ≠ 0 (gathered when they are under a quarter)."""
        xp = self.xp
        u = self.correction()
        nz = xp.nonzero(u)[0]
        return self.P.rmatvec(u, rows=nz if nz.shape[0] * 4 < u.shape[0] else None)


class _LowRankForm:
    """``f = P β``, penalty ``½‖β‖²``, step ``(cI + PᵀWP)⁻¹ (PᵀWP β + Pᵀ u)``.

    ``step`` returns the new β and ``Pᵀ u``; the gradient of F is ``β − 2AC·Pᵀu``. The rows
    (:class:`DCARows`, or their Dask partitions) give every sum over samples."""

    def __init__(self, rows, G, c, C, *, xp):
        self.rows, self.xp, self.C = rows, xp, float(C)
        self.G = rows.gram() if G is None else G  # float64 (r, r): Pᵀ W P
        r = self.G.shape[0]
        self.chol = cho_factor(self.G + c * xp.eye(r, dtype=self.G.dtype,
                                                   device=getattr(self.G, "device", None)), xp=xp)

    def zero(self):
        return self.xp.zeros((self.G.shape[0],), dtype=self.xp.float64,
                             device=getattr(self.G, "device", None))

    def start(self):
        return cho_solve(self.chol, self.rows.targets(), xp=self.xp)

    def evaluate(self, coef):
        xp = self.xp
        return 0.5 * float(xp.vecdot(coef, coef)) + self.C * float(self.rows.evaluate(coef))

    def accept(self):
        return float(self.rows.accept())

    def step(self, coef):
        Pu = self.rows.correction_product()
        return cho_solve(self.chol, self.xp.matmul(self.G, coef) + Pu, xp=self.xp), Pu


class _FullForm:
    """``f = K α``, penalty ``½ αᵀKα``, step ``α = D (cI + DKD)⁻¹ D (f + u)``.

    ``step`` returns the new α and ``u``; the gradient of F is ``K (α − 2AC·u)``. The
    per-sample terms come from :class:`DCARows` over ``K`` as features."""

    def __init__(self, rows, K, w, c, C, *, xp):
        self.rows, self.K, self.xp, self.C = rows, K, xp, float(C)
        m = K.shape[0]
        self.d = None if w is None else xp.sqrt(w)
        M = K if self.d is None else self.d[:, None] * K * self.d[None, :]
        M = xp.astype(M, xp.float64) + c * xp.eye(m, dtype=xp.float64, device=getattr(K, "device", None))
        self.chol = cho_factor(M, xp=xp)

    def zero(self):
        return self.xp.zeros((self.K.shape[0],), dtype=self.xp.float64,
                             device=getattr(self.K, "device", None))

    def start(self):
        # ξ⁰ = y, γ⁰ = 0: the least-squares problem from targets y (f = 0, u = W y)
        rows = self.rows
        return self._solve(self.xp.zeros_like(rows.y), rows.y if rows.w is None else
                           rows.w * rows.y)

    def evaluate(self, coef):
        xp = self.xp
        loss = float(self.rows.evaluate(coef))
        return 0.5 * float(xp.vecdot(coef, xp.astype(self.rows.f_new, xp.float64))) + \
            self.C * loss

    def accept(self):
        return float(self.rows.accept())

    def step(self, coef):
        u = self.rows.correction()
        return self._solve(self.rows.f, u), self.xp.astype(u, self.xp.float64)

    def _solve(self, f, u):
        xp = self.xp
        # With weights W, u already carries W; the target of the weighted problem is f + u/w
        # on samples with w > 0, i.e. D t = D f + u / D.
        t = xp.astype(f, xp.float64)
        if self.d is None:
            return cho_solve(self.chol, t + xp.astype(u, xp.float64), xp=xp)
        d = xp.astype(self.d, xp.float64)
        safe = xp.where(d > 0, d, xp.ones_like(d))
        rhs = d * t + xp.where(d > 0, xp.astype(u, xp.float64) / safe, xp.zeros_like(d))
        return d * cho_solve(self.chol, rhs, xp=xp)


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


@honours_verbose
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
    verbose : int
        1: a summary line (and a progress bar with tqdm), 2: a line per DCA iteration, through
        the ``svmgpu.unisvm`` logger (fields: :mod:`svmgpu._log`; ``dgamma`` is
        ``‖γᵏ − γᵏ⁻¹‖/√m``).
    xp : namespace

    Returns
    -------
    SolverResult
        ``coef`` is β (float64, shape (r,)) or α (shape (m,)); ``info`` holds ``A``, ``c``,
        ``n_rejected`` (Anderson steps refused by the safeguard), ``form`` and ``margins``
        (``f = P coef`` or ``K coef`` at the returned coefficients, kept from the last
        evaluation; None on Dask, where they stay with their partitions).
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
        rows = P.rows(DCARows, y, w, loss=loss, task=task, A=A)  # (on Dask: per partition)
        form = _LowRankForm(rows, G, c, C, xp=xp)
    else:
        rows = DCARows(as_operator(K), y, w, loss=loss, task=task, A=A)
        form = _FullForm(rows, K, w, c, C, xp=xp)
    t_setup = time.perf_counter() - t0
    m = y.shape[0]

    coef = form.start() if warm_start is None else xp.astype(warm_start, xp.float64)
    F = form.evaluate(coef)
    form.accept()
    history = [F]
    X_hist, R_hist = [], []
    converged, n_rejected, it, kkt = False, 0, 0, float("inf")
    bar = progress("unisvm DCA")
    for it in range(1, max_iter + 1):
        Tcoef, v = form.step(coef)
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
        F_new = form.evaluate(cand)
        if used_aa and not (F_new <= F * (1 + 1e-12) + 1e-300):
            n_rejected += 1
            X_hist, R_hist = [], []
            cand = Tcoef
            F_new = form.evaluate(cand)
        dgamma = 0.5 * math.sqrt(form.accept()) / math.sqrt(m)
        rel = (F - F_new) / max(abs(F_new), 1e-300)
        coef, F = cand, F_new
        history.append(F)
        bar.update(1, obj=F, kkt=kkt)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(fields(it=it, obj=F, kkt=kkt, dgamma=dgamma))
        if stop == "paper" and (dgamma <= tol or 0 <= rel <= tol):
            converged = True
            break
    bar.close()
    timings = {"setup": t_setup, "total": time.perf_counter() - t0}
    _log.info(fields(it=it, converged=converged, obj=F, kkt=kkt, seconds=timings["total"]))
    return SolverResult(coef=coef, n_iter=it, converged=converged, objective_history=history,
                        timings=timings,
                        info={"A": A, "c": c, "n_rejected": n_rejected, "kkt": kkt,
                              "form": "lowrank" if P is not None else "full",
                              "margins": None if rows.distributed else rows.f})


def unisvm_newton(y, loss, *, C, P, task="classification", sample_weight=None,
                  warm_start=None, max_iter=100, tol=1e-5, presolve="auto", memory_budget=None,
                  verbose=0, xp) -> SolverResult:
    """Newton steps on the same low-rank problem, for every LS-DC loss.

    Minimizes ``F(β) = ½‖β‖² + C Σ wᵢ ψ(rᵢ)`` with ``f = P β`` (the objective UniSVM's DCA
    decreases) by the library's one Newton method
    (:func:`svmgpu.solvers.newton.semismooth_newton`, ``B = I``): Hessian
    ``H = I + C Pᵀ diag(w κ(r)) P`` with ``κ = max(ψ'', 0)`` (:meth:`svmgpu.losses.Loss.curvature`),
    updated with the rows whose curvature changed (Zhou 2013, (23)/(25)), SMW (28) while fewer
    rows are active than the rank, and an Armijo line search on the true F.

    * Piecewise-quadratic losses (least squares, squared hinge, Huber hinge, smoothed ramp (18),
      their truncations, Huber, truncated Huber): the generalized Hessian of Zhou 2013 (20);
      convex ones converge to the minimizer (finite termination once the active sets settle).
    * Smooth losses (smooth hinge, smoothed ramp (19), exponential loss (20), smooth
      ε-insensitive and absolute losses): the curvature rounded to powers of
      :data:`CURVATURE_LEVELS` (:func:`~svmgpu.solvers.newton.level_curvature`), so the Hessian
      follows the few rows whose level changed; linear convergence with a small constant.
    * Non-convex losses: the curvature of ψ's convex part (negative ψ'' clipped to 0), so
      ``H ⪰ I`` and each direction is a descent direction; the line search decreases F
      monotonically like DCA (whose majorant uses the constant curvature 2A ≥ ψ'' instead,
      hence its slow linear rate), and the method stops at a stationary point of F.

    DCA (:func:`unisvm`) remains for the full-kernel form and as ``solver="dca"``.

    Parameters
    ----------
    y : array of shape (m,)
    loss : Loss
        Any loss of the registry.
    C : float
    P : FeatureOperator or array of shape (m, r)
    task, sample_weight, warm_start, max_iter, verbose, xp
        As in :func:`unisvm`.
    tol : float
        Stop when ``‖∇F‖ <= tol · max(‖β‖, ‖C Pᵀ(w s ψ')‖)`` (at a stationary point β and
        ``C Pᵀ(w s ψ')`` balance: the number DCA's ``stop="kkt"`` tests); for a truncated loss
        (``loss.gradient_jumps``) also when a step lowers F by at most ``tol · |F|`` (``decrease_tol`` of
        :class:`~svmgpu.solvers.newton.NewtonOptions`: the kink of a truncated loss keeps
        the gradient test from holding until no row crosses it).
    presolve : bool or "auto"
        Without a warm start, first solve the same problem on an evenly strided subset of
        :func:`~svmgpu.solvers.newton.presolve_rows` rows (C scaled up, recursively, loose
        tolerance) and start from its β: the full problem's first active set is then small,
        so its Hessian is built from a few percent of the rows instead of all of them (only
        the start changes). ``"auto"``: on NumPy only (on a GPU a full Hessian is cheap; see
        :class:`svmgpu.solvers.newton.NewtonOptions`).
    memory_budget : int, str or None
        Bounds the row blocks of an array ``P`` (a FeatureOperator has its own).

    Returns
    -------
    SolverResult
        ``coef`` is β (float64, shape (r,)); ``info`` as
        :func:`~svmgpu.solvers.newton.semismooth_newton`'s (``active_set_sizes``, ``kkt``,
        ``n_backtracks``, ``n_presolve_iter``, ...) with ``form = "lowrank-newton"``.
    """
    if presolve not in (True, False, "auto"):
        raise ValueError(f"presolve must be True, False or 'auto', got {presolve!r}")
    options = NewtonOptions(tol=tol, stop="kkt", max_iter=max_iter, presolve=presolve,
                            curvature_levels=CURVATURE_LEVELS, max_extensions=MAX_EXTENSIONS,
                            decrease_tol=tol if loss.gradient_jumps else None)
    res = semismooth_newton(
        as_operator(P, memory_budget=memory_budget), y, [loss], C=C, task=task,
        sample_weight=sample_weight, z0=warm_start, options=options, verbose=verbose,
        label="unisvm-newton", xp=xp)
    res.info["form"] = "lowrank-newton"
    return res
