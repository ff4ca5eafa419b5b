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

As LIBSVM's, it shrinks (Joachims 1999; Chang and Lin, "LIBSVM: a library for support vector
machines", 2011, Section 5.1): every :data:`SHRINK_EVERY` iterations the variables at a bound
that cannot be in a violating pair leave the working set, and before the end every variable
comes back, its gradient computed afresh. Each iteration reads a few scalars to the host (the
working set, its σ, bounds and β mirrored there): fit for the small problems it is used on
(:data:`svmgpu.estimators.svc.SMO_MAX_ROWS`), where its cost is the working set's size per
iteration.
"""

from __future__ import annotations

import math
import time

from svmgpu.backend import (
    fetch_scalars,
    fetch_vector,
    is_numpy,
    native_device,
    product_in_float64,
    set_rows,
    symmetric_matvec,
    vecdot,
)
from svmgpu.kernels import KernelRows
from svmgpu.solvers._result import SolverResult

#: The losses :func:`smo` solves, by task.
SMO_LOSSES = {"classification": "huber_hinge", "regression": "huber_epsilon_insensitive"}

#: Iterations between two shrinkings of the working variables (LIBSVM's ``min(l, 1000)``).
SHRINK_EVERY = 1000

#: A lazy kernel matrix's rows (:class:`~svmgpu.kernels.KernelRows`) that SMO computes at once
#: where it reads one not held yet: that row and the working variables' rows not held whose
#: violation is largest, the next to be read. A row at a time cost 270 µs against 20 µs a row
#: in batches of 128 or more (14,000 rows of 5 features); where SMO reads most rows, each batch
#: also costs a sort of the violations: medium fuzz seed 2525's trial 17 (ten pairs of 5,600
#: rows, 79 % of their rows read) 4.65–4.81 s before, 4.72–4.92 s in batches of 256, 4.66–4.72
#: s of 1,024; seed 8080's trial 3 (14,000 rows, 6,222 read) 2.52–2.55 → 1.46–1.58 / 1.37–1.41 s.
ROW_BATCH = 1024

#: The least ``a_ij`` of the working set's second-order term (LIBSVM's ``TAU``: a kernel that is
#: not positive definite on the pair).
_TAU = 1e-12


def smo(K, y, loss, *, C, xp, task, sample_weight=None, tol=1e-3, max_iter=None,
        start=None, extend=1.0):
    """Minimize ``½ αᵀKα + C Σ sᵢ ψ(rᵢ)`` over α and an unpenalized intercept b by SMO on
    its dual (see the module), for the Huber hinge (classification, ``y`` in {−1, 1}) or the
    Huber ε-insensitive loss (regression).

    Parameters
    ----------
    K : array of shape (m, m)
        The kernel matrix (a :class:`~svmgpu.kernels.KernelRows`' rows are computed when
        first read, :data:`ROW_BATCH` at a time, and read in its store, rows in the order
        computed: no copy in K's order; its diagonal is the kernel's, ``kernel.diag``).
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
        Iterations at most (default ``max(100_000, 100 m)``), unless ``extend``.
    start : array of shape (m,), optional
        An α to start from (otherwise α = 0): a solution of a nearby problem of the same ``C``
        and weights (another loss's, such as wider corners; the same problem on fewer rows,
        the others at 0). It is taken into the box and, where its sum is not 0 (a Newton
        solution's, to its tolerance), the side of the larger sum is scaled down to ``Σ α =
        0``, the dual's equality.
    extend : float
        Where ``max_iter`` iterations end unconverged, up to ``extend · max_iter`` in all if
        the largest violation's geometric decrease over the second half of them says it
        reaches ``tol`` by then (:func:`_more_iterations`); 1: no more.

    Returns
    -------
    SolverResult
        ``coef`` α (f = Kα + b), ``info["intercept"]`` b, ``info["margins"]`` Kα + b, the
        objective F at the end in ``objective_history``, and ``info["least_working"]`` the
        fewest variables the working set held (shrinking; 2m for regression, m otherwise,
        where it never shrank).
    """
    if task not in SMO_LOSSES:
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if loss.name != SMO_LOSSES[task]:
        raise ValueError(f"smo solves the loss {SMO_LOSSES[task]!r} for {task}; got "
                         f"{loss.name!r}")
    t0 = time.perf_counter()
    f64 = xp.float64
    m = int(K.shape[0])
    # A lazy K's rows are computed when first read (:data:`ROW_BATCH` at a time) and read
    # where its store holds them: K's row i is the store's row ``slot[i]``, and K α the
    # product of the rows where α ≠ 0 (K is symmetric). Until session 63 the store was copied
    # into K's order first (KernelRows.full: a refinement whose Newton steps had computed
    # 4,900 rows of 8,000 in their own order copied 256 MB of fresh memory for SMO, 1.8 s of
    # its 4.1 s, medium fuzz seed 5252's trial 0), and until session 64 every row was
    # computed first: medium seed 8080's trial 3 (14,000 rows refined whole, C = 0.1) reads
    # 6,222 of them.
    lazy = K if isinstance(K, KernelRows) else None
    dev = native_device(K.X) if lazy is not None else getattr(K, "device", None)
    hslot = None if lazy is None else [int(t) for t in fetch_vector(lazy.slots(
        xp.arange(m, dtype=xp.int64, device=dev)), xp=xp)]

    def compute(rows):
        """A lazy K's rows ``rows`` (distinct) computed where not held; their slots (the
        host's copy of those rows' slots updated, not all m of them read again)."""
        at = lazy.compute(rows)
        for r, t in zip(fetch_vector(rows, xp=xp), fetch_vector(at, xp=xp), strict=True):
            hslot[int(r)] = int(t)
        return at

    def K_times(v):
        """``K v`` in float64 (a lazy K: the product of its rows where v ≠ 0)."""
        if lazy is None:
            return product_in_float64(K, v, xp=xp)
        support = xp.nonzero(v != 0)[0]
        at = compute(support)
        return symmetric_matvec(lazy.store[:lazy.computed, ...], v, support, rows=at, xp=xp)

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
    # (a lazy K's diagonal by the kernel's formula, its rows not all computed: the store's
    # own entries differ by rounding only)
    diag = xp.astype(xp.linalg.diagonal(K) if lazy is None else
                     lazy.kernel.diag(lazy.X), f64)
    QD = (xp.concat([diag, diag]) if reg else diag) + D
    every = xp.arange(n, dtype=xp.int64, device=dev)
    of_row = every % m if reg else every  # (each variable's row of K)

    def row(r, at):
        """K's row r at the rows ``at`` (None: every variable's), in float64 (a float32 K is
        read a row at a time; a float64 one's row where every variable works is K's own; a
        lazy K's row computed before, :func:`fill`)."""
        k = K[r, ...] if lazy is None else lazy.store[hslot[r], ...]
        if at is None:  # (no gather)
            return xp.astype(xp.concat([k, k]) if reg else k, f64, copy=False)
        return xp.astype(xp.take(k, at), f64, copy=False)

    def fill(k, rows, vu, vl, gmax, gmin):
        """A lazy K's row of working variable ``k`` computed where not held, with the rows
        not held of the :data:`ROW_BATCH` − 1 working variables of the largest violation
        (−∞ where they cannot move; ``vu``, ``vl``, ``gmax`` and ``gmin`` the iteration's);
        ``rows`` the working variables' rows."""
        if hslot[hR[k]] >= 0:
            return
        score = xp.where(lazy.slots(rows) < 0, xp.maximum(vu - gmin, gmax - vl), -math.inf)
        top = xp.argsort(-score)[:min(ROW_BATCH - 1, int(score.shape[0]))]  # (largest first)
        top = xp.take(top, xp.nonzero(xp.take(score, top) > -math.inf)[0])
        compute(xp.unique_values(xp.concat([
            xp.asarray([hR[k]], dtype=xp.int64, device=dev), xp.take(rows, top)])))

    def gradient(beta, Ka=None):
        """The dual's gradient at β, whole (``Ka``: K α, where known)."""
        if Ka is None:
            Ka = K_times(_alpha(beta, sig, m, reg))
        return p + sig * (xp.concat([Ka, Ka]) if reg else Ka) + D * beta

    if start is None:
        beta = xp.zeros((n,), dtype=f64, device=dev)  # (β = 0: the dual's gradient is p)
        G = p
    else:
        a0 = xp.astype(start, f64)
        beta = _balanced(xp.minimum(xp.maximum(xp.concat([a0, -a0]) if reg else sig * a0,
                                            0.0), bound), sig, xp=xp)
        G = gradient(beta)
    max_iter = max(100_000, 100 * m) if max_iter is None else int(max_iter)
    inf = math.inf
    n_iter, converged = 0, False
    # The working variables (all, until shrinking drops some): their indices ``act``; on the
    # device V = −σ∇ (the dual's gradient turned to margins), Q's diagonal, K's rows, and
    # the masks of I_up (0, else −∞) and I_low (0, else ∞); on the host β, σ, the bounds,
    # Q's diagonal, D and K's rows again (the pair's scalars, read without a transfer)
    least, unshrunk, counter = n, False, min(n, SHRINK_EVERY)

    def working(idx, V):
        """The working variables ``idx`` (global indices) and V over them."""
        Bw, Sw, Uw, QDw, Dw, rows = (xp.take(a, idx) for a in (beta, sig, bound, QD, D, of_row))
        host = [fetch_vector(a, xp=xp) for a in (Bw, Sw, Uw, QDw, Dw)]
        return idx, V, QDw, None if int(idx.shape[0]) == n else rows, \
            *_masks(Bw, Uw, Sw, xp=xp), host + [[int(t) for t in fetch_vector(rows, xp=xp)]]

    act, V, QDa, Ra, Mu, Ml, (hB, hS, hU, hQD, hD, hR) = working(every, -sig * G)
    # (NumPy: an iteration's scalars read directly, not through fetch_scalars' list: its
    # overhead and a third pass for V's maximum were 15 µs of an iteration's 90–150 on
    # 6,000–10,000 working variables; elsewhere they come back in one transfer)
    host_reads = is_numpy(xp)
    # (the largest violation before each iteration, kept where extend may read it)
    gaps, extended = ([] if extend > 1.0 else None), False
    while True:
        if n_iter >= max_iter:
            more = 0 if extended else _more_iterations(gaps, tol, extend)
            if more <= 0:
                break
            max_iter, extended = max_iter + more, True
        vu, vl = V + Mu, V + Ml
        if host_reads:  # (NumPy: V's largest value read at its argmax, not by a third pass)
            i = int(xp.argmax(vu))
            gmax, gmin = float(vu[i]), float(xp.min(vl))
        else:
            i, gmax, gmin = fetch_scalars(xp.argmax(vu), xp.max(vu), xp.min(vl), xp=xp)
        gap = gmax - gmin
        counter -= 1
        # (optimal on the working variables; or near it, the first time)
        near = gap <= tol or not unshrunk and gap <= 10 * tol
        if near or counter == 0:
            beta = set_rows(beta, act, xp.asarray(hB, dtype=f64, device=dev), xp=xp)
            if near and int(act.shape[0]) < n:
                # every variable again, its gradient computed afresh (LIBSVM's
                # reconstruct_gradient)
                unshrunk = unshrunk or gap > tol
                act, V, QDa, Ra, Mu, Ml, (hB, hS, hU, hQD, hD, hR) = working(
                    every, -sig * gradient(beta))
                counter = 1  # (shrunk again at the next iteration)
                continue
            if gap <= tol:
                converged = True
                break
            unshrunk = unshrunk or gap <= 10 * tol
            counter = min(n, SHRINK_EVERY)
            # LIBSVM's shrinking: a variable that can move one way only, and whose V says it
            # cannot be in a violating pair, leaves the working set (one that cannot move,
            # weight 0, too)
            up, low = Mu == 0, Ml == 0
            out = (up & ~low & (V < gmin)) | (low & ~up & (V > gmax)) | (~up & ~low)
            keep = xp.nonzero(~out)[0]
            if int(keep.shape[0]) < int(act.shape[0]):
                act, V, QDa, Ra, Mu, Ml, (hB, hS, hU, hQD, hD, hR) = working(
                    xp.take(act, keep), xp.take(V, keep))
                least = min(least, int(act.shape[0]))
            continue
        if gaps is not None:
            gaps.append(gap)
        n_iter += 1
        i = int(i)
        if lazy is not None:  # (its rows not held yet, the likeliest next ones with them)
            fill(i, of_row if Ra is None else Ra, vu, vl, gmax, gmin)
        Ki = row(hR[i], Ra)  # (K's row of variable i at the working variables' rows)
        # (the largest decrease b² / a over I_low below gmax, b = gmax − V: WSS 2)
        b = xp.maximum(gmax - vl, 0.0)
        ratio = xp.argmax(b * b / xp.maximum(QDa + (hQD[i] - 2.0 * Ki), _TAU))
        j = int(ratio) if host_reads else int(fetch_scalars(ratio, xp=xp)[0])
        if lazy is not None:
            fill(j, of_row if Ra is None else Ra, vu, vl, gmax, gmin)
        # (V at i is gmax: i is in I_up)
        Vj, Kij = (float(V[j]), float(Ki[j])) if host_reads else \
            fetch_scalars(V[j], Ki[j], xp=xp)
        si, sj, Bi, Bj = hS[i], hS[j], hB[i], hB[j]
        ni, nj = _pair(-si * gmax, -sj * Vj, Bi, Bj, hU[i], hU[j], si, sj, hQD[i], hQD[j],
                       si * sj * Kij)
        di, dj = ni - Bi, nj - Bj
        if di == 0.0 and dj == 0.0:  # (no progress: rounding at the bound)
            break
        # (the pair's own entries in place, by the standard's in-place operators and integer
        # keys: the index and value arrays built for them had cost about a fifth of an
        # iteration on 2,500 rows)
        V = V - ((di * si) * Ki + (dj * sj) * row(hR[j], Ra))
        V[i] -= si * hD[i] * di
        V[j] -= sj * hD[j] * dj
        hB[i], hB[j] = ni, nj
        for k, (up, low) in ((i, _movable(ni, hU[i], si)), (j, _movable(nj, hU[j], sj))):
            Mu[k], Ml[k] = (0.0 if up else -inf), (0.0 if low else inf)
    beta = set_rows(beta, act, xp.asarray(hB, dtype=f64, device=dev), xp=xp)
    alpha = _alpha(beta, sig, m, reg)
    Ka = K_times(alpha)
    b = _intercept(-sig * gradient(beta, Ka), beta, sig, bound, fixed, xp=xp)
    margins = Ka + b
    r = y - margins if reg else 1.0 - y * margins
    vals = loss.value(r, xp=xp)
    (aKa, total) = fetch_scalars(vecdot(alpha, Ka, xp=xp), xp.sum(w * vals), xp=xp)
    obj = 0.5 * aKa + C * total
    return SolverResult(coef=alpha, n_iter=n_iter, converged=converged,
                        objective_history=[obj], timings={"solve": time.perf_counter() - t0},
                        info={"intercept": b, "margins": margins, "stalled": False,
                              "n_presolve_iter": 0, "solver": "smo", "least_working": least})


def _more_iterations(gaps, tol, extend):
    """Iterations past the cap (``len(gaps)`` iterations, each one's largest violation) where
    their geometric decrease reaches ``tol`` within ``extend`` times the cap, else 0. SMO's
    violation falls geometrically once its working set settles (Chen, Fan and Lin 2006 prove
    the linear rate), below an oscillation from iteration to iteration: the rate is that of
    its least value in a tenth of the iterations at the middle and at the end, and 25 % more
    are given than it says. On mixed fuzz seed 4848's trial 40 (SVR, 2,500 rows, C = 100,
    ε = 0.01) the least violation fell from 0.01 at 4.6 iterations a row to 0.0052 at 5.0,
    and SMO converged at 6.3 a row where the Newton iteration from its point at 5 had taken
    29 steps (1.1 s). Mixed seed 101's trial 43 (SVR, 2,500 rows, C = 100), whose SMO takes
    664,688 iterations (36 s), fell from 0.2 to 0.19 between 5 and 8 a row: no more there."""
    N = 0 if gaps is None else len(gaps)
    if extend <= 1.0 or N < 100:
        return 0
    a, b = min(gaps[int(0.4 * N):N // 2]), min(gaps[int(0.9 * N):])
    if not tol < b < a:
        return 0
    rate = math.log(b / a) / (0.5 * N)  # (per iteration, between the windows' centres)
    left = math.log(tol / b) / rate
    if N + left > extend * N:
        return 0
    return int(min((extend - 1.0) * N, 1.25 * left + 1))


def _movable(beta, bound, sig):
    """``(up, low)``: whether each variable can move up / down along σ (LIBSVM's I_up and
    I_low; a bound of 0, weight 0, in neither), for arrays or host floats alike."""
    free = bound > 0
    up = free & (((sig > 0) & (beta < bound)) | ((sig < 0) & (beta > 0)))
    low = free & (((sig > 0) & (beta > 0)) | ((sig < 0) & (beta < bound)))
    return up, low


def _masks(beta, bound, sig, *, xp):
    """``(I_up, I_low)`` as masks to add: 0 on the set, −∞ (I_up) or ∞ (I_low) off it."""
    up, low = _movable(beta, bound, sig)
    zero = xp.zeros(beta.shape, dtype=beta.dtype, device=getattr(beta, "device", None))
    return xp.where(up, zero, -math.inf), xp.where(low, zero, math.inf)


def _balanced(beta, sig, *, xp):
    """``β`` (in the box) with ``σᵀβ = 0``: the side (σ = 1 or −1) of the larger sum scaled
    down to the other's, which keeps the box."""
    up, down = fetch_scalars(xp.sum(xp.where(sig > 0, beta, 0.0)),
                             xp.sum(xp.where(sig < 0, beta, 0.0)), xp=xp)
    if up > down:
        return xp.where(sig > 0, beta * (down / up), beta)
    if down > up:
        return xp.where(sig < 0, beta * (up / down), beta)
    return beta


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
