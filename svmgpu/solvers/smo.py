"""The exact kernel SVM's dual by sequential minimal optimization, for the Huber losses that the
exact path's primal Newton (:mod:`svmgpu.solvers.exact`) minimizes: the same model, for the
problems where that Newton iteration crawls.

J. C. Platt, "Fast training of support vector machines using sequential minimal optimization",
1998; R.-E. Fan, P.-H. Chen and C.-J. Lin, "Working set selection using second order
information for training support vector machines", JMLR 6, 2005 (the working set of
Algorithm 1, "WSS 2", and the two-variable update of its Section 6; LIBSVM's solver, which
scikit-learn's ``SVC``/``SVR`` run).

The dual. A convex loss ψ with conjugate ψ* gives, for ``F(α, b) = ½ αᵀKα + C Σᵢ sᵢ ψ(rᵢ)``
(``f = Kα + b``), the dual ``max Σᵢ −Cᵢ ψ*(βᵢ / Cᵢ) ...`` over ``0 ≤ β ≤ C s``. For the Huber
hinge of half-width δ (``ψ(u) = (u + δ)² / (4δ)`` on ``|u| < δ``, ``u = 1 − y f``), ``ψ*(a) =
δa² − δa`` on ``[0, 1]``, so with ``Cᵢ = C sᵢ`` the problem is LIBSVM's

    min ½ βᵀ(Q + D)β + pᵀβ   s.t.  σᵀβ = 0,  0 ≤ β ≤ C s,

``Q = (σσᵀ) ∘ K``, ``σ = y``, ``p = −(1 + δ)``, ``D = diag(2δ / Cᵢ)``, and ``α = σ ∘ β``. For the
ε-insensitive loss with corners of half-width δ (``u = y − f``), ``ψ*(a) = (ε − δ)|a| + δa²``:
β holds ``(α⁺, α⁻)`` (2m variables), ``σ = (1, −1)``, ``p = (ε − δ − y, ε − δ + y)``, Q the
kernel of each variable's row, ``D = diag(2δ / Cᵢ)`` on both halves, and ``α = α⁺ − α⁻``. At
δ → 0 these are the hinge's and ε-insensitive loss's duals of LIBSVM.

Each iteration picks the maximal violating variable i and, among the variables that can move
against it, the j of the largest second-order decrease (WSS 2), and solves the two-variable
problem in closed form, clipped to the box; the gradient moves by two kernel rows. It stops
where the largest violation ``max_{I_up} −σ∇ − min_{I_low} −σ∇`` is at most ``tol`` (LIBSVM's
rule, in the units of the margins). The intercept is ``−σ∇`` averaged over the free variables
(LIBSVM's ρ with its sign turned), or the middle of its bounds where none is free.

Each iteration reads a few scalars to the host (the working set): fit for the small problems it
is used on (:data:`svmgpu.estimators.svc.SMO_MAX_ROWS`), where its cost is m per iteration.
"""

from __future__ import annotations

import math
import time

from svmgpu.backend import fetch_scalars, product_in_float64, set_rows, vecdot
from svmgpu.kernels import KernelRows
from svmgpu.solvers._result import SolverResult

#: The losses :func:`smo` solves, by task.
SMO_LOSSES = {"classification": "huber_hinge", "regression": "huber_epsilon_insensitive"}

#: The least ``a_ij`` of the working set's second-order term (LIBSVM's ``TAU``: a kernel that is
#: not positive definite on the pair).
_TAU = 1e-12


def smo(K, y, loss, *, C, xp, task, sample_weight=None, tol=1e-3, max_iter=None,
        start=None):
    """Minimize ``½ αᵀKα + C Σ sᵢ ψ(rᵢ)`` over α and an unpenalized intercept b by SMO on
    its dual (see the module), for the Huber hinge (classification, ``y`` in {−1, 1}) or the
    Huber ε-insensitive loss (regression).

    Parameters
    ----------
    K : array of shape (m, m)
        The kernel matrix (a :class:`~svmgpu.kernels.KernelRows` is computed whole).
    y : array of shape (m,)
        Labels ±1, or targets.
    loss : Loss
        ``"huber_hinge"`` (classification) or ``"huber_epsilon_insensitive"`` (regression).
    C : float
    task : {"classification", "regression"}
    sample_weight : array of shape (m,), optional
        ``sᵢ ≥ 0`` (row i's bound ``C sᵢ``; a row of weight 0 keeps ``αᵢ = 0``).
    tol : float
        The largest violation of the optimality conditions left (LIBSVM's ``eps``).
    max_iter : int, optional
        Iterations at most (default ``max(100_000, 100 m)``).
    start : array of shape (m,), optional
        The α of a solution of this function for the same ``C`` and weights (another loss's,
        such as wider corners: a point of the same box with ``Σ α = 0``) to start from;
        otherwise α = 0.

    Returns
    -------
    SolverResult
        ``coef`` α (f = Kα + b), ``info["intercept"]`` b, ``info["margins"]`` Kα + b, the
        objective F at the end in ``objective_history``.
    """
    if task not in SMO_LOSSES:
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if loss.name != SMO_LOSSES[task]:
        raise ValueError(f"smo solves the loss {SMO_LOSSES[task]!r} for {task}; got "
                         f"{loss.name!r}")
    t0 = time.perf_counter()
    if isinstance(K, KernelRows):
        K = K.full()
    f64 = xp.float64
    m = int(K.shape[0])
    dev = getattr(K, "device", None)
    C = float(C)
    y = xp.astype(y, f64)
    w = xp.ones((m,), dtype=f64, device=dev) if sample_weight is None else \
        xp.astype(sample_weight, f64)
    delta = float(loss.params["delta"])
    reg = task == "regression"
    Cm = C * w
    if reg:
        shift = float(loss.params["epsilon"]) - delta
        sig = xp.concat([xp.ones((m,), dtype=f64, device=dev),
                         -xp.ones((m,), dtype=f64, device=dev)])
        p = xp.concat([shift - y, shift + y])
        bound = xp.concat([Cm, Cm])
    else:
        sig = y
        p = xp.full((m,), -(1.0 + delta), dtype=f64, device=dev)
        bound = Cm
    n = int(p.shape[0])
    fixed = bound <= 0  # (weight 0: its variable stays 0)
    D = xp.where(fixed, 0.0, 2.0 * delta / xp.where(fixed, 1.0, bound))
    diag = xp.astype(xp.linalg.diagonal(K), f64)
    QD = (xp.concat([diag, diag]) if reg else diag) + D

    def spread(v):
        """An m-vector over the n variables (each variable's row)."""
        return xp.concat([v, v]) if reg else v

    def row(t):
        """K's row of variable t, in float64 (a float32 K is read a row at a time)."""
        return xp.astype(K[t % m, ...], f64)

    if start is None:
        beta = xp.zeros((n,), dtype=f64, device=dev)  # (β = 0: the dual's gradient is p)
        G = p
    else:
        a0 = xp.astype(start, f64)
        beta = xp.minimum(xp.maximum(xp.concat([a0, -a0]) if reg else sig * a0, 0.0), bound)
        G = p + sig * spread(product_in_float64(K, _alpha(beta, sig, m, reg), xp=xp)) + \
            D * beta
    max_iter = max(100_000, 100 * m) if max_iter is None else int(max_iter)
    inf = math.inf
    n_iter, converged = 0, False
    up, low = _movable(beta, bound, sig)
    while n_iter < max_iter:
        v = -sig * G
        vu = xp.where(up, v, -inf)
        i, gmax, gmin = fetch_scalars(xp.argmax(vu), xp.max(vu),
                                      xp.min(xp.where(low, v, inf)), xp=xp)
        if gmax - gmin <= tol:
            converged = True
            break
        n_iter += 1
        i = int(i)
        Ri = row(i)  # (its m values; Ki over the n variables)
        Ki = spread(Ri)
        b = gmax - v
        # (the largest decrease b² / a over I_low below gmax: WSS 2)
        (j,) = fetch_scalars(xp.argmax(xp.where(low & (b > 0), b * b / xp.maximum(
            QD[i] + QD - 2.0 * Ki, _TAU), -inf)), xp=xp)
        j = int(j)
        Gi, Gj, Bi, Bj, Ci, Cj, si, sj, Qdi, Qdj, Kij, Di, Dj = fetch_scalars(
            G[i], G[j], beta[i], beta[j], bound[i], bound[j], sig[i], sig[j], QD[i], QD[j],
            Ki[j], D[i], D[j], xp=xp)
        ni, nj = _pair(Gi, Gj, Bi, Bj, Ci, Cj, si, sj, Qdi, Qdj, si * sj * Kij)
        di, dj = ni - Bi, nj - Bj
        if di == 0.0 and dj == 0.0:  # (no progress: rounding at the bound)
            break
        G = G + sig * spread(di * si * Ri + dj * sj * row(j))
        idx = xp.asarray([i, j], dtype=xp.int64, device=dev)
        G = set_rows(G, idx, xp.take(G, idx) + xp.asarray([Di * di, Dj * dj], dtype=f64,
                                                          device=dev), xp=xp)
        beta = set_rows(beta, idx, xp.asarray([ni, nj], dtype=f64, device=dev), xp=xp)
        (ui, li), (uj, lj) = _movable(ni, Ci, si), _movable(nj, Cj, sj)  # (on the host)
        up = set_rows(up, idx, xp.asarray([ui, uj], device=dev), xp=xp)
        low = set_rows(low, idx, xp.asarray([li, lj], device=dev), xp=xp)
    alpha = _alpha(beta, sig, m, reg)
    b = _intercept(-sig * G, beta, sig, bound, fixed, xp=xp)
    Ka = product_in_float64(K, alpha, xp=xp)
    margins = Ka + b
    r = y - margins if reg else 1.0 - y * margins
    vals = loss.value(r, xp=xp)
    (aKa, total) = fetch_scalars(vecdot(alpha, Ka, xp=xp), xp.sum(w * vals), xp=xp)
    obj = 0.5 * aKa + C * total
    return SolverResult(coef=alpha, n_iter=n_iter, converged=converged,
                        objective_history=[obj], timings={"solve": time.perf_counter() - t0},
                        info={"intercept": b, "margins": margins, "stalled": False,
                              "n_presolve_iter": 0, "solver": "smo"})


def _movable(beta, bound, sig):
    """``(up, low)``: whether each variable can move up / down along σ (LIBSVM's I_up and
    I_low; a bound of 0, weight 0, in neither), for arrays or host floats alike."""
    free = bound > 0
    up = free & (((sig > 0) & (beta < bound)) | ((sig < 0) & (beta > 0)))
    low = free & (((sig > 0) & (beta > 0)) | ((sig < 0) & (beta < bound)))
    return up, low


def _alpha(beta, sig, m, reg):
    """α from the dual variables: ``σ β`` (classification), ``α⁺ − α⁻`` (regression)."""
    return beta[:m] - beta[m:] if reg else sig * beta


def _pair(Gi, Gj, Bi, Bj, Ci, Cj, si, sj, Qdi, Qdj, Qij):
    """The two-variable subproblem's solution ``(βᵢ, βⱼ)``, clipped to the box (Fan, Chen and
    Lin 2005, Section 6; LIBSVM's ``Solver::Solve``)."""
    if si != sj:
        quad = max(Qdi + Qdj + 2.0 * Qij, _TAU)
        step = (-Gi - Gj) / quad
        diff = Bi - Bj
        bi, bj = Bi + step, Bj + step
        if diff > 0:
            if bj < 0:
                bj, bi = 0.0, diff
        elif bi < 0:
            bi, bj = 0.0, -diff
        if diff > Ci - Cj:
            if bi > Ci:
                bi, bj = Ci, Ci - diff
        elif bj > Cj:
            bj, bi = Cj, Cj + diff
    else:
        quad = max(Qdi + Qdj - 2.0 * Qij, _TAU)
        step = (Gi - Gj) / quad
        total = Bi + Bj
        bi, bj = Bi - step, Bj + step
        if total > Ci:
            if bi > Ci:
                bi, bj = Ci, total - Ci
        elif bj < 0:
            bj, bi = 0.0, total
        if total > Cj:
            if bj > Cj:
                bj, bi = Cj, total - Cj
        elif bi < 0:
            bi, bj = 0.0, total
    return bi, bj


def _intercept(v, beta, sig, bound, fixed, *, xp):
    """b from ``v = −σ∇``: its mean over the free variables, else the middle of the bounds that
    the variables at their bounds set (LIBSVM's ``calculate_rho``, the sign turned)."""
    free = ~fixed & (beta > 0) & (beta < bound)
    at_up = ~fixed & (beta >= bound)
    at_low = ~fixed & (beta <= 0)
    # (LIBSVM in yG = −v: at the upper bound y = +1 bounds lb, y = −1 ub; at 0 the reverse)
    ub_mask = (at_up & (sig < 0)) | (at_low & (sig > 0))
    lb_mask = (at_up & (sig > 0)) | (at_low & (sig < 0))
    yG = -v
    n_free, s_free, ub, lb = fetch_scalars(
        xp.sum(xp.astype(free, xp.float64)), xp.sum(xp.where(free, yG, 0.0)),
        xp.min(xp.where(ub_mask, yG, math.inf)), xp.max(xp.where(lb_mask, yG, -math.inf)), xp=xp)
    if n_free > 0:
        return -s_free / n_free
    if math.isinf(ub) or math.isinf(lb):
        return -(ub if math.isfinite(ub) else lb if math.isfinite(lb) else 0.0)
    return -0.5 * (ub + lb)


__all__ = ["SMO_LOSSES", "smo"]
