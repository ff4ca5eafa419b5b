"""GS-SVM: the greedy stagewise algorithm for hard-margin SVMs (Algorithm 1 of the GS-SVM paper,
``papers/gs-svm-greedy-stagewise-hard-margin.txt``).

The loss is the dual of the hard-margin SVM without offset, read as an RKHS-norm loss (10)::

    L(α) = ½ Σᵢⱼ αᵢ αⱼ yᵢ yⱼ K(xᵢ, xⱼ) − Σᵢ αᵢ,    αᵢ ≥ 0.

Stage ``m`` keeps the weights of stages ``1 … m−1`` fixed and adds one kernel function: with the
gradient (15) ``g_β = y_β f_{m−1}(x_β) − 1`` (``g⁰ = −1``), the best weight of an unselected
sample β is (19) ``α = −g_β / K_ββ`` when ``g_β < 0``, and the loss then drops by
(20) ``h_β = −g_β² / (2 K_ββ)``. The stage picks the β with the smallest ``h_β`` (21), takes
its weight (22), and updates the gradient with one kernel column,
``g ← g + α y_β y ⊙ K(X, x_β)``. Every sample is selected at most once, and the algorithm stops
when no unselected sample has ``g_β < 0`` (the loss stops decreasing): early stopping is the
regularizer. The cost is one kernel column (``l`` evaluations) per stage, ``O(n·l)`` in all for
``n`` support vectors and ``l`` samples; the kernel matrix is never formed.

Selecting β by the smallest ``h_β = −g_β²/(2K_ββ)`` over ``g_β < 0`` is selecting the smallest
``g_β / √K_ββ``; for kernels with ``K(x, x) = 1`` (Gaussian, Laplacian; (23)) that is simply the
smallest ``g_β``, and the weight is ``−g_β``.

No kernel column is ever needed twice, so the solver keeps no column cache: its memory is a few
vectors of length ``l`` plus one column block, evaluated in row blocks when it does not fit the
memory budget. What seems to need the support-vector block ``K_SS`` comes for free: selecting β
with weight α changes the loss by ``h_β = α g_β / 2`` and ``‖w‖²`` by ``α (g_β + 2)``, so
``‖w‖² = 2 (L + Σ αᵢ)`` (the ``A_ω⁻²`` of (28)).

The ``batch`` variation (not in the paper) selects up to ``b`` samples per stage: it runs the
stages of Algorithm 1 restricted to the ``b`` unselected samples with the smallest ``h_β`` (the
candidate pool), keeping the pool's gradients exact through the ``b × b`` kernel block, and then
updates the whole gradient once with the ``(l, b)`` block. Every weight is still the exact
one-at-a-time weight (19) given the weights before it, so the loss (10) decreases at every
selection; what changes is that a sample outside the pool cannot be chosen before the next
stage. ``b = 1`` is the paper's algorithm.
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real

from svmgpu.backend import array_device, block_rows, is_numpy, resolve_budget, set_rows, to_host
from svmgpu.kernels import RBF, Laplacian, RowPartition
from svmgpu.solvers._result import SolverResult

#: Stages run between two reads of the stopping rule on the host (one synchronization per
#: chunk on a GPU; stages after the rule holds change nothing).
DEFAULT_CHECK_EVERY = 32

#: Buffers of one row alive while a column block is evaluated (block, exponent, product).
_COLUMN_BUFFERS = 3

#: On the CPU, column blocks of ``batch > 1`` are cut to about this many bytes (cache-sized).
_CPU_BLOCK_BYTES = 2**21


def _negligible(dtype, xp):
    """Kernel values below this are skipped by pruning: ``2⁻¹⁰`` of the machine epsilon."""
    return float(xp.finfo(dtype).eps) * 2.0**-10


def _check_int(name, value, *, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        what = "None or an integer" if allow_none else "an integer"
        raise ValueError(f"{name} must be {what} >= {minimum}, got {value!r}")
    return int(value)


def check_stagewise_params(max_support, tol, batch):
    """Validate the options of :func:`greedy_stagewise` (shared with the estimator).

    Raises
    ------
    ValueError
        When ``max_support`` is not None or an integer >= 1, ``tol`` is not a finite number
        >= 0, or ``batch`` is not an integer >= 1.
    """
    _check_int("max_support", max_support, minimum=1, allow_none=True)
    _check_int("batch", batch, minimum=1)
    if isinstance(tol, bool) or not isinstance(tol, Real) or not math.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")


def _check_input(X, y, *, xp):
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of shape (n_samples, n_features), got {X.ndim}-D")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be a 1-D array with one label per row of X ({X.shape[0]}), got shape {y.shape}"
        )
    if X.shape[0] < 1:
        raise ValueError("X has no samples")
    if not xp.isdtype(X.dtype, "real floating"):
        raise ValueError(f"X must be a float32 or float64 array, got dtype {X.dtype}")
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("X contains NaN or infinity; remove or impute those values")
    is_pos, is_neg = y == 1, y == -1
    if not bool(xp.all(is_pos | is_neg)):
        raise ValueError("y must contain only the labels -1 and +1")
    if not (bool(xp.any(is_pos)) and bool(xp.any(is_neg))):
        raise ValueError("y has only one class; GS-SVM needs both labels -1 and +1")


def greedy_stagewise(X, y, kernel, *, xp, max_support=None, tol=0.0, batch=1,
                     memory_budget=None, check_every=DEFAULT_CHECK_EVERY, prune=True, verbose=0):
    """Greedy stagewise hard-margin SVM (GS-SVM, Algorithm 1) on one binary problem.

    Parameters
    ----------
    X : array of shape (l, n_features)
        Training rows (float32 or float64) on the computing device.
    y : array of shape (l,)
        Labels in {−1, +1}, same namespace as ``X``.
    kernel : Kernel
        A positive-definite kernel; RBF and Laplacian use the shortcut ``K(x, x) = 1`` (23).
        Samples with ``K(x, x) = 0`` are never selected (their kernel function is zero).
    xp : namespace
        The array namespace of ``X`` (array-api-compat NumPy or CuPy).
    max_support : int or None
        At most this many samples are selected; None: up to ``l``.
    tol : float, default 0.0
        Stop when every unselected sample has ``g_β / √K_ββ >= −tol`` (for RBF simply
        ``y_β f(x_β) >= 1 − tol``): ``tol`` bounds the violation of the KKT condition
        ``g_β >= 0`` of an unselected sample. 0 is the paper's rule (20).
    batch : int, default 1
        Candidate pool of a stage (see the module notes): up to ``batch`` samples are selected
        per stage, with one ``(l, batch)`` kernel block instead of ``batch`` columns. 1 is the
        paper's algorithm.
    memory_budget : int, str or None
        Bytes for one column block (None: half the free memory of the device); the block is
        evaluated in row blocks when it does not fit.
    check_every : int, default 32
        Stages between two host reads of the stopping rule. Stages run after the rule holds
        change nothing, so the result does not depend on it; on a GPU it sets how often the
        host waits for the device (never once per stage).
    prune : bool, default True
        On the host with ``batch=1`` and a kernel that decays with distance (RBF, Laplacian):
        order the rows along a k-d tree (:class:`~svmgpu.kernels.RowPartition`) and skip, in
        each column, the row blocks where every kernel value is below ``2⁻¹⁰ ε`` (``ε`` the
        machine epsilon of the dtype): the gradient then differs from the full update only at
        the rounding level, and a local kernel (large γ) evaluates a fraction of each column.
        Used only when the cut-off distance is shorter than the data's extent.
    verbose : int
        1: a summary line; 2: one line per chunk of stages.

    Returns
    -------
    SolverResult
        ``coef``: the weights α of shape (n,), in the order selected (all > 0).
        ``n_iter``: stages performed (= n for ``batch=1``). ``converged``: whether the
        stopping rule holds (False when ``max_support`` stopped it first).
        ``objective_history``: the loss (10) after 0, 1, …, n selections (index 0: L = 0).
        ``timings``: ``{"stages": seconds}``. ``info``:

        - ``support``: int array of shape (n,), the selected rows, in selection order;
        - ``dual_coef``: array of shape (n,), ``α_i y_i``: the decision function is
          ``f(x) = Σ dual_coef_i K(x, X[support_i])``, (5) without offset;
        - ``scores``: array of shape (l,), ``g_β/√K_ββ`` with the final gradient (15)
          ``g = y ⊙ f(X) − 1`` on unselected rows, +inf on selected rows (the stopping rule
          holds when its minimum is >= −tol);
        - ``norm_w_sq``: float, ``‖w‖² = Σ αᵢ yᵢ f(xᵢ)``, the ``A_ω⁻²`` of (28);
        - ``implicit_margin``: float, ``A_ω = 1/‖w‖`` (inf when nothing was selected);
        - ``n_kernel_evals``: int, kernel evaluations performed (``l`` per column, plus the
          ``b × b`` pool blocks);
        - ``stop``: ``"rule"`` or ``"max_support"``.

    Raises
    ------
    ValueError
        For NaN/inf in ``X``, mismatched shapes, labels other than ±1, a single class, or bad
        ``max_support`` / ``tol`` / ``batch``.
    MemoryError
        When the budget cannot hold a single row of a column block.
    """
    check_stagewise_params(max_support, tol, batch)
    check_every = _check_int("check_every", check_every, minimum=1)
    if not isinstance(prune, bool):
        raise ValueError(f"prune must be True or False, got {prune!r}")
    _check_input(X, y, xp=xp)
    t_start = time.perf_counter()
    l, d = int(X.shape[0]), int(X.shape[1])
    dt, dev = X.dtype, getattr(X, "device", None)
    y = xp.astype(y, dt)
    limit = l if max_support is None else min(int(max_support), l)
    batch = min(int(batch), l)

    host = is_numpy(xp)  # reading a value costs nothing on the host: leave the pool early
    # Pruning (host, one column per stage): rows in a k-d tree order, and a column skips the
    # row blocks where every kernel value is below the rounding level of the gradient.
    r_cut = kernel.negligible_distance(_negligible(dt, xp)) if prune else None
    part = None
    if host and batch == 1 and RowPartition.worthwhile(X, r_cut):
        part = RowPartition(X)
        X, y = X[part.perm], y[part.perm]

    # Rows prepared once against the centre of X; a column block evaluates the prepared rows
    # of the chosen samples against all of them.
    PX = kernel.prepare(X, kernel.center_of(X, xp=xp), xp=xp)
    unit_diag = isinstance(kernel, (RBF, Laplacian))  # K(x, x) = 1: (23)
    if unit_diag:
        isk = None
        yk = y
    else:
        kd = kernel.diag(X)
        ok = kd > 0
        isk = xp.where(ok, 1.0 / xp.sqrt(xp.where(ok, kd, xp.ones_like(kd))), xp.zeros_like(kd))
        yk = y * isk  # rows with K(x, x) = 0 get S = 0 forever: never selected
    itemsize = X.dtype.itemsize if hasattr(X.dtype, "itemsize") else 8
    budget = resolve_budget(memory_budget, array_device(X))
    cap = max(1, _CPU_BLOCK_BYTES // (batch * itemsize)) if batch > 1 and is_numpy(xp) else None
    rows_per_block = block_rows(batch + d + 2, itemsize, budget, n_buffers=_COLUMN_BUFFERS,
                                max_rows=cap)

    # The state is the scaled gradient S_β = g_β / √K_ββ (= g_β for K(x, x) = 1), +inf on
    # selected rows. Its argmin is the argmin of h_β (20)-(21) over g_β < 0; the weight (19) is
    # α = −S_β/√K_ββ and the loss change (20) is h_β = −S_β²/2.
    S = -xp.ones((l,), dtype=dt, device=dev) if unit_diag else -isk  # g⁰ = −1 (15)
    inf = xp.asarray(math.inf, dtype=dt, device=dev)
    neg_tol = -float(tol)

    def update(C, PC, v, ranges=((0, l),)):
        """``S ← S + yk ⊙ K(X, X_C) v``: Algorithm 1, line 6, for the rows ``C`` (row blocks
        of the row ``ranges``; the rows outside them have negligible kernel values)."""
        column = kernel.against(PC, xp=xp)
        for r0, r1 in ranges:
            for s in range(r0, r1, rows_per_block):
                e = min(s + rows_per_block, r1)
                blk = column(PX.rows(s, e))
                if v.shape[0] == 1:  # one column: in place, no matrix-vector product
                    col = blk[:, 0]
                    col *= yk[s:e]
                    col *= v
                    S[s:e] += col
                else:
                    S[s:e] += yk[s:e] * xp.matmul(blk, v)

    def stage_one(_b):
        """One stage of Algorithm 1, all on the device; returns (row, weight, loss change),
        each of shape (1,), with weight 0 when the rule (20) holds (nothing selected)."""
        nonlocal S
        C = xp.reshape(xp.argmin(S), (1,))  # (21); ties: the lowest index
        s_C = xp.take(S, C)
        on = s_C < neg_tol  # only g_β < 0 lowers the loss (20)
        zero = xp.zeros_like(s_C)
        a = xp.where(on, -s_C if unit_diag else -s_C * xp.take(isk, C), zero)  # (19)/(22)
        update(C, PX.take(C, xp=xp), a * xp.take(y, C))
        S = set_rows(S, C, xp.where(on, inf, xp.take(S, C)), xp=xp)  # each sample at most once
        return C, a, xp.where(on, -0.5 * s_C * s_C, zero)  # h_β (20)

    def stage_pool(b):
        """One stage of the ``batch`` variation: Algorithm 1 on the pool of the ``b`` best
        candidates, then one block update. Returns the selected rows, weights and loss changes
        of the ``b`` inner steps, each of shape (b,) (weight 0 for a step that selects nothing;
        such steps form a suffix)."""
        nonlocal S
        C = xp.argsort(S, stable=True)[:b]
        S_C, y_C, yk_C = xp.take(S, C), xp.take(y, C), xp.take(yk, C)
        isk_C = None if unit_diag else xp.take(isk, C)
        PC = PX.take(C, xp=xp)
        K_CC = kernel.evaluate(PC, PC, xp=xp)
        w_C = xp.zeros((b,), dtype=dt, device=dev)  # weights of the pool members
        pos = xp.zeros((b,), dtype=xp.int64, device=dev)
        a_rec = xp.zeros((b,), dtype=dt, device=dev)
        d_rec = xp.zeros((b,), dtype=dt, device=dev)
        for j in range(b):
            i = xp.reshape(xp.argmin(S_C), (1,))
            s_i = xp.take(S_C, i)
            on = s_i < neg_tol
            if host and not bool(on[0]):
                break  # the pool is spent (on a GPU the remaining steps are no-ops instead)
            zero = xp.zeros_like(s_i)
            a = xp.where(on, -s_i if unit_diag else -s_i * xp.take(isk_C, i), zero)
            pos[j:j + 1] = xp.astype(i, xp.int64)
            a_rec[j:j + 1] = a
            d_rec[j:j + 1] = xp.where(on, -0.5 * s_i * s_i, zero)
            w_C = set_rows(w_C, i, xp.take(w_C, i) + a, xp=xp)
            # the pool's gradients after this selection, from the b × b block
            S_C = S_C + (a * xp.take(y_C, i)) * yk_C * xp.take(K_CC, i, axis=1)[:, 0]
            S_C = set_rows(S_C, i, xp.where(on, inf, xp.take(S_C, i)), xp=xp)
        update(C, PC, w_C * y_C)
        S = set_rows(S, C, xp.where(w_C > 0, inf, xp.take(S, C)), xp=xp)
        return xp.take(C, pos), a_rec, d_rec

    def run_host():
        """Algorithm 1 on the host (``batch=1``): the same stages as ``stage_one`` with host
        scalars, an exit at the rule, and the pruned row ranges of each column."""
        idx, weights, drops, evals = [], [], [], 0
        full = ((0, l),)
        if part is not None:  # the minimum of S per block, refreshed where a column changed S
            starts = part.starts
            bmin = xp.minimum.reduceat(S, starts[:-1])
        while len(idx) < limit:
            if part is None:
                i = int(xp.argmin(S))  # (21); ties: the lowest index
            else:
                i = argmin_blocks(bmin)
            s_i = float(S[i])
            if not s_i < neg_tol:
                return idx, weights, drops, evals, "rule"  # (20): no g_β < 0 left
            a = -s_i if unit_diag else -s_i * float(isk[i])  # (19)/(22)
            C = xp.asarray([i])
            ranges = full if part is None else part.near(X[i], r_cut)
            update(C, PX.take(C, xp=xp), a * xp.take(y, C), ranges)
            S[i] = math.inf  # each sample at most once
            if part is not None:
                for r0, r1 in ranges + [(i, i + 1)]:
                    b0 = int(xp.searchsorted(starts, r0, side="right")) - 1
                    b1 = int(xp.searchsorted(starts, r1, side="left"))
                    bmin[b0:b1] = xp.minimum.reduceat(S[starts[b0]:starts[b1]],
                                                     starts[b0:b1] - starts[b0])
            evals += sum(e - s for s, e in ranges)
            idx.append(i)
            weights.append(a)
            drops.append(-0.5 * s_i * s_i)  # h_β (20)
            if verbose >= 2 and len(idx) % check_every == 0:
                print(f"[greedy_stagewise] stages={len(idx)} selected={len(idx)}")
        return idx, weights, drops, evals, "max_support"

    def argmin_blocks(bmin):
        """(21) over permuted rows from the block minima: the row with the smallest score,
        ties to the lowest original index (rows inside a block keep their original order)."""
        v = bmin.min()
        cand = xp.nonzero(bmin == v)[0]
        if cand.shape[0] == 1:
            b = int(cand[0])
            s0 = int(part.starts[b])
            return s0 + int(xp.argmin(S[s0:int(part.starts[b + 1])]))
        ties = xp.nonzero(S == v)[0]
        return int(ties[xp.argmin(xp.take(part.perm, ties))])

    chunks_idx, chunks_a, chunks_delta = [], [], []
    n_sel, n_stages, n_evals, stop = 0, 0, 0, None
    if host and batch == 1:
        idx, weights, drops, n_evals, stop = run_host()
        chunks_idx.append(xp.asarray(idx, dtype=xp.int64))
        chunks_a.append(xp.asarray(weights, dtype=dt))
        chunks_delta.append(xp.asarray(drops, dtype=dt))
        n_sel = n_stages = len(idx)
    stage = stage_one if batch == 1 else stage_pool
    while stop is None:
        remaining = limit - n_sel
        if remaining <= 0:
            stop = "max_support"
            break
        b = min(batch, remaining)
        n_chunk = max(1, min(check_every, remaining // b))
        rec_idx = xp.zeros((n_chunk, b), dtype=xp.int64, device=dev)
        rec_a = xp.zeros((n_chunk, b), dtype=dt, device=dev)
        rec_delta = xp.zeros((n_chunk, b), dtype=dt, device=dev)
        for s in range(n_chunk):
            rec_idx[s, :], rec_a[s, :], rec_delta[s, :] = stage(b)
        n_evals += n_chunk * (b * l + (b * b if b > 1 else 0))
        # One synchronization per chunk: which steps selected a sample.
        keep = rec_a > 0
        on_stages = int(xp.sum(xp.astype(keep[:, 0], xp.int32)))
        chunks_idx.append(rec_idx[keep])
        chunks_a.append(rec_a[keep])
        chunks_delta.append(rec_delta[keep])
        n_sel += int(xp.sum(xp.astype(keep, xp.int32)))
        n_stages += on_stages
        if on_stages < n_chunk:
            stop = "rule"  # a stage whose best candidate has g >= −tol: (20) says stop
        if verbose >= 2:
            print(f"[greedy_stagewise] stages={n_stages} selected={n_sel}")

    support = xp.concat(chunks_idx)
    alpha = xp.concat(chunks_a)
    dual_coef = alpha * xp.take(y, support)
    if part is not None:  # back to the caller's row order
        support = xp.take(xp.asarray(part.perm), support)
        scores = xp.empty_like(S)
        scores[part.perm] = S
        S = scores
    deltas = xp.concat(chunks_delta)
    if stop == "max_support":  # the rule may hold all the same (one more read of the scores)
        converged = n_sel == l or not bool(xp.min(S) < neg_tol)
    else:
        converged = True
    history = [0.0] + [float(v) for v in to_host(
        xp.cumulative_sum(deltas), why="the objective history is a host list").tolist()]
    # ‖w‖² from the loss: each selection adds α(g_β + 2) to ‖w‖² and α g_β/2 to L (10), so
    # ‖w‖² = 2 (L + Σα) — the A_ω⁻² of (28) without touching K_SS.
    norm_w_sq = max(2.0 * (history[-1] + float(xp.sum(alpha))), 0.0)
    elapsed = time.perf_counter() - t_start
    if verbose >= 1:
        print(f"[greedy_stagewise] l={l} stages={n_stages} selected={n_sel} stop={stop} "
              f"loss={history[-1]:.6g} |w|^2={norm_w_sq:.6g} {elapsed:.3f}s")
    return SolverResult(
        coef=alpha,
        n_iter=n_stages,
        converged=converged,
        objective_history=history,
        timings={"stages": elapsed},
        info={
            "support": support,
            "dual_coef": dual_coef,
            "scores": S,
            "norm_w_sq": norm_w_sq,
            "implicit_margin": 1.0 / math.sqrt(norm_w_sq) if norm_w_sq > 0 else math.inf,
            "n_kernel_evals": n_evals,
            "stop": stop,
        },
    )
