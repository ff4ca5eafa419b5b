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

Sample weights. The hard-margin SVM has no per-sample loss term that a weight could scale: its
samples enter as constraints, and a duplicated row changes neither (1) nor its dual (10). What a
duplicated row does change is the stagewise algorithm: (11) selects each kernel function *at most
once* (the paper's constraint ``β ≠ β_j``, the mechanism that keeps a kernel function's effect from
being "excessively magnified", section IV), and a row present k times may be selected k times.
A weight ``sᵢ`` is therefore read as that row's selection budget, the GS-SVM counterpart of
the per-sample box ``αᵢ <= C sᵢ`` of the soft-margin dual (4): the row may be selected while its
budget lasts, each selection using one unit of it with the full closed-form step (19)/(22); a last
fractional unit ``t = sᵢ − ⌊sᵢ⌋`` takes the fraction ``t`` of the step, which lowers the loss
(10) by ``h_β t (2 − t)`` ((20) along the step). The selection (21) compares these decreases:
the state is the key ``φ_β g_β/√K_ββ`` with ``φ = √(t (2 − t))`` (1 for a full unit), and the
rule stops when no key is below ``−tol``. Integer weights are exactly duplicated rows (each
copy's budget is 1, and the copies of a row share its gradient), a zero weight removes the row
(never selected, and an unselected row plays no part in the model), and unit weights are the
paper's algorithm.

Sparse X (SciPy or CuPy CSR). Kernel columns come from sparse · dense products against the
chosen rows, taken dense (``kernel.sparse_block``); X is never densified. The k-d tree pruning
needs dense coordinates and is not used for sparse X: every column is evaluated in full (the
result is the same to rounding).

The ``batch`` variation (not in the paper) selects up to ``b`` samples per stage: it runs the
stages of Algorithm 1 restricted to the ``b`` unselected samples with the smallest ``h_β`` (the
candidate pool), keeping the pool's gradients exact through the ``b × b`` kernel block, and then
updates the whole gradient once with the ``(l, b)`` block. Every weight is still the exact
one-at-a-time weight (19) given the weights before it, so the loss (10) decreases at every
selection; what changes is that a sample outside the pool cannot be chosen before the next
stage. ``b = 1`` is the paper's algorithm.

Implementation. :class:`_StagewiseState` holds the state (the keys, the budgets, the kernel's
prepared rows) and runs the stages: :meth:`~_StagewiseState.step` (19)/(22) and (20),
:meth:`~_StagewiseState.update` (line 6 of Algorithm 1), :meth:`~_StagewiseState.spend` and
:meth:`~_StagewiseState.commit` (the selected rows' keys and budgets), one stage
(:meth:`~_StagewiseState.stage_one`, or :meth:`~_StagewiseState.stage_pool` for ``batch > 1``)
and the loop over stages (:meth:`~_StagewiseState.run`: chunks of ``check_every`` stages
between two host reads of the rule). How a stage finds its row (21) and which rows its column
covers is the search: :class:`_DeviceArgmin` (one argmin over all rows, full columns; every
backend) or, on the host, :class:`_KDTreePruned` (rows in k-d tree order, the argmin from the
block minima, and columns restricted to the row blocks within the kernel's negligible
distance).
"""

from __future__ import annotations

import logging
import math
import time
from numbers import Integral, Real

from svmgpu._log import fields, get_logger, honours_verbose, progress
from svmgpu.backend import (
    all_finite,
    array_device,
    block_rows,
    check_fits,
    dense_rows,
    is_numpy,
    is_sparse,
    resolve_budget,
    row_sq_norms,
    set_rows,
    to_host,
)
from svmgpu.kernels import RBF, Laplacian, RowPartition, negligible_level
from svmgpu.solvers._result import SolverResult

#: Stages run between two reads of the stopping rule on the host (one synchronization per
#: chunk on a GPU; stages after the rule holds change nothing).
DEFAULT_CHECK_EVERY = 32

_log = get_logger("stagewise")

#: Buffers of one row alive while a column block is evaluated (block, exponent, product).
_COLUMN_BUFFERS = 3

#: Per-row vectors the state holds besides its copies of X (keys, labels, the search's order
#: and scratch: about 7 float64 a row measured on 16,000 rows), counted as float64; sample
#: weights add the budgets and their unit keys (:data:`_WEIGHT_VECTORS` more).
_STATE_VECTORS = 8
_WEIGHT_VECTORS = 4

#: On the CPU, column blocks of ``batch > 1`` are cut to about this many bytes (cache-sized).
_CPU_BLOCK_BYTES = 2**21


def _unit_factor(budget, *, xp):
    """``φ = √(t (2 − t))`` for the unit ``t = min(budget, 1)`` a row's next selection takes:
    a step of the fraction t of (19) lowers the loss (10) by ``φ² g²/(2K)`` (20); 1 for a
    whole unit, 0 for a spent budget."""
    t = xp.minimum(budget, 1.0)
    return xp.sqrt(t * (2.0 - t))


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


def _check_input(X, y, sample_weight, *, xp):
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
    if not all_finite(X, xp=xp):
        raise ValueError("X contains NaN or infinity; remove or impute those values")
    is_pos, is_neg = y == 1, y == -1
    if not bool(xp.all(is_pos | is_neg)):
        raise ValueError("y must contain only the labels -1 and +1")
    if sample_weight is not None:
        if sample_weight.ndim != 1 or sample_weight.shape[0] != X.shape[0]:
            raise ValueError(f"sample_weight must have shape ({X.shape[0]},), got "
                             f"{tuple(sample_weight.shape)}")
        if not bool(xp.all(xp.isfinite(sample_weight))):
            raise ValueError("sample_weight contains NaN or infinity")
        if bool(xp.any(sample_weight < 0)):
            raise ValueError("sample_weight must be non-negative")
        is_pos, is_neg = is_pos & (sample_weight > 0), is_neg & (sample_weight > 0)
    if not (bool(xp.any(is_pos)) and bool(xp.any(is_neg))):
        raise ValueError("y has only one class (among the rows of positive sample_weight); "
                         "GS-SVM needs both labels -1 and +1")


def _sum_by_row(rows, values, *, xp):
    """The distinct ``rows`` (in the order of their first appearance) and the sum of
    ``values`` over each row's appearances (a row selected several times: a weight above 1).
    Sums in the order of selection, with no scatter-add: one pass per repetition level."""
    n = rows.shape[0]
    order = xp.argsort(rows, stable=True)
    r, v = xp.take(rows, order), xp.take(values, order)
    rank = xp.arange(n, dtype=r.dtype, device=getattr(r, "device", None)) - \
        xp.searchsorted(r, r, side="left")
    n_levels = int(xp.max(rank)) + 1 if n else 1
    if n_levels == 1:
        return rows, values
    first = rank == 0
    uniq, total = r[first], v[first]
    for k in range(1, n_levels):
        hit = rank == k
        total = total + set_rows(xp.zeros_like(total), xp.searchsorted(uniq, r[hit]), v[hit],
                                 xp=xp)
    back = xp.argsort(xp.take(order, xp.nonzero(first)[0]))  # by first selection
    return xp.take(uniq, back), xp.take(total, back)


class _DeviceArgmin:
    """The search of a stage on every backend: the argmin (21) over all rows (ties: the lowest
    index) and kernel columns evaluated on every row. All on the device, no host read."""

    perm = None  # the rows keep the caller's order

    def __init__(self, n_rows):
        self._all = ((0, n_rows),)

    def start(self, S):
        """Nothing to prepare."""

    def select(self, S, *, xp):
        """The row of smallest key ``S`` (21), shape (1,)."""
        return xp.reshape(xp.argmin(S), (1,))

    def ranges(self, C):
        """Row ranges of the column of ``C`` that the update (line 6) evaluates: all rows."""
        return self._all

    def refresh(self, S, ranges, C):
        """Nothing to maintain."""


class _KDTreePruned:
    """The search of a stage on the host (``batch=1``, dense X, a kernel that decays with
    distance): the rows in k-d tree order (:class:`~svmgpu.kernels.RowPartition`), the argmin
    (21) from the minimum of the keys per block, and each kernel column evaluated only on the
    row blocks within the distance ``r_cut`` beyond which every kernel value is negligible
    (below ``2⁻¹⁰ ε``): the gradient differs from the full update at the rounding level only.

    Parameters
    ----------
    part : RowPartition
        The k-d tree of the rows (``perm``: partitioned row k is the caller's row ``perm[k]``).
    X : array of shape (l, n_features)
        The rows in the partitioned order (dense, NumPy).
    r_cut : float
        The negligible distance of the kernel.
    xp : namespace
        The (NumPy) namespace of the state.
    """

    def __init__(self, part, X, r_cut, *, xp):
        self.part, self.X, self.r_cut, self.xp = part, X, r_cut, xp
        self.perm, self.starts = part.perm, part.starts
        self.bmin = None

    def start(self, S):
        """The minimum of the keys ``S`` per block."""
        self.bmin = self.xp.minimum.reduceat(S, self.starts[:-1])

    def select(self, S, *, xp):
        """(21) over the permuted rows from the block minima: the row with the smallest key,
        ties to the lowest original index (rows inside a block keep their original order).
        Shape (1,)."""
        bmin, starts = self.bmin, self.starts
        v = bmin.min()
        cand = xp.nonzero(bmin == v)[0]
        if cand.shape[0] == 1:
            b = int(cand[0])
            s0 = int(starts[b])
            i = s0 + int(xp.argmin(S[s0:int(starts[b + 1])]))
        else:
            ties = xp.nonzero(S == v)[0]
            i = int(ties[xp.argmin(xp.take(self.perm, ties))])
        return xp.asarray([i])

    def ranges(self, C):
        """The row ranges whose blocks may hold a row within ``r_cut`` of the row ``C``."""
        return self.part.near(self.X[int(C[0])], self.r_cut)

    def refresh(self, S, ranges, C):
        """The block minima of the blocks where a column (``ranges``) or a commit (``C``)
        changed the keys."""
        xp, starts, i = self.xp, self.starts, int(C[0])
        for r0, r1 in list(ranges) + [(i, i + 1)]:
            b0 = int(xp.searchsorted(starts, r0, side="right")) - 1
            b1 = int(xp.searchsorted(starts, r1, side="left"))
            self.bmin[b0:b1] = xp.minimum.reduceat(S[starts[b0]:starts[b1]],
                                                   starts[b0:b1] - starts[b0])


class _StagewiseState:
    """The state of GS-SVM on one binary problem, and its stages (Algorithm 1).

    The state is the scaled gradient ``S_β = g_β/√K_ββ`` (15) (= ``g_β`` for ``K(x, x) = 1``),
    +inf on rows whose budget is spent. Its argmin is the argmin of ``h_β`` (20)–(21) over
    ``g_β < 0``; the weight (19) is ``α = −S_β/√K_ββ`` and the loss change (20) is
    ``h_β = −S_β²/2``. With weights, ``S_β`` is the key ``φ_β g_β/√K_ββ`` (``φ = √(t(2 − t))``
    for the unit ``t = min(budget, 1)`` the next selection takes; ``yk`` carries φ so that the
    updates keep the keys), +inf once the budget is spent. No kernel column is kept: a stage
    evaluates the column (block) of its selection once.

    Parameters
    ----------
    X, y, kernel, xp, sample_weight, batch, memory_budget, prune
        As for :func:`greedy_stagewise` (validated there; ``y`` already of X's dtype).
    tol : float
        The stopping rule's tolerance: a key must be below ``−tol`` to be selected.

    Attributes
    ----------
    S : array of shape (l,)
        The keys, in the row order of the search (k-d tree order when pruned).
    budget_left, yk, yk_unit : array of shape (l,) or None
        The remaining budgets, ``y ⊙ φ/√K`` and ``y/√K`` (None without weights; ``yk`` is
        ``y/√K`` then).
    search : _DeviceArgmin or _KDTreePruned
        How a stage finds its row and which rows its column covers.
    step_dtype : dtype
        The dtype of the arithmetic of :meth:`step` and of the unit factor of :meth:`spend`.
    n_total : int
        Selections the budgets allow (``l`` without weights).
    """

    def __init__(self, X, y, kernel, *, xp, sample_weight, tol, batch, memory_budget, prune):
        l, d = int(X.shape[0]), int(X.shape[1])
        self.xp, self.l, self.dt = xp, l, X.dtype
        self.sparse = sparse = is_sparse(X)
        self.dev = getattr(y, "device", None)
        # reading a value costs nothing on the host: leave a stage once the rule holds
        self.host = is_numpy(xp)
        self.neg_tol = -float(tol)
        # The weights and loss changes of the host's one-column stages are computed in float64
        # and rounded once (host scalars cost nothing); pools and device stages compute in the
        # dtype of X. (Only float32 X tells them apart, at the rounding level.)
        self.step_dtype = xp.float64 if self.host and batch == 1 else X.dtype

        # The search: on the host with one column per stage, the k-d tree order when a column
        # can skip row blocks (dense X, a kernel negligible beyond r_cut shorter than the extent).
        r_cut = kernel.negligible_distance(negligible_level(X.dtype, xp=xp)) if prune and not sparse \
            else None
        self.search = _DeviceArgmin(l)
        partitioned = self.host and batch == 1 and RowPartition.worthwhile(X, r_cut)
        # the copies of X (prepared for the kernel, in the k-d tree's order) and the per-row
        # vectors come out of the budget before they are made; the column blocks get the rest
        itemsize = X.dtype.itemsize if hasattr(X.dtype, "itemsize") else 8
        budget = resolve_budget(memory_budget, array_device(y))
        vectors = _STATE_VECTORS + (0 if sample_weight is None else _WEIGHT_VECTORS)
        held = ((0 if sparse else 1) + 2 * int(partitioned)) * l * d * itemsize \
            + vectors * 8 * l  # (the partition's order and boxes: two copies at once)
        check_fits(held, budget, what=f"GS-SVM's copies of the {l:,} x {d} rows (prepared "
                   "for the kernel, in the k-d tree's order) and its per-row vectors",
                   hint="subsample the data")
        if partitioned:
            part = RowPartition(X)
            X, y = X[part.perm], y[part.perm]
            if sample_weight is not None:
                sample_weight = sample_weight[part.perm]
            self.search = _KDTreePruned(part, X, r_cut, xp=xp)
        self.X, self.y, self.kernel = X, y, kernel
        # kernel columns: dense X prepared once against its centre; sparse X as it is
        self.PX = None if sparse else kernel.prepare(X, kernel.center_of(X, xp=xp), xp=xp)

        self.unit_diag = isinstance(kernel, (RBF, Laplacian))  # K(x, x) = 1: (23)
        if self.unit_diag:
            self.isk = None
            self.yk = y
        else:
            kd = kernel.diag(X)
            ok = kd > 0
            self.isk = xp.where(ok, 1.0 / xp.sqrt(xp.where(ok, kd, xp.ones_like(kd))),
                                xp.zeros_like(kd))
            self.yk = y * self.isk  # rows with K(x, x) = 0 get S = 0 forever: never selected
        cap = max(1, _CPU_BLOCK_BYTES // (batch * itemsize)) if batch > 1 and self.host else None
        self.rows_per_block = block_rows(batch + (0 if sparse else d) + 2, itemsize,
                                         budget - held, n_buffers=_COLUMN_BUFFERS, max_rows=cap)

        dt, dev = self.dt, self.dev
        self.S = -xp.ones((l,), dtype=dt, device=dev) if self.unit_diag else -self.isk  # g⁰ = −1
        self.inf = xp.asarray(math.inf, dtype=dt, device=dev)
        self.budget_left = self.yk_unit = None
        self.n_total = l
        if sample_weight is not None:
            self.budget_left = xp.astype(sample_weight, dt)
            phi0 = _unit_factor(self.budget_left, xp=xp)
            self.S = xp.where(self.budget_left > 0, self.S * phi0, xp.full_like(self.S, math.inf))
            self.yk_unit, self.yk = self.yk, self.yk * phi0
            self.n_total = int(xp.sum(xp.ceil(self.budget_left)))
        self.search.start(self.S)

    # ------------------------------------------------------------- kernel columns
    def chosen(self, C):
        """The rows ``C`` as the kernel columns need them (sparse X: dense rows)."""
        if self.sparse:
            return dense_rows(self.X, C, xp=self.xp)
        return self.PX.take(C, xp=self.xp)

    def _column(self, Z):
        """``(s, e) ↦ K(X[s:e], Z)`` for the chosen rows ``Z``."""
        xp, X, kernel = self.xp, self.X, self.kernel
        if self.sparse:  # sparse · dense products against the chosen rows, taken dense
            sq_z = row_sq_norms(Z, xp=xp)
            return lambda s, e: kernel.sparse_block(X[s:e], Z, xp=xp, sq_z=sq_z)
        column = kernel.against(Z, xp=xp)
        return lambda s, e: column(self.PX.rows(s, e))

    def _pool_block(self, Z):
        """The ``b × b`` kernel block of the chosen rows ``Z``."""
        return self.kernel.block(Z, Z) if self.sparse else \
            self.kernel.evaluate(Z, Z, xp=self.xp)

    # ------------------------------------------------------------- one selection
    def step(self, C, s_C, on, b_C):
        """The weight (19)/(22) of one selection of each row of ``C`` (key ``s_C``, budget
        ``b_C``; weight 0 where ``on`` is False) and its loss change (20), shape (|C|,),
        computed in ``step_dtype`` and rounded once to the dtype of X."""
        xp, sd = self.xp, self.step_dtype
        s_on = xp.astype(xp.where(on, s_C, xp.zeros_like(s_C)), sd, copy=False)
        a = -s_on if self.unit_diag else -s_on * xp.astype(xp.take(self.isk, C), sd, copy=False)
        if b_C is not None:  # a last fractional unit t: the fraction t of the step
            t = xp.minimum(xp.astype(b_C, sd, copy=False), 1.0)
            a = a * xp.sqrt(t / (2.0 - t))
        h = -0.5 * s_on * s_on
        return xp.astype(a, self.dt, copy=False), xp.astype(h, self.dt, copy=False)

    def spend(self, C, on, s_C, b_C, yk_C):
        """After a selection of the rows ``C`` (where ``on``): their keys, budgets and ``yk``
        entries (one unit of budget spent; +inf once none is left)."""
        xp = self.xp
        if b_C is None:
            return xp.where(on, self.inf, s_C), None, None
        left = b_C - xp.where(on, xp.minimum(b_C, 1.0), xp.zeros_like(b_C))
        phi = xp.astype(_unit_factor(xp.astype(left, self.step_dtype, copy=False), xp=xp),
                        self.dt, copy=False)
        more = on & (left > 0)
        s_C = xp.where(more, s_C * phi, xp.where(on, self.inf, s_C))
        return s_C, left, xp.where(more, xp.take(self.yk_unit, C) * phi, yk_C)

    def update(self, PC, v, ranges):
        """``S ← S + yk ⊙ K(X, X_C) v``: Algorithm 1, line 6, for the chosen rows ``PC`` (row
        blocks of the row ``ranges``; the rows outside them have negligible kernel values)."""
        xp, S, yk, rpb = self.xp, self.S, self.yk, self.rows_per_block
        column = self._column(PC)
        for r0, r1 in ranges:
            for s in range(r0, r1, rpb):
                e = min(s + rpb, r1)
                blk = column(s, e)
                if v.shape[0] == 1:  # one column: in place, no matrix-vector product
                    col = blk[:, 0]
                    col *= yk[s:e]
                    col *= v
                    S[s:e] += col
                else:
                    S[s:e] += yk[s:e] * xp.matmul(blk, v)

    def commit(self, C, on, s_C, b_C, yk_C):
        """Write the keys, budgets and ``yk`` of the rows ``C`` after their selections."""
        xp = self.xp
        self.S = set_rows(self.S, C, s_C, xp=xp)
        if b_C is not None:
            self.budget_left = set_rows(self.budget_left, C, b_C, xp=xp)
            self.yk = set_rows(self.yk, C, yk_C, xp=xp)

    def _take_budget(self, C):
        return None if self.budget_left is None else self.xp.take(self.budget_left, C)

    # ------------------------------------------------------------- stages
    def stage(self, b):
        """One stage: ``b`` selections at most (:meth:`stage_one` for ``b = 1``, else
        :meth:`stage_pool`). Returns the rows, weights and loss changes of the stage's steps,
        each of shape (b,) (weight 0 for a step that selected nothing; such steps form a
        suffix), and the kernel evaluations it took."""
        return self.stage_one() if b == 1 else self.stage_pool(b)

    def stage_one(self):
        """One stage of Algorithm 1: the search's row (21), its weight (22) and the update of
        the gradient by its column (line 6). With weight 0 when the rule (20) holds (nothing
        selected: on the host the stage stops there, on a device it runs as a no-op)."""
        xp = self.xp
        C = self.search.select(self.S, xp=xp)  # (21)
        s_C = xp.take(self.S, C)
        on = s_C < self.neg_tol  # only g_β < 0 lowers the loss (20)
        if self.host and not bool(on[0]):
            zero = xp.zeros((1,), dtype=self.dt, device=self.dev)
            return C, zero, zero, 0
        b_C = self._take_budget(C)
        a, h = self.step(C, s_C, on, b_C)  # (19)/(22), (20)
        ranges = self.search.ranges(C)
        self.update(self.chosen(C), a * xp.take(self.y, C), ranges)
        yk_C = None if b_C is None else xp.take(self.yk, C)
        self.commit(C, on, *self.spend(C, on, xp.take(self.S, C), b_C, yk_C))
        self.search.refresh(self.S, ranges, C)
        return C, a, h, sum(e - s for s, e in ranges)

    def stage_pool(self, b):
        """One stage of the ``batch`` variation: Algorithm 1 on the pool of the ``b`` best
        candidates, then one block update (the pool's own gradients kept exact by the b × b
        block)."""
        xp, dt, dev = self.xp, self.dt, self.dev
        C = xp.argsort(self.S, stable=True)[:b]
        S_C, y_C, yk_C = xp.take(self.S, C), xp.take(self.y, C), xp.take(self.yk, C)
        b_C = self._take_budget(C)
        PC = self.chosen(C)
        K_CC = self._pool_block(PC)
        w_C = xp.zeros((b,), dtype=dt, device=dev)  # weights of the pool members
        pos = xp.zeros((b,), dtype=xp.int64, device=dev)
        a_rec = xp.zeros((b,), dtype=dt, device=dev)
        d_rec = xp.zeros((b,), dtype=dt, device=dev)
        for j in range(b):
            i = xp.reshape(xp.argmin(S_C), (1,))
            s_i = xp.take(S_C, i)
            on = s_i < self.neg_tol
            if self.host and not bool(on[0]):
                break  # the pool is spent (on a GPU the remaining steps are no-ops instead)
            b_i = None if b_C is None else xp.take(b_C, i)  # the pool's own budgets
            a, h = self.step(xp.take(C, i), s_i, on, b_i)
            pos[j:j + 1] = xp.astype(i, xp.int64)
            a_rec[j:j + 1] = a
            d_rec[j:j + 1] = h
            w_C = set_rows(w_C, i, xp.take(w_C, i) + a, xp=xp)
            # the pool's gradients after this selection, from the b × b block
            S_C = S_C + (a * xp.take(y_C, i)) * yk_C * xp.take(K_CC, i, axis=1)[:, 0]
            s_i, b_i, yk_i = self.spend(xp.take(C, i), on, xp.take(S_C, i), b_i,
                                        xp.take(yk_C, i))
            S_C = set_rows(S_C, i, s_i, xp=xp)
            if b_C is not None:
                b_C, yk_C = set_rows(b_C, i, b_i, xp=xp), set_rows(yk_C, i, yk_i, xp=xp)
        self.update(PC, w_C * y_C, ((0, self.l),))
        sel = w_C > 0  # the selected members keep the pool's keys (+inf once spent)
        self.commit(C, sel, xp.where(sel, S_C, xp.take(self.S, C)), b_C, yk_C)
        return xp.take(C, pos), a_rec, d_rec, b * self.l + b * b

    def run(self, limit, batch, check_every, bar):
        """Stages until the rule (20) holds or ``limit`` selections are made, read on the host
        once per chunk of ``check_every`` stages (the stages of a chunk after the rule holds
        select nothing). Returns the selected rows (in the caller's order), weights and loss
        changes in the order selected, the stages that selected, the kernel evaluations and
        the reason of the stop (``"rule"`` or ``"max_support"``)."""
        xp, dt, dev = self.xp, self.dt, self.dev
        chunks_idx, chunks_a, chunks_delta = [], [], []
        n_sel = n_stages = n_evals = 0
        stop = None
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
                rec_idx[s, :], rec_a[s, :], rec_delta[s, :], evals = self.stage(b)
                n_evals += evals
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
            bar.update(on_stages, selected=n_sel)
            if _log.isEnabledFor(logging.DEBUG):
                _log.debug(fields(stages=n_stages, selected=n_sel))
        selected = xp.concat(chunks_idx)
        if self.search.perm is not None:  # back to the caller's row order
            selected = xp.take(xp.asarray(self.search.perm), selected)
        return (selected, xp.concat(chunks_a), xp.concat(chunks_delta), n_sel, n_stages,
                n_evals, stop)

    def scores(self):
        """The keys ``S`` in the caller's row order."""
        if self.search.perm is None:
            return self.S
        out = self.xp.empty_like(self.S)
        out[self.search.perm] = self.S
        return out


@honours_verbose
def greedy_stagewise(X, y, kernel, *, xp, sample_weight=None, max_support=None, tol=0.0,
                     batch=1, memory_budget=None, check_every=DEFAULT_CHECK_EVERY, prune=True,
                     verbose=0):
    """Greedy stagewise hard-margin SVM (GS-SVM, Algorithm 1) on one binary problem.

    Parameters
    ----------
    X : array of shape (l, n_features)
        Training rows (float32 or float64) on the computing device; dense, or a SciPy / CuPy
        CSR matrix (never densified; no pruning, see the module notes).
    y : array of shape (l,)
        Labels in {−1, +1}, same namespace as ``X``.
    kernel : Kernel
        A positive-definite kernel; RBF and Laplacian use the shortcut ``K(x, x) = 1`` (23).
        Samples with ``K(x, x) = 0`` are never selected (their kernel function is zero).
    xp : namespace
        The array namespace of ``X`` (array-api-compat NumPy or CuPy).
    sample_weight : array of shape (l,), optional
        Non-negative selection budgets (see the module notes): row i may be selected up to
        ``⌈sᵢ⌉`` times, with the full step (19) per whole unit and the fraction
        ``sᵢ − ⌊sᵢ⌋`` of it for a last partial unit. None: 1 each (the paper). An integer
        weight k equals k copies of the row; 0 removes it.
    max_support : int or None
        At most this many selections (samples selected, a row counted once per selection);
        None: as many as the budgets allow (``l`` without weights).
    tol : float, default 0.0
        Stop when every unselected sample has ``g_β / √K_ββ >= −tol`` (for RBF simply
        ``y_β f(x_β) >= 1 − tol``): ``tol`` bounds the violation of the KKT condition
        ``g_β >= 0`` of an unselected sample. 0 is the paper's rule (20). With weights, the
        rule reads the keys ``φ_β g_β/√K_ββ`` of the rows with budget left.
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
        On the host with ``batch=1``, dense X and a kernel that decays with distance (RBF,
        Laplacian): order the rows along a k-d tree (:class:`~svmgpu.kernels.RowPartition`)
        and skip, in each column, the row blocks where every kernel value is below ``2⁻¹⁰ ε``
        (``ε`` the machine epsilon of the dtype): the gradient then differs from the full
        update only at the rounding level, and a local kernel (large γ) evaluates a fraction
        of each column. Used only when the cut-off distance is shorter than the data's extent.
    verbose : int
        1: a summary line (and a progress bar with tqdm); 2: also a line per ``check_every``
        stages, through the ``svmgpu.stagewise`` logger (:mod:`svmgpu._log`).

    Returns
    -------
    SolverResult
        ``coef``: the weights α of shape (n,) of the n selections, in the order selected
        (all > 0). ``n_iter``: stages performed (= n for ``batch=1``). ``converged``: whether
        the stopping rule holds (False when ``max_support`` stopped it first).
        ``objective_history``: the loss (10) after 0, 1, …, n selections (index 0: L = 0).
        ``timings``: ``{"stages": seconds}``. ``info``:

        - ``selected``: int array of shape (n,), the row of each selection (a row appears
          more than once only when its weight exceeds 1);
        - ``support``: int array of shape (n_SV,), the distinct selected rows in the order of
          their first selection (= ``selected`` without weights);
        - ``dual_coef``: array of shape (n_SV,), ``Σ α y`` over each row's selections: the
          decision function is ``f(x) = Σ dual_coef_i K(x, X[support_i])``, (5) without
          offset;
        - ``scores``: array of shape (l,), ``g_β/√K_ββ`` with the final gradient (15)
          ``g = y ⊙ f(X) − 1`` on unselected rows (times ``φ_β`` with weights), +inf on rows
          whose budget is spent (the stopping rule holds when its minimum is >= −tol);
        - ``norm_w_sq``: float, ``‖w‖² = Σ αᵢ yᵢ f(xᵢ)``, the ``A_ω⁻²`` of (28);
        - ``implicit_margin``: float, ``A_ω = 1/‖w‖`` (inf when nothing was selected);
        - ``n_kernel_evals``: int, kernel evaluations performed (``l`` per column, plus the
          ``b × b`` pool blocks);
        - ``stop``: ``"rule"`` or ``"max_support"``.

    Raises
    ------
    ValueError
        For NaN/inf in ``X``, mismatched shapes, labels other than ±1, a single class (among
        the rows of positive weight), negative or non-finite weights, or bad ``max_support`` /
        ``tol`` / ``batch``.
    MemoryError
        When the budget cannot hold a single row of a column block.
    """
    check_stagewise_params(max_support, tol, batch)
    check_every = _check_int("check_every", check_every, minimum=1)
    if not isinstance(prune, bool):
        raise ValueError(f"prune must be True or False, got {prune!r}")
    _check_input(X, y, sample_weight, xp=xp)
    t_start = time.perf_counter()
    l = int(X.shape[0])
    y = xp.astype(y, X.dtype)
    batch = min(int(batch), l)
    state = _StagewiseState(X, y, kernel, xp=xp, sample_weight=sample_weight, tol=tol,
                            batch=batch, memory_budget=memory_budget, prune=prune)
    n_total = state.n_total
    limit = n_total if max_support is None else min(int(max_support), n_total)

    bar = progress("GS-SVM stages", unit="stage")
    selected, alpha, deltas, n_sel, n_stages, n_evals, stop = state.run(limit, batch,
                                                                         check_every, bar)
    S = state.scores()
    dual_coef = alpha * xp.take(y, selected)
    # a row selected several times (weight > 1) is one support vector: its α y summed
    support, sv_coef = (selected, dual_coef) if sample_weight is None else \
        _sum_by_row(selected, dual_coef, xp=xp)
    if stop == "max_support":  # the rule may hold all the same (one more read of the scores)
        converged = n_sel == n_total or not bool(xp.min(S) < -float(tol))
    else:
        converged = True
    history = [0.0] + [float(v) for v in to_host(
        xp.cumulative_sum(deltas), why="the objective history is a host list").tolist()]
    # ‖w‖² from the loss: L = ½‖w‖² − Σα (10) after every selection (each changes ‖w‖² by
    # α(g_β + 2) and L by α g_β/2 for a full step), so ‖w‖² = 2 (L + Σα) — the A_ω⁻² of (28)
    # without touching K_SS.
    norm_w_sq = max(2.0 * (history[-1] + float(xp.sum(alpha))), 0.0)
    elapsed = time.perf_counter() - t_start
    bar.close()
    _log.info(fields(rows=l, stages=n_stages, selected=n_sel, stop=stop, loss=history[-1],
                     norm_w_sq=norm_w_sq, seconds=elapsed))
    return SolverResult(
        coef=alpha,
        n_iter=n_stages,
        converged=converged,
        objective_history=history,
        timings={"stages": elapsed},
        info={
            "selected": selected,
            "support": support,
            "dual_coef": sv_coef,
            "scores": S,
            "norm_w_sq": norm_w_sq,
            "implicit_margin": 1.0 / math.sqrt(norm_w_sq) if norm_w_sq > 0 else math.inf,
            "n_kernel_evals": n_evals,
            "stop": stop,
        },
    )
