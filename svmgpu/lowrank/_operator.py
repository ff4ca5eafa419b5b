"""The m × r feature matrix ``P`` as one operator, however it was built.

``P`` is the Nyström / pivoted-Cholesky factor (``K ≈ P Pᵀ``, UniSVM section 4.2) or the
reduced-kernel columns ``K(X, X_J)`` of the GSVM / RKHS models (Zhou 2013, (17)). Every solver
reads it through the few products below, each a sum over row blocks:

    P v,   Pᵀ u = Σ_b P_bᵀ u_b,   Pᵀ W P = Σ_b P_bᵀ W_b P_b,

so the rows may sit in memory, be recomputed from ``X`` per block when ``P`` does not fit, or
(for a Dask backend) come from partitions. The r × r results are float64 whatever ``P``'s dtype.
"""

from __future__ import annotations

import functools

from svmgpu.backend import (
    BlockScratch,
    GramAccumulator,
    array_device,
    block_rows,
    fetch_scalars,
    format_bytes,
    get_namespace,
    is_numpy,
    matmul,
    nonzero_indices,
    numpy_dtype,
    range_block,
    range_indices,
    resolve_budget,
    take_block,
    take_rows,
    transposed_product,
)
from svmgpu.kernels import kernel_block_min_bytes
from svmgpu.lowrank._protocol import RowSource

#: Bytes of a (float64) row block of ``gram`` and ``rmatvec`` on the CPU: large enough for BLAS
#: efficiency, small enough that a gathered block and its weighted copy stay small next to P. On
#: a GPU only the budget bounds a block: each block costs a few kernel launches and their Python
#: overhead (32 MiB blocks made the Newton solve on 1M rows 2x slower on an H100).
_CPU_BLOCK_BYTES = 32 << 20
#: The same for the blocks of :meth:`FeatureOperator.gram`: a block of 512 rows at r = 1000 and
#: its weighted copy stay in the cache for the ``syrk`` (the Covtype Hessian is faster in 4 MiB
#: blocks than in 32 MiB blocks; the timings: bench/README.md).
_CPU_GRAM_BLOCK_BYTES = 4 << 20


def _at(v, where, *, xp):
    return take_rows(v, where, xp=xp)


def _same_value(w, *, xp):
    """The one value of the entries of the 1-D array ``w``, or None where they differ (or
    off NumPy, where reading it would wait for the device): the Newton Hessian's curvatures
    are one value on every row of a piecewise-quadratic loss's quadratic pieces without
    sample weights (the Huber hinge's ``1/(2δ)``), and its updates' changes ``±`` that value,
    so a block's Gram matrix is that value times ``PᵀP`` (:meth:`FeatureOperator.gram`: the
    weighted copy of each block was 0.13 s of Covtype's 7 classes on 50,000 rows, a 5.7 s
    fit)."""
    if not is_numpy(xp) or w.shape[0] == 0:
        return None
    first = float(w[0])
    return first if bool(xp.all(w == first)) else None


class FeatureOperator:
    """The m × r feature matrix ``P`` of a kernel model, read through row-block products.

    Either the rows are held in memory (``P``), or they are recomputed from the training points
    ``X`` by ``feature_map`` for each block that a product visits (when the m × r matrix does not
    fit the budget; each pass then costs a kernel evaluation of the block). ``repr`` says which.

    Parameters
    ----------
    P : array of shape (m, r), optional
        The rows, in memory.
    X : array of shape (m, n_features), optional
        The training points, with ``feature_map`` and ``rank`` instead of ``P``.
    feature_map : callable, optional
        ``feature_map(X_block) -> array of shape (n, r)``: the features of any points (the
        Nyström map ``K(x, X_B) L⁻ᵀ`` or the kernel columns ``K(x, X_J)``); also serves
        :meth:`transform`. Optional with ``P`` (then :meth:`transform` is unavailable).
    rank : int, optional
        r, needed with ``X`` (the map's output width).
    memory_budget : int or str, optional
        Bytes for the row blocks, resolved once here (default: half the free memory of the
        device).

    Attributes
    ----------
    shape, dtype, xp, device, budget_bytes, in_memory
    distributed : bool
        False: the rows are in this process (the :class:`~svmgpu.lowrank.RowSource`
        contract; :class:`svmgpu.distributed.DaskFeatures` is the distributed source).
    """

    distributed = False

    def __init__(self, P=None, *, X=None, feature_map=None, rank=None, memory_budget=None):
        if (P is None) == (X is None):
            raise ValueError("pass exactly one of P (rows in memory) and X (rows recomputed)")
        if X is not None and (feature_map is None or rank is None):
            raise ValueError("recomputed rows need feature_map and rank")
        data = P if P is not None else X
        if data.ndim != 2:
            raise ValueError(f"{'P' if P is not None else 'X'} must be 2-D, got shape "
                             f"{tuple(data.shape)}")
        self._P, self._X, self._map = P, X, feature_map
        self.device = array_device(data)
        self.xp = self.device.xp
        self.shape = (int(data.shape[0]), int(P.shape[1] if P is not None else rank))
        self.dtype = data.dtype
        self.budget_bytes = resolve_budget(memory_budget, self.device)

    # ------------------------------------------------------------------------ description
    @property
    def in_memory(self) -> bool:
        """True when the rows are held in memory, False when recomputed per block."""
        return self._P is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the m × r matrix (held, or what holding it would take)."""
        return self.shape[0] * self.shape[1] * numpy_dtype(self.dtype).itemsize

    def __repr__(self):
        m, r = self.shape
        how = "in memory" if self.in_memory else \
            f"recomputed per block from X of {self._X.shape[1]} features"
        return f"FeatureOperator({m} × {r}, {numpy_dtype(self.dtype).name}, {how})"

    # ------------------------------------------------------------------------- row blocks
    def _block(self, where, scratch, native):
        """Rows ``where`` (a slice or an index array) in float64, or in P's own dtype with
        ``native`` (see :meth:`blocks`)."""
        xp = self.xp
        if self._P is not None:
            return scratch.rows(self._P, where, native=native)
        block = self._map(_at(self._X, where, xp=xp))
        return block if native else xp.astype(block, xp.float64, copy=False)

    def blocks(self, rows=None, *, cpu_block_bytes=_CPU_BLOCK_BYTES, native=False):
        """Yield ``(block in float64, where)`` over row blocks of P (all rows, or the rows of
        the index array ``rows``, gathered a block at a time); ``where`` is the slice or index
        array of the block's rows. The one reduction loop of the m × r matrix: a Dask backend
        supplies these blocks from partitions. ``native=True``: the blocks in P's own dtype
        (views of held rows where ``where`` is a slice).

        A block is valid until the next one is yielded: on NumPy gathered or converted rows
        are written into one :class:`~svmgpu.backend.BlockScratch` of this pass instead of a new
        array per block. ``cpu_block_bytes`` caps a block's float64 bytes on the CPU.
        """
        xp = self.xp
        m, r = self.shape
        n = m if rows is None else int(rows.shape[0])
        # the block as gathered (P's dtype), its float64 copy and a weighted copy (recomputed
        # rows: the map's own kernel blocks have a budget of their own, see the builders)
        per_row = r * (numpy_dtype(self.dtype).itemsize + 16)
        cap = (max(cpu_block_bytes // (8 * max(r, 1)), 256) if self.device.kind == "cpu"
               else None)
        step = min(block_rows(1, per_row, self.budget_bytes, max_rows=cap), max(n, 1))
        scratch = BlockScratch(step, r, xp=xp)
        for s in range(0, n, step):
            e = min(s + step, n)
            where = slice(s, e) if rows is None else rows[s:e]
            yield self._block(where, scratch, native), where

    # -------------------------------------------------------------------------- products
    def matvec(self, v, *, rows=None):
        """``P v`` in float64 for ``v`` of shape (r,) or (r, k) (the product in P's dtype), or
        ``P[rows] v`` for an integer index array ``rows``: those rows gathered a block at a
        time (:meth:`blocks`), not copied whole (every second row of 60,000 × 2,001 float32
        features: 240 MB of fresh memory, 0.2 s a copy)."""
        xp = self.xp
        if self._P is not None and rows is None:
            return xp.astype(matmul(self._P, xp.astype(v, self.dtype), xp=xp), xp.float64,
                             copy=False)
        n = self.shape[0] if rows is None else int(rows.shape[0])
        out = xp.empty((n,) + tuple(v.shape[1:]), dtype=xp.float64,
                       device=self.device.native_device)
        v = xp.astype(v, self.dtype if self._P is not None else xp.float64)
        s = 0
        for Pb, _ in self.blocks(rows, native=self._P is not None):
            e = s + int(Pb.shape[0])
            out[s:e, ...] = matmul(Pb, v, xp=xp)
            s = e
        return out

    def rmatvec(self, u, *, rows=None):
        """``Pᵀ u`` in float64 for ``u`` of shape (m,) or (m, k) (indexed by row), over the rows
        ``rows`` only if given; shape (r,) or (r, k). One pass over P for all k columns, in
        P's dtype over chunks of rows summed in float64
        (:func:`~svmgpu.backend.transposed_product`)."""
        xp = self.xp
        r = self.shape[1]
        out = xp.zeros((r,) + tuple(u.shape[1:]), dtype=xp.float64,
                       device=self.device.native_device)
        for Pb, where in self.blocks(rows, native=True):
            out += transposed_product(Pb, _at(u, where, xp=xp), xp=xp)
        return out

    def gram(self, weights=None, *, rows=None, nonnegative=False):
        """``PᵀP`` (or ``Pᵀ diag(weights) P``, over the rows ``rows`` if given) as a float64
        array of shape (r, r).

        Computed as ``Σ_b P_bᵀ W_b P_b`` over row blocks (:class:`~svmgpu.backend.
        GramAccumulator`). Each block is converted to float64 before its product: float32
        products err by about ``√n · eps32 · ‖PᵀP‖``, and the Newton Hessian ``I + C·PᵀΛP`` then
        loses positive definiteness once ``C`` times that error passes 1 (seen on Covtype at
        C ≈ 3e3). ``weights`` has shape (m,) (indexed by row, also with ``rows``; any sign, e.g.
        a change of curvature); ``rows`` is an integer index array: only those rows are
        gathered, a block at a time. ``nonnegative=True`` promises weights >= 0: each block is
        then scaled by ``√w`` and its Gram matrix ``AᵀA`` is a symmetric rank-k update (BLAS
        ``syrk`` on NumPy: half the flops of the signed product).
        """
        xp = self.xp
        r = self.shape[1]
        acc = GramAccumulator(r, xp=xp, device=self.device.native_device)
        passes = [(rows, 1.0)]
        if weights is not None and not nonnegative and is_numpy(xp):
            # signed weights on the host: one syrk pass over the rows of each sign, half the
            # flops of the signed gemm (the incremental Hessian's updates: on ijcnn1 at r = 1000
            # they were 2.2 s of a 3.9 s solve; bench/README.md)
            idx = xp.arange(self.shape[0]) if rows is None else rows
            w = _at(weights, idx, xp=xp)
            passes = [(idx[w > 0], 1.0), (idx[w < 0], -1.0)]
            nonnegative = True
        for prows, sign in passes:
            scratch = None
            for Pb, where in self.blocks(prows, cpu_block_bytes=_CPU_GRAM_BLOCK_BYTES):
                if weights is None:
                    acc.add_sym(Pb)
                    continue
                if scratch is None:  # the first block of a pass is its largest
                    scratch = BlockScratch(Pb.shape[0], r, xp=xp)
                wb = xp.astype(_at(weights, where, xp=xp), xp.float64)
                same = _same_value(wb, xp=xp) if nonnegative else None
                if same is not None:  # (one weight on the block's rows: no weighted copy)
                    acc.add_sym(Pb, alpha=same)
                elif nonnegative:
                    acc.add_sym(scratch.weighted(Pb, xp.sqrt(sign * wb)), alpha=sign)
                else:
                    acc.add(scratch.weighted(Pb, wb), Pb)
        return acc.result()

    # ------------------------------------------------------------------------ row objects
    def rows(self, cls, y, sample_weight=None, **kwargs):
        """The row object ``cls(self, y, sample_weight, **kwargs)`` of a problem on these rows
        (e.g. :class:`~svmgpu.solvers.newton.NewtonRows`; :meth:`RowSource.rows
        <svmgpu.lowrank.RowSource.rows>`)."""
        return cls(self, y, sample_weight, **kwargs)

    def reduce(self, fn, *vectors):
        """``fn(self, *vectors)``: the one partition of rows in this process
        (:meth:`RowSource.reduce <svmgpu.lowrank.RowSource.reduce>`)."""
        return fn(self, *vectors)

    # ------------------------------------------------------------------------ sub-problems
    def take(self, rows, cols=None, *, out=None):
        """The operator of the rows ``rows``, and of the columns ``cols`` only when given
        (integer index arrays on P's device): a copy of that block in memory (written into
        ``out`` on NumPy when given: :func:`~svmgpu.backend.take_block`), or the map over
        ``X[rows]`` (its columns ``cols`` kept)."""
        xp = self.xp
        fmap = self._map
        if cols is not None and fmap is not None:
            fmap = functools.partial(_columns_of, fmap, cols)
        if self._P is not None:
            P = xp.take(self._P, rows, axis=0) if cols is None else \
                take_block(self._P, rows, cols, xp=xp, out=out)
            return FeatureOperator(P, feature_map=fmap, memory_budget=self.budget_bytes)
        return FeatureOperator(X=take_rows(self._X, rows, xp=xp), feature_map=fmap,
                               rank=self.shape[1] if cols is None else int(cols.shape[0]),
                               memory_budget=self.budget_bytes)

    def take_ranges(self, row_ranges, col_ranges, *, out=None, at=None):
        """:meth:`take` of the rows and columns of index ranges ``[(start, stop), ...]`` (host
        ints, ascending), each range's rows placed at the rows ``at`` of the result when given
        (:func:`~svmgpu.backend.range_block`): held rows copied range by range (into ``out``
        on NumPy when given), recomputed rows as :meth:`take` of their indices."""
        xp = self.xp
        dev = self.device.native_device
        cols = range_indices(col_ranges, xp=xp, device=dev)
        if self._P is None:
            rows = range_indices(row_ranges, xp=xp, device=dev)
            if at is not None:  # (the row of each place)
                rows = xp.take(rows, xp.argsort(xp.concat(at), stable=False))
            return self.take(rows, cols)
        fmap = None if self._map is None else functools.partial(_columns_of, self._map, cols)
        return FeatureOperator(range_block(self._P, row_ranges, col_ranges, xp=xp, out=out,
                                           at=at),
                               feature_map=fmap, memory_budget=self.budget_bytes)

    def to_array(self, dtype=None):
        """The m × r matrix as one array (P itself when in memory and ``dtype`` matches)."""
        xp = self.xp
        P = self._P if self._P is not None else self._map(self._X)
        return P if dtype is None else xp.astype(P, dtype, copy=False)

    def transform(self, X_new):
        """Features of new points, shape (n, r), by the operator's feature map."""
        if self._map is None:
            raise ValueError("this FeatureOperator wraps a feature array without its feature "
                             "map; build it with feature_map= to transform new points")
        return self._map(X_new)


class CurvatureGram:
    """``M = Pᵀ diag(κ) P`` for per-row weights ``κ >= 0`` (curvatures times sample weights),
    kept up to date with the rows whose weight changed (Zhou 2013, (23)/(25)) instead of being
    rebuilt: the incremental Hessian of the semi-smooth Newton solver.

    :meth:`update` adds ``Pᵀ diag(κ_new − κ) P`` over the rows that changed; it rebuilds ``M``
    from the rows with ``κ_new ≠ 0`` on the first call, when that is cheaper (more rows changed
    than are active), or when asked to (``mode="recompute"``).

    Parameters
    ----------
    P : FeatureOperator
    """

    def __init__(self, P):
        self.P = P
        self.xp = xp = P.xp
        m, r = P.shape
        dev = P.device.native_device
        self.kappa = xp.zeros((m,), dtype=xp.float64, device=dev)
        self.M = xp.zeros((r, r), dtype=xp.float64, device=dev)
        self.fresh = True
        self.n_incremental = 0
        self.n_recompute = 0

    def update(self, kappa, *, mode="auto", changed=None, active=None, n_changed=None,
               n_active=None):
        """Make ``M`` the Gram matrix for the weights ``kappa`` (shape (m,), >= 0); returns it.

        ``changed``/``active`` (``kappa ≠ self.kappa``, ``kappa ≠ 0``) and their counts may be
        passed by a caller that has already read them (in one batched read with others: a
        Newton iteration's first synchronisation); otherwise they are computed here (one
        read). ``mode``: "auto", "incremental" (after the first build) or "recompute".
        """
        xp = self.xp
        if changed is None:
            changed, active = kappa != self.kappa, kappa != 0
            n_changed, n_active = (int(c) for c in fetch_scalars(
                xp.count_nonzero(changed), xp.count_nonzero(active), xp=xp))
        rebuild = self.fresh or mode == "recompute" or (mode == "auto" and n_changed > n_active)
        if rebuild:
            self.M = self.P.gram(kappa, rows=nonzero_indices(active, n_active, xp=xp),
                                 nonnegative=True)
            self.n_recompute += 1
        elif n_changed:
            self.M = self.M + self.P.gram(kappa - self.kappa,
                                          rows=nonzero_indices(changed, n_changed, xp=xp))
            self.n_incremental += 1
        self.kappa, self.fresh = kappa, False
        return self.M


#: Bytes per training sample a low-rank fit holds besides its features: labels, weights and the
#: solver's per-sample float64 vectors (margins, residuals, loss derivatives and curvatures, the
#: previous ones for the active-set test, the line search's trial margins, masks). Checked by
#: the measured peak in tests/test_robustness.py.
PER_SAMPLE_BYTES = 160

#: Rows of the smallest row block (of the features, in float64 with a weighted copy) that an
#: in-memory fit leaves room for next to the held features.
MIN_BLOCK_ROWS = 2048


def feature_plan(m, r, budget, *, itemsize, n_presolve=0, copied_rows=0, who="the fit",
                 n_features=None):
    """How the m × r features of a fit (or of the rows one Dask worker holds) fit ``budget``
    bytes, which bounds everything the fit allocates beyond its input (README, "Memory budget").

    Returns ``(in_memory, block_budget)``: hold the features (and the presolve's copies of its
    ``n_presolve`` rows, and ``copied_rows`` more rows of copies that exist only when the
    features are held, such as the one-vs-one pairs' blocks) when they leave room for row
    blocks (of a quarter of the rest, or of
    :data:`MIN_BLOCK_ROWS` rows if less) in what the per-sample vectors and r × r matrices
    leave, else recompute their rows per block (every pass over them then costs a kernel
    evaluation: many times slower at large ranks); ``block_budget`` is what the row blocks may
    use.

    Raises
    ------
    MemoryError
        Up front, before any kernel evaluation, when even the per-sample vectors and the
        r × r matrices exceed the budget; with ``n_features`` (dense rows of that many
        features, the features' kernel columns recomputed per block where they are not held),
        also where the rest cannot hold a block row of the features and of their kernel
        columns (half of it each, as :func:`~svmgpu.lowrank.reduced_kernel_features` splits
        it): a budget just above the r × r matrices had raised in the first pass instead.
    """
    core = PER_SAMPLE_BYTES * m + 8 * 8 * r * r  # Gram, Hessian, factors, L⁻¹, K_BB, ...
    if core > budget:
        raise MemoryError(
            f"{who} at rank {r} needs about {format_bytes(core)} besides its features (the "
            f"solver's per-sample vectors and r x r matrices), more than the memory budget "
            f"({format_bytes(budget)}); raise memory_budget, lower the rank, or subsample the "
            "data (or, on Dask, use more workers)")
    held = (m + 2 * n_presolve + copied_rows) * r * itemsize  # the features and copies
    rest = budget - core
    blocks = min(rest // 4, MIN_BLOCK_ROWS * r * (itemsize + 16))  # see FeatureOperator
    if held + blocks <= rest:
        return True, rest - held
    if n_features is not None:
        need = 2 * max(kernel_block_min_bytes(r, n_features, itemsize), r * (itemsize + 16))
        if rest < need:
            raise MemoryError(
                f"{who} at rank {r} needs about {format_bytes(core + need)}, its features' "
                f"rows recomputed per block, more than the memory budget "
                f"({format_bytes(budget)}); raise memory_budget or lower the rank")
    return False, rest


def _columns_of(feature_map, cols, X, **kwargs):
    """The columns ``cols`` of ``feature_map(X)`` (:meth:`FeatureOperator.take`)."""
    P = feature_map(X, **kwargs)
    return get_namespace(P).take(P, cols, axis=1)


def as_operator(P, *, memory_budget=None) -> FeatureOperator:
    """``P`` itself if it is a :class:`~svmgpu.lowrank.RowSource` (a :class:`FeatureOperator`
    or a distributed source), else an in-memory operator over the array ``P`` (the public
    solvers accept either)."""
    if isinstance(P, RowSource):  # a FeatureOperator, or the rows of a distributed fit
        return P
    return FeatureOperator(P, memory_budget=memory_budget)


__all__ = ["MIN_BLOCK_ROWS", "PER_SAMPLE_BYTES", "CurvatureGram", "FeatureOperator",
           "as_operator", "feature_plan"]
