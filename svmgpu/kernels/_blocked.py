"""Row-blocked kernel products that never hold more than a byte budget."""

from __future__ import annotations

import os

from svmgpu._log import progress as _progress
from svmgpu.backend import (
    Workspace,
    array_device,
    block_rows,
    format_bytes,
    get_namespace,
    is_numpy,
    is_sparse,
    map_threads,
    matmul,
    native_device,
    resolve_budget,
    row_sq_norms,
    set_rows,
    sparse_side,
    take_rows,
)
from svmgpu.kernels._partition import (
    MATVEC_LEAF_SIZE,
    RowPartition,
    negligible_level,
    pruned_matvec,
)

#: Buffers of one block row alive at once while a block is evaluated (the block, the
#: exponent/temporary and a product); used to turn a byte budget into block rows.
_BLOCK_BUFFERS = 3

#: Rows of a block on the CPU: a (rows × n_z) block of about 1 MiB stays in the L2 cache while it
#: is exponentiated and used (measured fastest on 2-core Xeons), but never fewer than
#: ``_CPU_MIN_ROWS`` rows, or BLAS runs poorly for large n_z.
_CPU_BLOCK_BYTES = 1 << 20
_CPU_MIN_ROWS = 512

#: Kernel values from which :func:`kernel_matvec` (NumPy) splits its rows into one part per
#: core, each a thread with BLAS on one thread (:func:`~svmgpu.backend.map_threads`): the
#: exponentials of a block take most of its time and NumPy's ``exp`` runs on one core.
#: Predictions on this 2-core VM (float32 kernel values, medians of five, alternating):
#: ijcnn1's 91,701 test rows against 1,003 landmarks (92M values) 0.45 / 0.58 / 0.44 / 0.47 →
#: 0.34 / 0.38 / 0.32 / 0.34 s in four runs, and 0.29 / 0.32 → 0.30 / 0.32 s in two others;
#: Covtype's 50,000 against 7 classes' landmarks 0.57 → 0.55 s. Smaller products were slower
#: in threads: ``make_classification``'s 5,000 test rows against 5,593 support vectors (28M
#: values) 0.107 → 0.143 s, friedman1's 5,000 against 1,418 landmarks 0.030 → 0.037 s.
THREADED_MATVEC_VALUES = 1 << 25

#: Dense features above which :func:`kernel_matvec` stays in one part (BLAS on every core):
#: there the product of the distances, not ``exp``, takes most of a block's time, and one
#: multi-threaded product shares its packed Z between the cores where two threads each pack
#: their own. Session 30, this 2-core VM, 4,000 rows of the hard 784-feature stand-in against
#: its model's 34,708 support vectors (45 one-vs-one columns): 3.5–4.1 s in threads against
#: 2.3–2.9 s in one part (six of each, alternating); its 10,000 test images 10.5 s in threads.
#: At 22–256 features (20,000 rows against 8,000, 10 columns) the two were within noise.
THREADED_MATVEC_MAX_FEATURES = 64

#: Kernel values of a product below which :func:`kernel_matvec` never prunes: building the two
#: k-d trees costs about as much as this many kernel values.
PRUNE_MIN_VALUES = 1 << 24

#: :func:`kernel_matvec` prunes only where a sample of the new points reaches at most this
#: fraction of the support vectors (Covtype at γ = 32: 7 %).
PRUNE_MAX_REACH = 0.5


def iter_kernel_blocks(kernel, X, Z, *, memory_budget=None, max_rows=None, center=None,
                       out=None, progress=None, columns=None, symmetric=False):
    """Yield ``(start, stop, K[start:stop])`` for row blocks of ``K(X, Z)``: the one blocked
    kernel loop of the library (full-kernel products, Nyström features, reduced-kernel columns).

    Z's side of the kernel is prepared once. On NumPy each block's product runs on SciPy's BLAS
    (:func:`svmgpu.backend.matmul`), the library of the ``trmm`` that the Nyström features
    apply to each block next: one thread pool for the whole loop.

    Parameters
    ----------
    kernel : Kernel
    X : array of shape (n_x, n_features)
    Z : array of shape (n_z, n_features)
    memory_budget : int or str, optional
        Bytes the blocks may use (default: half the free memory of X's device).
    max_rows : int, optional
        Upper bound on the rows of a block.
    center : array, optional
        The centre of translation-invariant kernels (default: ``kernel.center_of(Z)``).
    out : array of shape (n_x, n_z), optional
        Write the blocks into ``out[start:stop]`` (in place on NumPy, by assignment elsewhere)
        and yield those views: ``out`` is the caller's result, not charged to the budget (on
        NumPy, an ``out`` whose rows are strided, such as a grown rank's new columns of the
        held features, gets each block copied in from a contiguous buffer, and that buffer is
        yielded: read it, do not change it). Its
        dtype may be narrower than X's (each block computed in X's dtype, its values stored in
        out's: ``Kernel.against``; the block in X's dtype is then charged).
    progress : str, optional
        The name of a progress bar over the rows, shown in a ``verbose=1`` fit (svmgpu._log).
    columns : callable, optional
        Z's side already prepared, ``kernel.against(kernel.prepare(Z, center))``: a caller
        that evaluates many row sets against the same Z prepares it once
        (:class:`KernelRows`).
    symmetric : bool, default False
        ``K(X, X)`` (Z is X) into ``out``, which is then required: each block row's product
        only from its diagonal block on (the upper block triangle: half the kernel values of
        the whole matrix), the block column below it copied from it (``K``'s symmetry).

    Raises
    ------
    MemoryError
        When the budget cannot hold a single row of the block.
    """
    xp = get_namespace(X, Z)
    device = array_device(X)
    budget = resolve_budget(memory_budget, device)
    n_z = Z.shape[0]
    itemsize = X.dtype.itemsize if hasattr(X.dtype, "itemsize") else 8
    # The prepared Z (n_z × (d + 2); sparse Z: its stored values and their column indices)
    # lives for the whole iteration: charge it to the budget.
    fixed = int(Z.nnz) * (itemsize + 8) * 2 if is_sparse(Z) else \
        _prepared_bytes(n_z, Z.shape[1], itemsize)
    if device.kind == "cpu":
        cap = max(_CPU_BLOCK_BYTES // max(n_z * itemsize, 1), _CPU_MIN_ROWS)
        max_rows = cap if max_rows is None else min(max_rows, cap)
    if budget <= fixed:
        raise MemoryError(
            f"the memory budget ({format_bytes(budget)}) cannot hold the prepared kernel "
            f"columns of {n_z} points ({format_bytes(fixed)}), let alone a block of rows; raise "
            "memory_budget or lower the rank")
    rows = block_rows(n_z + X.shape[1] + 2, itemsize, budget - fixed,
                      n_buffers=_BLOCK_BUFFERS - (out is not None and out.dtype == X.dtype),
                      max_rows=max_rows)
    if symmetric and (out is None or X.shape[0] != n_z or is_sparse(X)):
        raise ValueError("symmetric blocks need dense X as Z and out")
    blocks = _kernel_blocks(kernel, X, Z, rows, xp=xp, center=center, out=out, columns=columns,
                            symmetric=symmetric)
    if progress is None:
        yield from blocks
        return
    bar = _progress(progress, total=X.shape[0], unit="row")
    for s, e, K in blocks:
        yield s, e, K
        bar.update(e - s)
    bar.close()


def _kernel_blocks(kernel, X, Z, rows, *, xp, center, out, columns=None, symmetric=False):
    """The blocks of :func:`iter_kernel_blocks`, ``rows`` rows at a time."""
    n = X.shape[0]
    if is_sparse(X):  # sparse rows against dense Z: X Zᵀ and the row norms, X never densified
        Z = sparse_side(Z, X)  # (a sparse-enough Z to CSR once, not copied at every product)
        sq_z = row_sq_norms(Z, xp=xp)
        for s in range(0, n, rows):
            e = min(s + rows, n)
            view = None if out is None else out[s:e, ...]
            yield s, e, kernel.sparse_block(X[s:e], Z, xp=xp, sq_z=sq_z, out=view)
        return
    if is_sparse(Z):  # dense rows against sparse Z (a sparse fit's support vectors): the
        # blocks of K(Z, X)ᵀ, Z never densified
        for s in range(0, n, rows):
            e = min(s + rows, n)
            K = xp.matrix_transpose(kernel.sparse_block(Z, X[s:e, ...], xp=xp))
            if out is not None:
                out[s:e, ...] = K
                K = out[s:e, ...]
            yield s, e, K
        return
    c = kernel.center_of(Z, xp=xp) if center is None else center
    column_block = kernel.against(kernel.prepare(Z, c, xp=xp), xp=xp) \
        if columns is None else columns  # (Z's side once)
    # (symmetric: each block row's product into one reused buffer, contiguous, then copied
    # to its place and below the diagonal; written straight into out's strided rows, every
    # block was a fresh array from BLAS, 16 MB a block at 8,000 rows)
    # (out's rows strided, NumPy: a grown rank's new columns of the held features. Each block
    # computed in one reused contiguous buffer, in the caches, then copied to its place: BLAS
    # had written a new array per block and its transpose was copied into the strided rows,
    # and the clip, exp and finiteness check ran on those rows in memory; ijcnn1's 294 new
    # columns of 50,000 × 1,004 float32 features 55 → 41 ms, its four grown stages' features
    # 0.203 → 0.152 s a fit, session 68)
    strided = out is not None and is_numpy(xp) and not symmetric and \
        not out.flags.c_contiguous
    space = Workspace(xp) if symmetric or strided else None
    for s in range(0, n, rows):
        e = min(s + rows, n)
        px = kernel.prepare(X[s:e, ...], c, xp=xp)
        if symmetric:
            K = column_block(px, out=space.empty("block", (e - s, n - s), out.dtype), start=s)
            out[s:e, s:] = K
            out[e:, s:e] = xp.matrix_transpose(K[:, e - s:])
            del K
            yield s, e, out[s:e, ...]
            continue
        view = None if out is None else out[s:e, ...]
        if strided:
            K = column_block(px, out=space.empty("block", tuple(view.shape), out.dtype))
            view[...] = K
            yield s, e, K  # (the block's values, in the caches: the caller reads them there)
            continue
        K = column_block(px, out=view)
        if view is not None and K is not view:  # namespaces / kernels that return a new array
            view[...] = K
            K = view
        yield s, e, K


#: :class:`KernelRows` computes every row at once where its first rows asked for are at least
#: this share of them and the rows have at least :data:`SYMMETRIC_MIN_FEATURES` features: the
#: upper block triangle's products, the rest copied (:func:`iter_kernel_blocks`'s
#: ``symmetric``). A kernel value of 784 features costs about ten times its copy, and the
#: exact path's Newton steps went on to read 64–89 % of the rows where their first rows were
#: 35–74 % (the one-vs-one pairs of the refinement of a 60,000 × 784 stand-in).
SYMMETRIC_SHARE = 0.5
#: The least features for :data:`SYMMETRIC_SHARE` (below, ``exp`` rather than the product takes
#: most of a kernel value's time, and the copy of the lower triangle costs about half as much).
SYMMETRIC_MIN_FEATURES = 256


def kernel_block_min_bytes(n_z, n_features, itemsize):
    """The least memory budget with which :func:`iter_kernel_blocks` evaluates dense rows of
    ``n_features`` against ``n_z`` points: Z's prepared side, charged as there, and one block
    row in each of its buffers (a planner's check before a fit that recomputes its kernel
    columns per block)."""
    return _prepared_bytes(n_z, n_features, itemsize) + \
        (int(n_z) + int(n_features) + 2) * int(itemsize) * _BLOCK_BUFFERS


def _prepared_bytes(n_z, n_features, itemsize):
    """The bytes :func:`iter_kernel_blocks` charges for dense Z's prepared side, n_z × (d + 2),
    twice (the prepared rows and the kernel's side of them)."""
    return int(n_z) * (int(n_features) + 2) * int(itemsize) * 2


class KernelRows:
    """The kernel matrix ``K(X, X)`` whose rows are computed when first asked for.

    The exact path's Newton steps read K's rows at the rows where α changes (its support and
    the rows near the margin: :func:`svmgpu.solvers.exact.exact_newton`), never all of them
    on most data: make_classification's 20,000 rows touched 9,065. :meth:`compute` evaluates
    the rows asked for that are not held yet, by the blocked kernel loop
    (:func:`iter_kernel_blocks`), and appends them to a row store: K's row ``i`` is the
    store's row ``slot(i)``. Only the rows computed are ever written, so only their memory is
    touched (a zero-filled m × m matrix written at scattered rows is not: transparent huge
    pages back 2 MiB at a time, and 2,056 scattered rows of 20,000 made all 1.6 GB of it
    resident). The values are ``kernel.block(X, X)``'s (the same centre, X's mean).

    Parameters
    ----------
    kernel : Kernel
    X : array or sparse matrix (CSR) of shape (m, n_features)
        The rows; K has X's dtype. Sparse rows stay sparse: their rows of K come from sparse
        products (:meth:`Kernel.sparse_block`), never densified (2,000 rows of 100,000
        features densified for the exact path took 1.6 GB and 24–35 s).
    center : array, optional
        The centre of translation-invariant kernels (default: X's mean; :meth:`strided` passes
        its own, so that a subset's values are the whole's). None for sparse rows (not
        centred: :meth:`Kernel.sparse_block`).
    space : Workspace, optional
        Buffers reused by a caller's successive matrices (:class:`~svmgpu.backend.Workspace`):
        the store is its buffer named for K's dtype, whose pages an earlier matrix of the same
        caller touched already. The caller keeps one such matrix of a dtype alive at a time
        (the next one's store overwrites the last one's). None: a store of its own.

    Attributes
    ----------
    store : array of shape (m, m)
        The rows computed so far, in the order they were computed (its first
        :attr:`computed` rows).
    shape, dtype : K's.
    computed : int
        Rows computed so far.
    """

    def __init__(self, kernel, X, *, center=None, space=None):
        xp = get_namespace(X)
        if len(X.shape) != 2:
            raise ValueError("KernelRows needs 2-D rows")
        self.kernel, self.X, self.xp = kernel, X, xp
        self.sparse = is_sparse(X)
        self.center = None if self.sparse else \
            (kernel.center_of(X, xp=xp) if center is None else center)
        m = int(X.shape[0])
        self.shape, self.dtype = (m, m), X.dtype
        dev = native_device(X)
        store = None if space is None else space.empty(f"KernelRows {X.dtype}", (m, m), X.dtype)
        self.store = xp.empty((m, m), dtype=X.dtype, device=dev) if store is None else store
        # (written row by row)
        self._slot = xp.full((m,), -1, dtype=xp.int64, device=dev)
        self.computed = 0
        self._columns = None  # (X's side of the kernel, prepared at the first compute)

    def compute(self, rows):
        """Compute K's rows at ``rows`` (distinct integer indices) that are not held yet;
        returns their slots (:meth:`slots`)."""
        xp = self.xp
        if self.computed < self.shape[0]:
            miss = xp.take(rows, xp.nonzero(xp.take(self._slot, rows) < 0)[0])
            n, c = int(miss.shape[0]), self.computed
            if c == 0 and n >= SYMMETRIC_SHARE * self.shape[0] and not self.sparse and \
                    self.X.shape[1] >= SYMMETRIC_MIN_FEATURES:
                self._all_rows()
                return self.slots(rows)
            if n:
                self._evaluate(miss, self.store[c:c + n, ...])
                self._slot = set_rows(self._slot, miss, xp.arange(
                    c, c + n, dtype=xp.int64, device=native_device(self.X)), xp=xp)
                self.computed = c + n
        return self.slots(rows)

    def sample(self, rows):
        """K's rows ``rows`` as a new (len(rows), m) array, computed and not held (the store
        and its order untouched: a whole K asked for later is still the store itself)."""
        out = self.xp.empty((int(rows.shape[0]), self.shape[0]), dtype=self.dtype,
                            device=native_device(self.X))
        self._evaluate(rows, out)
        return out

    def _evaluate(self, rows, out):
        """K's rows ``rows`` written into ``out`` (their rows in that order) by the blocked
        kernel loop, in a thread per core where that pays (:func:`map_kernel_blocks`), X's
        side of the kernel prepared once for all calls. (Until session 65 in one thread: the
        5,923 rows × 8,639 of ``make_classification``'s 20,000-row refinement took 78–82 ms
        in its fits, 63–71 ms in two threads; ``exp`` runs on one core a thread.)"""
        xp = self.xp
        if self._columns is None and not self.sparse:  # (prepared once: the Newton steps
            # compute rows a few hundred at a time, and with 784 features preparing X's 3,000
            # rows again each time took 2.7 s of a 17 s fit of the image-like stand-in)
            self._columns = self.kernel.against(
                self.kernel.prepare(self.X, self.center, xp=xp), xp=xp)
        map_kernel_blocks(self.kernel, take_rows(self.X, rows, xp=xp), self.X, _ignore,
                          center=self.center, out=out, columns=self._columns)

    def _all_rows(self):
        """Every row computed at once, in order (K's row i the store's row i), from the upper
        block triangle's products (:func:`iter_kernel_blocks`'s ``symmetric``; sparse rows:
        every block's)."""
        xp, m = self.xp, self.shape[0]
        for _ in iter_kernel_blocks(self.kernel, self.X, self.X, center=self.center,
                                    out=self.store, symmetric=not self.sparse):
            pass
        self._slot = xp.arange(m, dtype=xp.int64, device=native_device(self.X))
        self.computed = m

    def slots(self, rows):
        """The store's rows that hold K's rows ``rows`` (computed already)."""
        return self.xp.take(self._slot, rows)

    def strided(self, step):
        """The :class:`KernelRows` of every ``step``-th row (``K[::step, ::step]``'s values)."""
        return KernelRows(self.kernel, take_rows(self.X, slice(None, None, step), xp=self.xp),
                          center=self.center)

    def full(self):
        """K itself (every row computed), as an (m, m) array: the store itself where its rows
        are in order (none computed before: all computed now from the upper block triangle,
        :meth:`_all_rows`), else a copy in order. Read it, do not write it."""
        xp = self.xp
        if self.computed == 0:
            self._all_rows()
        if self._in_order():
            return self.store
        idx = xp.arange(self.shape[0], dtype=xp.int64, device=native_device(self.X))
        return xp.take(self.store, self.compute(idx), axis=0)

    def _in_order(self):
        """Whether every row is held, K's row i in the store's row i."""
        xp = self.xp
        if self.computed < self.shape[0]:
            return False
        idx = xp.arange(self.shape[0], dtype=xp.int64, device=native_device(self.X))
        return bool(xp.all(self._slot == idx))


def kernel_matvec(kernel, X, Z, v, *, memory_budget=None, prune=False):
    """``K(X, Z) @ v`` computed block by block.

    Parameters
    ----------
    kernel : Kernel
    X : array of shape (n_x, n_features)
    Z : array of shape (n_z, n_features)
    v : array of shape (n_z,) or (n_z, k)
    memory_budget : int or str, optional
    prune : bool, default False
        Skip the pairs of rows whose kernel value is below
        :func:`~svmgpu.kernels.negligible_level` of X's dtype, where that pays: NumPy, dense X
        and Z, a kernel that decays with distance (RBF, Laplacian) whose reach is shorter than
        Z's extent, at least :data:`PRUNE_MIN_VALUES` kernel values, and a sample of X's rows
        reaching at most :data:`PRUNE_MAX_REACH` of Z's
        (:func:`~svmgpu.kernels._partition.pruned_matvec`). Each row then differs from the full
        product by at most ``negligible_level · Σ |v|``: rounding.

    Returns
    -------
    array of shape (n_x,) or (n_x, k)
    """
    xp = get_namespace(X, Z, v)
    if v.shape[0] != Z.shape[0]:
        raise ValueError(f"v has {v.shape[0]} rows but Z has {Z.shape[0]}")
    if prune:
        out = _pruned(kernel, X, Z, v, memory_budget=memory_budget, xp=xp)
        if out is not None:
            return out
    out_shape = (X.shape[0],) + tuple(v.shape[1:])
    out = xp.empty(out_shape, dtype=v.dtype, device=getattr(v, "device", None))

    def product(s, e, K):
        out[s:e, ...] = matmul(K, v, xp=xp)  # (SciPy's BLAS on NumPy; NumPy's in threads)

    map_kernel_blocks(kernel, X, Z, product, memory_budget=memory_budget)
    return out


def _ignore(start, stop, block):
    """A :func:`map_kernel_blocks` ``fn`` for blocks written into its ``out`` alone."""


def map_kernel_blocks(kernel, X, Z, fn, *, memory_budget=None, center=None, out=None,
                      progress=None, columns=None):
    """``fn(start, stop, K[start:stop])`` for every row block of ``K(X, Z)`` of the blocked
    loop (:func:`iter_kernel_blocks`, written into ``out``'s rows when given), in one thread
    per core where that pays: NumPy, at least :data:`THREADED_MATVEC_VALUES` kernel values,
    sparse X or at most :data:`THREADED_MATVEC_MAX_FEATURES` features. X's rows are then split
    into one part per core, each looped over in a thread with BLAS on one thread
    (:func:`~svmgpu.backend.map_threads`; Z's side of the kernel prepared once for all), and
    ``fn`` runs on disjoint rows at once. NumPy's ``exp`` runs on one core, and a block's
    product, whose inner dimension is the number of features, gains little from BLAS threads:
    1,954 products of (512 × 4) and (4 × 300) took 0.44 s on SciPy's two BLAS threads and
    0.19 s on one (this 2-core AVX2 VM, session 37). The features (:func:`kernel_columns`,
    Nyström's), the products (:func:`kernel_matvec`) and the rows of :class:`KernelRows` of
    the library all run here. ``columns``: Z's side already prepared, as
    :func:`iter_kernel_blocks`'s (dense Z)."""
    xp = get_namespace(X, Z)
    n = X.shape[0]
    cores = os.cpu_count() or 1
    parts = cores if is_numpy(xp) and n * Z.shape[0] >= THREADED_MATVEC_VALUES and \
        n >= 2 * cores and (is_sparse(X) or X.shape[1] <= THREADED_MATVEC_MAX_FEATURES) else 1
    if parts == 1:
        for s, e, K in iter_kernel_blocks(kernel, X, Z, memory_budget=memory_budget,
                                          center=center, out=out, progress=progress,
                                          columns=columns):
            fn(s, e, K)
        return
    budget = resolve_budget(memory_budget, array_device(X)) // parts
    if is_sparse(X) or is_sparse(Z):  # (sparse rows are not centred: Kernel.sparse_block)
        Z, center, columns = sparse_side(Z, X), None, None  # (once for every thread's blocks)
    else:
        center = kernel.center_of(Z, xp=xp) if center is None else center
        if columns is None:  # (Z's side once)
            columns = kernel.against(kernel.prepare(Z, center, xp=xp), xp=xp)
    bar = None if progress is None else _progress(progress, total=n, unit="row")

    def rows(span):
        a, b = span
        for s, e, K in iter_kernel_blocks(kernel, X[a:b, ...], Z, memory_budget=budget,
                                          center=center, columns=columns,
                                          out=None if out is None else out[a:b, ...]):
            fn(a + s, a + e, K)
            if bar is not None:
                bar.update(e - s)

    cuts = [n * i // parts for i in range(parts + 1)]
    map_threads(rows, list(zip(cuts[:-1], cuts[1:])), xp=xp)
    if bar is not None:
        bar.close()


def _pruned(kernel, X, Z, v, *, memory_budget, xp):
    """:func:`kernel_matvec`'s pruned product, or None where pruning does not pay (too few
    values, a kernel reaching across Z's extent, or a sample of X reaching more than
    :data:`PRUNE_MAX_REACH` of Z) or its copies (both sides reordered and prepared) leave no
    room for a block in the budget."""
    if not is_numpy(xp) or is_sparse(X) or is_sparse(Z) \
            or X.shape[0] * Z.shape[0] < PRUNE_MIN_VALUES:
        return None
    r = kernel.negligible_distance(negligible_level(X.dtype, xp=xp))
    if not RowPartition.worthwhile(Z, r, leaf_size=MATVEC_LEAF_SIZE):
        return None
    itemsize = X.dtype.itemsize
    k = 1 if v.ndim == 1 else v.shape[1]
    fixed = 2 * (X.shape[0] + Z.shape[0]) * (X.shape[1] + 2) * itemsize \
        + 3 * X.shape[0] * k * v.dtype.itemsize
    budget = resolve_budget(memory_budget, array_device(X)) - fixed
    try:
        max_cols = block_rows(MATVEC_LEAF_SIZE, itemsize, budget, n_buffers=_BLOCK_BUFFERS)
    except MemoryError:
        return None
    return pruned_matvec(kernel, X, Z, v, r, max_cols=max_cols, max_reach=PRUNE_MAX_REACH)


#: What to do when kernel values overflow (the message of :func:`check_kernel_finite`).
OVERFLOW_ADVICE = ("scale the features (e.g. StandardScaler), lower gamma (or degree for 'poly'), "
                   "or use dtype='float64'")


def check_kernel_finite(ok, *, kernel, dtype):
    """Raise ``FloatingPointError`` when kernel values (or what was built from them) are not
    finite: ``ok`` is a 0-d boolean device array or a bool (read here, one synchronisation)."""
    if not bool(ok):
        raise FloatingPointError(
            f"the {kernel!r} kernel values are NaN or infinite in {dtype} (they overflowed, "
            f"or the features hold extreme values): {OVERFLOW_ADVICE}")


def kernel_columns(kernel, X, Z, *, memory_budget=None, intercept=False, progress=None,
                   known=None, out=None, filled=0, dtype=None):
    """``F = K(X, Z)`` of shape (m, r), or ``[K(X, Z), 1]`` of shape (m, r + 1), block by block
    (the one blocked kernel loop, :func:`iter_kernel_blocks`, writing into F): the features of
    the reduced-kernel models (GSVM / RKHS of Zhou 2013, reduced LS-SVM, PSVM).

    ``known``, an array of shape (m, r₀) with r₀ ≤ r, holds the columns ``K(X, Z[:r₀])``
    already (the features of a smaller, nested set of landmarks): they are copied and only the
    others computed (the same values: the kernel's centre is Z's either way).

    ``out``, an array of F's shape and X's dtype, is written and returned as F; its first
    ``filled`` columns hold ``K(X, Z[:filled])`` already (instead of ``known``: nothing is
    copied; :func:`~svmgpu.backend.widen_rows` makes room for a grown rank in place).

    ``dtype`` (None: X's), without ``out``: the dtype F is stored in; each block is computed
    in X's dtype and written into F in its dtype (float64 rows, float32 kernel values: the
    kernel narrows where it pays, RBF before its ``exp``: ``Kernel.against``).

    Raises
    ------
    MemoryError
        When the budget cannot hold one block row.
    FloatingPointError
        When a kernel value is not finite (overflow).
    """
    xp = get_namespace(X, Z)
    m, r = X.shape[0], Z.shape[0]
    shape = (m, r + int(intercept))
    store = X.dtype if dtype is None else dtype
    if out is None:
        if filled:
            raise ValueError("filled columns are those of out; pass out")
        F = xp.empty(shape, dtype=store, device=native_device(X))
    elif dtype is not None:
        raise ValueError("dtype is that of F, for a new F; out has X's dtype")
    else:
        if tuple(out.shape) != shape or out.dtype != X.dtype:
            raise ValueError(f"out must have shape {shape} and X's dtype {X.dtype}; got "
                             f"{tuple(out.shape)}, {out.dtype}")
        if known is not None and filled:
            raise ValueError("pass known (columns to copy) or filled (columns of out), not both")
        F = out
    r0 = int(filled) if known is None else int(known.shape[1])
    if known is None and r0 > r:
        raise ValueError(f"filled columns ({r0}) exceed the landmarks ({r})")
    if known is not None:
        if tuple(known.shape) != (m, r0) or r0 > r:
            raise ValueError(f"known columns must have shape ({m}, r0) with r0 <= {r}, got "
                             f"{tuple(known.shape)}")
        F[:, :r0] = known if known.dtype == store else xp.astype(known, store)
    finite = []  # (each block's values checked as it is written, in the cache: a pass over
    # F's new columns afterwards read them from memory again, 35 ms of ijcnn1's 50,000 × 1,003)
    if r0 < r:
        map_kernel_blocks(kernel, X, Z[r0:, :],
                          lambda s, e, K: finite.append(xp.all(xp.isfinite(K))),
                          memory_budget=memory_budget, center=kernel.center_of(Z, xp=xp),
                          out=F[:, r0:r], progress=progress)
    if intercept:
        F[:, r] = 1.0
    if finite:
        check_kernel_finite(xp.all(xp.stack(finite)), kernel=kernel, dtype=F.dtype)
    return F
