"""Elementwise and product helpers that reuse memory where the backend allows it."""

from __future__ import annotations

import math

from svmgpu.backend._device import is_cupy, is_numpy
from svmgpu.backend._threads import blas_is_serial, map_threads, serial_blas


def matmul(a, b, *, xp, out=None):
    """``a @ b`` (into ``out`` when given, without a temporary on NumPy); returns the result.

    On NumPy, float32/float64 matrix products with a vector or a matrix run on SciPy's BLAS
    (``gemv``/``gemm``, see :func:`_scipy_matmul`); other operands, and every product while
    BLAS runs on one thread (``_threads.blas_is_serial()``: no pool spins then), on
    ``np.matmul``, which releases the GIL where SciPy's f2py wrappers hold it: two threads of
    (600 × 600) products took 0.50 s on SciPy's ``dgemm`` and 0.25 s on ``np.matmul``, one
    thread 0.49 / 0.51 s, and the kernel blocks of :func:`~svmgpu.kernels.map_kernel_blocks`
    ran in threads no faster than in one until their products moved (this 2-core VM, session
    37). Other namespaces use their ``matmul``.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        if not blas_is_serial():
            res = _scipy_matmul(a, b, out)
            if res is not None:
                return res
        return np.matmul(a, b, out=out)
    if out is None:
        return xp.matmul(a, b)
    out[...] = xp.matmul(a, b)
    return out


def _scipy_matmul(a, b, out):
    """``a @ b`` by SciPy's BLAS, into ``out`` when given (written in place when C-ordered, else
    copied in: a column block of a wider matrix, such as the kernel columns beside an intercept
    column); None (nothing done) where it does not apply (``a`` not 2-D, ``b`` not 1-D or 2-D,
    mixed or non-float dtypes, an empty product, an ``out`` of another dtype).

    NumPy and SciPy wheels each bundle an OpenBLAS with its own thread pool, and an OpenBLAS
    pool's threads spin for a while after each call. The CPU hot loops need SciPy's library
    (``trmm`` for the Nyström features, ``syrk`` and the factorizations for the Newton
    Hessian); a NumPy product between two of its calls finds the cores busy with SciPy's
    spinning threads, and the other way round (measured in bench/README.md, "Measured
    reasons"). So the hot products all run on SciPy's BLAS.
    """
    import numpy as np  # noqa: PLC0415
    from scipy.linalg import blas  # noqa: PLC0415

    dt = a.dtype
    if (dt.char not in "fd" or b.dtype != dt or a.ndim != 2 or b.ndim not in (1, 2)
            or a.shape[0] == 0 or a.shape[1] == 0 or (b.ndim == 2 and b.shape[1] == 0)
            or (out is not None and out.dtype != dt)):
        return None
    d = dt.char == "d"
    # a row-major a is its column-major transpose: read without a copy
    at, trans = (a.T, 1) if a.flags.c_contiguous else (np.asfortranarray(a), 0)
    if b.ndim == 1:
        res = (blas.dgemv if d else blas.sgemv)(1.0, at, b, trans=trans)
        if out is None:
            return res
        out[...] = res
        return out
    # outᵀ = bᵀ aᵀ in column-major order
    left, trans_a = (b.T, 0) if b.flags.c_contiguous else (np.asfortranarray(b), 1)
    gemm = blas.dgemm if d else blas.sgemm
    if out is None:  # (NumPy's own allocation, not f2py's zero-filled one: a 20,000² kernel
        # matrix sometimes took 3.9 s instead of 0.7 s in a fresh process)
        out = np.empty((a.shape[0], b.shape[1]), dtype=dt)
    if not out.flags.c_contiguous:
        out[...] = gemm(1.0, left, at, trans_a=trans_a, trans_b=1 - trans).T
        return out
    res = gemm(1.0, left, at, trans_a=trans_a, trans_b=1 - trans, c=out.T, overwrite_c=1)
    if not np.shares_memory(res, out):
        out[...] = res.T
    return out


#: Lower clip of a kernel exponent per dtype char (float64 'd', float32 'f', float16 'e'): a
#: little above log(smallest normal) (−708.4, −87.3, −9.7). NumPy's vectorized ``exp`` leaves
#: its fast path below about −707.8 (float64) and −87.0 (float32) and then runs 15-30x slower
#: per element, and a local kernel (large γ) puts most of a block there. The change to a kernel
#: value is below exp(−700) ≈ 1e-304 (float64), exp(−86) ≈ 4e-38 (float32).
_EXP_FLOOR = {"d": -700.0, "f": -86.0, "e": -9.7}


def power_inplace(z, exponent: int, *, xp):
    """``z ** exponent`` (a positive integer), in place on NumPy; returns the result.

    On NumPy the exponents up to 4 are products (``np.power`` with an integer exponent calls
    ``pow`` per element: the cube of 6,000 × 177 float64 values took 2.9 ms against 0.5 ms
    as ``z · z · z``; the 'poly' kernel's default degree is 3), within an ulp or two of
    ``pow``'s rounding. The cube's ``z · z`` is formed :data:`_CHUNK_BYTES` at a time in one
    scratch where z is larger: whole, it was a temporary as large as z, fresh memory (the
    whole kernel matrix of a fuzz trial's one-vs-one pairs, 6,000 float64 rows: the cube took
    0.66 s of a 5.9 s fit, 0.1 s with the memory already touched)."""
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        if exponent == 1:
            return z
        if exponent in (2, 4):
            np.multiply(z, z, out=z)
            return np.multiply(z, z, out=z) if exponent == 4 else z
        if exponent == 3:
            step = max(1, _CHUNK_BYTES // z.itemsize)
            if z.size <= step or not z.flags.c_contiguous:
                return np.multiply(z, np.multiply(z, z), out=z)
            flat, square = z.reshape(-1), np.empty(step, dtype=z.dtype)
            for s in range(0, flat.shape[0], step):
                part = flat[s:s + step]
                np.multiply(part, np.multiply(part, part, out=square[:part.shape[0]]),
                            out=part)
            return z
        return np.power(z, exponent, out=z)
    return z**exponent


def fortran_order(a, *, xp):
    """``a`` in column-major order on NumPy (what BLAS ``trmm`` reads without a copy; do it
    once, not per block); other namespaces return ``a``."""
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        return np.asfortranarray(a)
    return a


def exp_neg_clipped_inplace(z, *, xp):
    """``z := exp(min(z, 0))`` in place where supported; returns the result.

    The clip makes a kernel exponent ``-γ d²`` computed by the expansion
    ``‖x‖² + ‖z‖² − 2xᵀz`` never exceed 0 (squared distances never go negative). On NumPy the
    exponent is also clipped from below at ``_EXP_FLOOR`` (−700 for float64): ``exp`` of smaller
    values is 15-30x slower per element (subnormal results and NumPy's slow path near them),
    and the change is below 1e-304.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        # one pass for both bounds (np.maximum then np.minimum took two: 57 against 19 ms
        # on 49M float32 entries, beside exp's 100 ms; NumPy 2's np.clip costs what the two
        # calls did on small blocks, 4 µs)
        np.clip(z, _EXP_FLOOR[z.dtype.char], 0.0, out=z)
        return np.exp(z, out=z)
    if is_cupy(xp):
        import cupy  # noqa: PLC0415

        cupy.minimum(z, 0, out=z)
        return cupy.exp(z, out=z)
    return xp.exp(xp.minimum(z, xp.zeros((), dtype=z.dtype, device=z.device)))


def nonzero_indices(mask, count: int, *, xp):
    """Indices of the ``True`` entries of the 1-D boolean ``mask``, ascending, given their
    number ``count`` (known to the caller, e.g. from a batched read of several counts).

    ``xp.nonzero`` must learn the count itself, which on a GPU is a device synchronisation;
    on CuPy the positions come from a cumulative sum and one scatter, with no synchronisation.
    NumPy uses ``flatnonzero`` (and checks ``count``); other namespaces ``nonzero``.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        idx = np.flatnonzero(mask)
        if idx.shape[0] != count:
            raise ValueError(f"nonzero_indices: mask has {idx.shape[0]} entries set, not {count}")
        return idx
    if not is_cupy(xp):  # the standard has no integer-array assignment: data-dependent nonzero
        return xp.nonzero(mask)[0]
    m = mask.shape[0]
    pos = xp.cumulative_sum(xp.astype(mask, xp.int64)) - 1
    pos = xp.where(mask, pos, xp.full_like(pos, count))  # unset entries land in a spare slot
    out = xp.empty((count + 1,), dtype=xp.int64, device=mask.device)
    out[pos] = xp.arange(m, dtype=xp.int64, device=mask.device)
    return out[:count]


def sorted_unique(x, *, xp):
    """The distinct values of a 1-D integer array, ascending (``sort(unique_values(x))``): its
    sort and the first of each run. array-api-compat's NumPy ``unique_values`` looks its
    keyword arguments up with ``inspect`` at every call: 17 µs against 5 µs for this on a few
    hundred indices (a small fit's union of support vectors)."""
    s = xp.sort(x, stable=False)
    if s.shape[0] < 2:
        return s
    return s[xp.concat([s[:1] == s[:1], s[1:] != s[:-1]])]


def vecdot(a, b, *, xp):
    """``Σᵢ aᵢ bᵢ`` of two 1-D arrays (a 0-d array, or on NumPy a float).

    On NumPy, float64 vectors go through SciPy's BLAS (``ddot``), the library of the solvers'
    products (:func:`matmul`): NumPy's ``vecdot`` calls NumPy's own OpenBLAS, bundled apart
    from SciPy's, and on long vectors that wakes its threads, which then spin beside SciPy's.
    On this 2-core VM a float32 20,000 × 354 ``gemv`` with three dot products of 20,000
    entries took 8.0 ms with NumPy's, 1.4 ms with SciPy's (the friedman3 fit, whose line
    search reads such products every trial: 0.98 s against 0.35 s).
    """
    if is_numpy(xp) and a.ndim == 1 and a.dtype.char == "d" and b.dtype.char == "d":
        from scipy.linalg import blas  # noqa: PLC0415

        return float(blas.ddot(a, b))
    if is_cupy(xp) and a.ndim == 1 and b.ndim == 1:
        # (array-api-compat's vecdot for CuPy copies ``conj(a)`` and takes a batched (1, n) @
        # (n, 1) product: 110 µs of host time a call in an H200 profile, 14,484 calls 1.6 s of
        # a 15.6 s fit; a 1-D matmul is one cuBLAS dot)
        return xp.matmul(a, b)
    return xp.vecdot(a, b)


def vector_norm(a, *, xp):
    """The Euclidean norm of a 1-D array, on NumPy by SciPy's BLAS (``dnrm2``) for float64
    (see :func:`vecdot`)."""
    if is_numpy(xp) and a.ndim == 1 and a.dtype.char == "d":
        from scipy.linalg import blas  # noqa: PLC0415

        return float(blas.dnrm2(a))
    return xp.linalg.vector_norm(a)


def fetch_scalars(*values, xp) -> list[float]:
    """Read several 0-d device arrays (or Python numbers) to the host in one transfer: one
    synchronisation instead of one per ``float(x)``."""
    if is_numpy(xp):  # no transfer to save: each value read as it is
        return [float(v) if getattr(v, "ndim", 0) == 0 else float(xp.reshape(v, ()))
                for v in values]
    if not is_cupy(xp):  # no standard bulk read: one scalar read each
        return [float(v) for v in values]
    # (imported past NumPy's reads: the import statement was half of a NumPy call's 1.7 µs)
    from svmgpu.backend._device import to_numpy  # noqa: PLC0415
    arrs = [v for v in values if not isinstance(v, (int, float))]
    if not arrs:
        return [float(v) for v in values]
    dev = getattr(arrs[0], "device", None)
    # (copy=False: a float64 value is stacked as it is, not copied by a kernel of its own first;
    # an H200 profile counted 59,945 astype calls in a 60,000 × 784 fit)
    stacked = xp.stack([xp.asarray(v, dtype=xp.float64, device=dev) if isinstance(v, (int, float))
                        else xp.astype(xp.reshape(v, ()), xp.float64, copy=False)
                        for v in values])
    return [float(v) for v in to_numpy(stacked).tolist()]


def fetch_vector(v, *, xp) -> list[float]:
    """Read a small 1-D device array to the host as floats: one transfer (NumPy, CuPy), or
    one scalar read per entry where the namespace has no bulk read."""
    from svmgpu.backend._device import to_numpy  # noqa: PLC0415

    if is_numpy(xp) or is_cupy(xp):
        return [float(t) for t in to_numpy(v).tolist()]
    return [float(v[i]) for i in range(v.shape[0])]


def clip(x, *, min=None, max=None, xp):  # noqa: A002 - the standard's names
    """``clip(x, min, max)`` for Python-number bounds, as ``maximum`` then ``minimum``.

    array-api-compat's ``clip`` for CuPy assigns through boolean masks, and each masked read or
    write is a ``nonzero``: a device synchronisation. Measured on an H100, that was four of the
    Newton loop's ~6.5 device→host reads per iteration (two clips a step). ``maximum``/
    ``minimum`` with a Python scalar are one elementwise kernel each; NaN propagates as in clip.
    """
    if min is not None:
        x = xp.maximum(x, min)
    if max is not None:
        x = xp.minimum(x, max)
    return x


def take_block(a, rows, cols, *, xp, out=None):
    """The block ``a[rows][:, cols]`` of a 2-D array (integer index arrays).

    NumPy gathers a block of more than :data:`_SMALL_GATHER` elements of whole rows a chunk of
    rows at a time: the chunk's rows copied whole (memcpy, into the caches), then its columns
    from there. That took half the time of NumPy's 2-D index (``a[rows[:, None], cols]``, entry
    by entry from memory: 2,400 × 5,000 of a float32 20,000 × 20,000 kernel matrix 18 ms
    against 38 ms), and of the standard's two ``take`` calls (whole rows copied into a
    temporary first: a pair's 85 % of the rows and columns of float32 50,000 × 2,001 features
    63 ms against 83 ms, 10 % 3.2 against 7.9 ms). CuPy indexes the block directly; smaller
    blocks and other namespaces take rows then columns.

    ``out``, on NumPy: a 1-D array of a's dtype with room for the block, written and returned
    as the block (its first ``len(rows) · len(cols)`` elements, C-ordered). Where blocks of
    the same array are gathered one after another (the one-vs-one pairs of the low-rank
    features), one buffer saves each its fresh memory (Covtype's 7 classes on 50,000 rows:
    the pairs' gathers took 4.4 s of a 9.9 s fit). Other namespaces ignore it.
    """
    return take_blocks(a, rows, (cols,), xp=xp, out=(out,))[0]


def take_blocks(a, rows, cols, *, xp, out=None):
    """The blocks ``a[rows][:, c]`` for each index array ``c`` of the tuple ``cols``, from one
    pass over the rows (:func:`take_block`'s; ``out`` a tuple of its buffers, an entry None
    for a new array): each block C-ordered on its own, where the block of their
    concatenation would hold them as strided column slices (the exact path's ``K_QQ``, which
    its factorization takes whole, beside the columns of the rows whose α changed)."""
    out = (None,) * len(cols) if out is None else tuple(out)
    big = rows.shape[0] * a.shape[1] > _SMALL_GATHER
    if is_numpy(xp) and (any(o is not None for o in out) or big):
        import numpy as np  # noqa: PLC0415

        n = int(rows.shape[0])
        blocks = []
        for c, o in zip(cols, out, strict=True):
            k = int(c.shape[0])
            if o is None:
                o = np.empty(n * k, dtype=a.dtype)
            elif o.ndim != 1 or o.shape[0] < n * k or o.dtype != a.dtype:
                raise ValueError(f"out must be 1-D with at least {n * k} elements of {a.dtype}; "
                                 f"got shape {tuple(o.shape)}, {o.dtype}")
            blocks.append(o[:n * k].reshape(n, k))
            _check_indices(c, a.shape[1])  # (all refused before the first chunk is written)
        for s, e, chunk in _row_chunks(a, rows, xp=xp):
            for c, block in zip(cols, blocks, strict=True):
                np.take(chunk, c, axis=1, out=block[s:e], mode="clip")
        return tuple(blocks)
    if is_cupy(xp) and big:
        return tuple(a[rows[:, None], c[None, :]] for c in cols)
    A = xp.take(a, rows, axis=0)
    return tuple(xp.take(A, c, axis=1) for c in cols)


def _row_chunks(a, rows, *, xp):
    """``(start, stop, chunk)`` over the rows ``rows`` of a NumPy 2-D ``a``: each chunk
    :data:`_CHUNK_BYTES` of them copied whole into one scratch (reused; the indices checked
    before the first)."""
    n = int(rows.shape[0])
    step = max(1, _CHUNK_BYTES // max(1, a.shape[1] * a.itemsize))
    _check_indices(rows, a.shape[0])
    scratch = BlockScratch(min(step, n), a.shape[1], xp=xp)
    for s in range(0, n, step):
        yield s, min(s + step, n), scratch.rows(a, rows[s:s + step], native=True)


def matvec_in_dtype(a, v, *, xp):
    """``a @ v`` in float64 for a float64 ``v``: a float32 ``a`` multiplies in float32 (half
    the memory traffic of the products that dominate the exact path's Newton steps), the
    result read back as float64."""
    if a.dtype == xp.float64:
        return matmul(a, v, xp=xp)
    return xp.astype(matmul(a, xp.astype(v, a.dtype), xp=xp), xp.float64)


def product_in_float64(a, b, *, xp):
    """``a @ b`` in float64 for a 2-D ``a`` and a float64 ``b``: a float32 ``a``'s entries
    exactly, the products and sums in float64 (:func:`matvec_in_dtype` rounds ``b`` to
    float32 and sums in float32). On NumPy a's rows are converted :data:`_CHUNK_BYTES` of
    float64 at a time into one scratch (no float64 copy of ``a``: the exact path's float32
    Newton systems refine their solves against their float32 blocks); elsewhere ``a`` is
    converted whole."""
    if a.dtype == xp.float64:
        return matmul(a, b, xp=xp)
    if not is_numpy(xp):
        return matmul(xp.astype(a, xp.float64), b, xp=xp)
    import numpy as np  # noqa: PLC0415

    n = int(a.shape[0])
    step = max(1, _CHUNK_BYTES // max(1, int(a.shape[1]) * 8))
    scratch = BlockScratch(min(step, n), a.shape[1], xp=xp)
    out = np.empty((n,) + tuple(b.shape[1:]), dtype=np.float64)
    for s in range(0, n, step):
        e = min(s + step, n)
        out[s:e, ...] = matmul(scratch.rows(a, slice(s, e)), b, xp=xp)
    return out


def take_block_times(a, rows, cols, v, *, xp, dtype, out=None):
    """``(a[rows] @ v, a[rows][:, cols])`` of a 2-D array in one pass over its rows ``rows``:
    the product in a's dtype (float32: half the memory traffic), returned in float64 (as
    ``v``), and the block in ``dtype`` (written into ``out``, an array of its shape and
    dtype, where given on NumPy: :class:`Workspace`).

    On NumPy a chunk of the rows at a time is copied whole into the caches
    (:func:`take_block`'s chunks), multiplied and its columns taken from there: the exact
    path's ``K_Q,: d`` and ``K_QQ`` of 2,287 rows of a float32 8,730-row row store had been a
    copy of Q's whole rows (80 MB of fresh memory each Newton step) and a gather of its
    columns from that, 80 ms a step together (make_classification at 20k rows, its
    refinement). Rows of fewer than :data:`_SMALL_GATHER` elements in all are taken at once
    (digits' one-vs-one pairs: the chunks' scratch cost more than their copies). Elsewhere
    the rows, then their product and columns.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        n, k = int(rows.shape[0]), int(cols.shape[0])
        _check_indices(cols, a.shape[1])
        if out is not None and (tuple(out.shape) != (n, k) or out.dtype != np.dtype(dtype)):
            raise ValueError(f"out must be a ({n}, {k}) array of {np.dtype(dtype)}; got shape "
                             f"{tuple(out.shape)}, {out.dtype}")
        if n * int(a.shape[1]) <= _SMALL_GATHER:
            _check_indices(rows, a.shape[0])
            A = np.take(a, rows, axis=0)  # (np.take keeps the block C-ordered: A[:, cols]
            block = np.take(A, cols, axis=1)  # is Fortran-ordered)
            if out is not None:
                np.copyto(out, block)
            return matvec_in_dtype(A, v, xp=xp), \
                block.astype(dtype, copy=False) if out is None else out
        block = np.empty((n, k), dtype=dtype) if out is None else out
        prod = np.empty((n,), dtype=np.float64)
        vv = np.asarray(v, dtype=a.dtype)
        cast = None if block.dtype == a.dtype else np.empty((0, k), dtype=a.dtype)
        with serial_blas(xp=xp):  # (each chunk's product between gathers: symmetric_matvec)
            for s, e, chunk in _row_chunks(a, rows, xp=xp):
                prod[s:e] = matmul(chunk, vv, xp=xp)
                if cast is None:
                    np.take(chunk, cols, axis=1, out=block[s:e], mode="clip")
                    continue
                if cast.shape[0] < e - s:  # (the first chunk is the largest)
                    cast = np.empty((e - s, k), dtype=a.dtype)
                np.take(chunk, cols, axis=1, out=cast[:e - s], mode="clip")
                block[s:e] = cast[:e - s]
        return prod, block
    A = xp.take(a, rows, axis=0)
    return matvec_in_dtype(A, v, xp=xp), xp.astype(xp.take(A, cols, axis=1), dtype)


def _check_indices(idx, n):
    """Raise IndexError unless every entry of the NumPy index array ``idx`` is in ``[0, n)``.

    The gathers into scratch memory (``np.take(..., out=...)``) then use ``mode="clip"``:
    with ``out`` and the default ``mode="raise"`` NumPy gathers into a temporary first and
    copies it (3x slower: 6,000 rows of 20,000 × 251 float32 features in 0.45 ms against
    0.16 ms), and that temporary is the fresh memory the scratch exists to avoid."""
    if idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"index out of range for an axis of {n}: {int(idx.min())} .. "
                         f"{int(idx.max())}")


#: Rows of one product of :func:`transposed_product` in its matrix's own dtype, whose results
#: are summed in float64: float32 features are not converted to float64 for ``Pᵀu`` (that
#: conversion was 0.8 s of a 2.2 s friedman1 fit at 20,000 rows and 1,418 landmarks, the
#: product itself 0.2 s). A float32 sum over 4,096 rows errs by about 4e-7 of ``|Pᵀu|`` (on
#: P of 20,000 rows, centred entries), against 2e-6 for one float32 product over every row;
#: the float32 entries themselves carry 6e-8 each, and ``P z`` is a float32 product too.
_PRODUCT_ROWS = 4096


def transposed_product(A, v, *, xp):
    """``Aᵀ v`` in float64 for a 2-D ``A`` (n, r) and ``v`` (n,) or (n, k): in A's dtype
    over chunks of :data:`_PRODUCT_ROWS` rows, the chunks summed in float64; one float64
    product for a float64 A (the mixed precision of the low-rank gradient ``Pᵀu`` and the exact
    path's ``K d``). On NumPy a product per chunk on SciPy's BLAS (NumPy's own ``matmul`` of
    the batched form would wake NumPy's thread pool beside SciPy's: :func:`matmul`; it
    measured 1.5–2× slower); elsewhere one batched product (a launch per chunk would cost more
    than the product on a GPU)."""
    if A.dtype == xp.float64:
        return matmul(xp.matrix_transpose(A), xp.astype(v, xp.float64), xp=xp)
    n, r, c = int(A.shape[0]), int(A.shape[1]), _PRODUCT_ROWS
    V = xp.astype(v, A.dtype)
    if is_numpy(xp) or n <= c:
        out = None
        for s in range(0, n, c):
            e = min(s + c, n)
            part = xp.astype(matmul(xp.matrix_transpose(A[s:e, :]), V[s:e, ...], xp=xp),
                             xp.float64)
            out = part if out is None else out + part
        return out if out is not None else \
            xp.zeros((r,) + tuple(v.shape[1:]), dtype=xp.float64, device=getattr(A, "device", None))
    vec = V.ndim == 1
    V = V[:, None] if vec else V
    k, full = int(V.shape[1]), n // c * c
    parts = xp.matmul(xp.matrix_transpose(xp.reshape(A[:full, :], (full // c, c, r))),
                      xp.reshape(V[:full, :], (full // c, c, k)))
    out = xp.sum(xp.astype(parts, xp.float64), axis=0)
    if full < n:
        out = out + xp.astype(matmul(xp.matrix_transpose(A[full:, :]), V[full:, :], xp=xp),
                              xp.float64)
    return out[:, 0] if vec else out


def symmetric_matvec(a, v, support, *, xp, rows=None):
    """``a @ v`` in float64 for a symmetric 2-D ``a`` and a float64 ``v`` that is zero outside
    the rows ``support`` (an integer index array), in ``a``'s dtype (float32: half the memory
    traffic) with float64 sums (:func:`transposed_product`).

    ``rows``: where a holds the matrix's rows ``support`` (a row store such as
    :class:`~svmgpu.kernels.KernelRows`'s, whose row ``rows[i]`` is the matrix's row
    ``support[i]``; its other rows finite): the product is then
    ``Σᵢ a[rows[i]] v[support[i]]``.

    On NumPy ``a[rows]ᵀ v[support]``: those rows read in place where they are a range of a's
    rows in order, else gathered a chunk of :data:`_MATVEC_CHUNK_BYTES` at a time into one
    scratch, so that a step whose support is 2,500 of 20,000 rows reads those rows instead
    of all of ``a`` (the exact path's Newton steps: ``K d``); without ``rows``, only where
    the support is under a quarter of the rows of a matrix of more than 400
    (:data:`_MATVEC_ROWS_MIN`); with ``rows``, where they are under half of a's rows
    (:data:`_MATVEC_STORE_FULL`). Elsewhere ``aᵀ w`` over every row of ``a`` (a GPU reads
    ``a`` at its bandwidth; a gathered copy of the rows would be a temporary of its own),
    ``w`` being v itself or, with ``rows``, v's entries moved to a's rows."""
    n, k = int(a.shape[1]), int(support.shape[0])
    if not is_numpy(xp) or (rows is None and (_MATVEC_ROWS_MIN * k >= n or
                                              n <= _MATVEC_FULL_ORDER)) or \
            (rows is not None and _MATVEC_STORE_FULL * k >= int(a.shape[0])):
        if rows is not None:
            w = xp.zeros((a.shape[0],), dtype=v.dtype, device=getattr(v, "device", None))
            v = set_rows(w, rows, xp.take(v, support), xp=xp)
        return transposed_product(a, v, xp=xp)
    rows = support if rows is None else rows
    first, last = (int(rows[0]), int(rows[k - 1])) if k else (0, -1)
    if k and 0 <= first and last - first == k - 1 and last < int(a.shape[0]) and \
            bool(xp.all(rows[1:] > rows[:-1])):
        # (a range of a's rows, in order: read where they are. The exact path's first K α,
        # whose support is the whole row store so far, takes the full read above instead)
        return transposed_product(a[first:last + 1, ...], xp.take(v, support), xp=xp)
    step = max(1, _MATVEC_CHUNK_BYTES // max(1, n * a.itemsize))
    scratch = BlockScratch(min(step, k), n, xp=xp)  # (its rows checked and gathered in a's dtype)
    out = xp.zeros((n,), dtype=xp.float64)
    # (on one BLAS thread: a gather, then a product on BLAS's threads, then the next gather
    # found them spinning; 2,382 rows of a float32 7,116 × 8,732 row store, chunks of 4 MiB,
    # 23 ms on two threads against 5.3 ms on one, the full product 5 ms: a 20k refinement's
    # last Newton steps, session 46)
    with serial_blas(xp=xp):
        for s in range(0, k, step):
            out += transposed_product(scratch.rows(a, rows[s:s + step], native=True),
                                      xp.take(v, support[s:s + step]), xp=xp)
    return out


def _copy_columns(dest, src, cspans):
    """Write the columns ``cspans`` (ranges) of ``src`` side by side into ``dest``."""
    j = 0
    for s, e in cspans:
        dest[:, j:j + e - s] = src[:, s:e]
        j += e - s


#: Bytes of a block from which :func:`range_block` copies its chunks of rows in a thread per
#: core (NumPy): below, the pool's start costs more than the copy saves (digits' 45 pairs).
_THREADED_COPY_BYTES = 8 << 20


def _copy_chunks(block, a, spans, cspans, at):
    """:func:`range_block`'s copy on NumPy: the rows of the ranges ``spans`` of ``a``, their
    columns ``cspans``, into ``block`` (range after range, or at the rows ``at``), a chunk of
    :data:`_CHUNK_BYTES` of rows at a time: the chunk's columns stay in the caches across its
    spans, where a span at a time over all the rows wrote each row of ``block`` once a span.
    Blocks of :data:`_THREADED_COPY_BYTES` or more split their chunks between the cores
    (:func:`~svmgpu.backend.map_threads`; a copy is memory-bound, and one core does not reach
    the memory's bandwidth here: one-vs-one pairs of Covtype's 50,000 × 2,001 float32
    features, 42,000 rows × 1,691 columns in 18 column ranges, placed at their rows, 113 ms
    in one thread against 59 ms in two)."""
    import numpy as np  # noqa: PLC0415

    n, k = int(block.shape[0]), int(block.shape[1])
    step = max(1, _CHUNK_BYTES // max(1, k * a.itemsize))
    jobs, i = [], 0  # (the block's first row, the range's number, a's rows c:d)
    for q, (s, e) in enumerate(spans):
        jobs += [(i + c - s, q, s, c, min(c + step, e)) for c in range(s, e, step)]
        i += e - s

    def run(part):
        tmp = None if at is None else np.empty((min(step, max(n, 1)), k), dtype=a.dtype)
        for p, q, s, c, d in part:
            if at is None:
                _copy_columns(block[p:p + d - c], a[c:d], cspans)
                continue
            _copy_columns(tmp[:d - c], a[c:d], cspans)
            block[at[q][c - s:d - s], :] = tmp[:d - c]

    if n * k * a.itemsize < _THREADED_COPY_BYTES or len(jobs) < 2:
        run(jobs)
        return
    half = len(jobs) // 2
    map_threads(run, [jobs[:half], jobs[half:]], xp=np)


def range_indices(ranges, *, xp, device=None):
    """The int64 indices of the index ranges ``[(start, stop), ...]`` (host ints), in order:
    what :func:`range_block` copies, as an index array."""
    return xp.concat([xp.arange(int(s), int(e), dtype=xp.int64, device=device)
                      for s, e in ranges])


def range_block(a, ranges, cols=None, *, xp, out=None, at=None):
    """The block of a 2-D array over the rows of the index ranges ``[(start, stop), ...]``
    (host ints, ascending, disjoint) and the columns of ``cols`` (ranges too; default: the
    rows' ranges, a square block), C-ordered: ``a[idx][:, jdx]`` for their concatenations,
    copied range by range.

    A one-vs-one pair of a kernel matrix whose rows are sorted by class is two such ranges;
    so is a pair's rows of the low-rank features, whose columns (the landmarks of its two
    classes) are a few ranges (:class:`svmgpu.SVC`). Copying contiguous blocks is 3x faster
    than a gather of the same entries (NumPy, a pair of 8,500 of 10,000 rows: 0.055 s against
    0.18 s), and reads only the block's columns where a gather of whole rows reads them all
    (ten classes' 45 pairs of 60,000 × 2,001 float32 features: 0.08 s against 0.40 s).

    ``out``, on NumPy: a 1-D array of a's dtype with room for the block, written and returned
    as the block (as :func:`take_block`'s); other namespaces ignore it. ``at``: for each
    range, the block's rows its rows go to (integer arrays that together hold each of the
    block's rows once; default: range after range).
    """
    if at is not None:
        at = [p for (s, e), p in zip(ranges, at, strict=True) if int(e) > int(s)]
    spans = [(int(s), int(e)) for s, e in ranges if int(e) > int(s)]
    cspans = spans if cols is None else [(int(s), int(e)) for s, e in cols if int(e) > int(s)]
    n, k = sum(e - s for s, e in spans), sum(e - s for s, e in cspans)
    if is_numpy(xp) or is_cupy(xp):
        if out is not None and is_numpy(xp):
            if out.ndim != 1 or out.shape[0] < n * k or out.dtype != a.dtype:
                raise ValueError(f"out must be 1-D with at least {n * k} elements of {a.dtype}; "
                                 f"got shape {tuple(out.shape)}, {out.dtype}")
            block = out[:n * k].reshape(n, k)
        else:
            block = xp.empty((n, k), dtype=a.dtype)
        if is_numpy(xp):  # (a chunk of rows at a time, in a thread per core where large)
            _copy_chunks(block, a, spans, cspans, at)
        elif at is None:
            i = 0
            for s, e in spans:
                _copy_columns(block[i:i + e - s], a[s:e], cspans)
                i += e - s
        else:
            for q, (s, e) in enumerate(spans):
                block[at[q], :] = xp.concat([a[s:e, s2:e2] for s2, e2 in cspans], axis=1)
        return block
    block = xp.concat([xp.concat([a[s:e, s2:e2] for s2, e2 in cspans], axis=1)
                       for s, e in spans], axis=0)
    if at is None:
        return block
    # (no scatter in the standard: each block row's source row, by the inverse permutation)
    return xp.take(block, xp.argsort(xp.concat(at), stable=False), axis=0)


#: Elements of whole rows below which :func:`take_block` gathers rows then columns: NumPy's
#: two ``take`` calls cost 2.6 µs on 40 × 60 where its 2-D index costs 5 µs (a digits fit
#: gathers hundreds of such blocks).
_SMALL_GATHER = 1 << 16

#: Bytes of whole rows that :func:`take_block` copies at a time into one scratch before it
#: takes their columns (a chunk that stays in the caches, reused: no fresh memory per block).
_CHUNK_BYTES = 1 << 20
#: The same for :func:`symmetric_matvec`'s chunks of rows, each one product: 2,500 rows of a
#: float32 20,000 × 20,000 matrix in chunks of 1 MiB 12.1 ms, 4 MiB 9.8 ms, 16 MiB 16.1 ms
#: (the full product 33.6 ms).
_MATVEC_CHUNK_BYTES = 4 << 20

#: :func:`symmetric_matvec` on a whole NumPy matrix gathers the support's rows only where they
#: are fewer than 1/_MATVEC_ROWS_MIN of them and the matrix has more than _MATVEC_FULL_ORDER
#: rows; otherwise the plain product is faster (float64, 30 % of the rows in the support: 75
#: rows 10.2 → 2.4 µs, 300 rows 19.9 → 11.0 µs, 1,000 rows 85 → 51 µs; 10 % of 600 rows: the
#: gather 17 µs, the product 37 µs).
_MATVEC_ROWS_MIN = 4
_MATVEC_FULL_ORDER = 400
#: :func:`symmetric_matvec` with ``rows`` (a row store) reads every row of the store in place,
#: ``v`` moved to the store's rows, where the support holds at least 1/_MATVEC_STORE_FULL of
#: them: a gathered row cost about twice a row read in place (above: 3.9 against 1.7 µs), and
#: most of the exact path's ``K d`` products in a refinement cover 3/4 of the store or more.
_MATVEC_STORE_FULL = 2


def add_diagonal(a, values, *, xp):
    """``a + diag(values)`` for a square 2-D ``a``; returns the result (``a`` itself, changed
    in place, on NumPy and CuPy; other namespaces build it with ``eye``, which NumPy paid as
    two more n × n arrays a call)."""
    n = a.shape[0]
    if (is_numpy(xp) or is_cupy(xp)) and (a.flags.c_contiguous or a.flags.f_contiguous):
        flat = a.reshape(-1) if a.flags.c_contiguous else a.T.reshape(-1)
        flat[:: n + 1] += values  # the diagonal as a strided view
        return a
    return a + xp.eye(n, dtype=a.dtype, device=getattr(a, "device", None)) * values[None, :]


def take_entries(a, rows, cols, *, xp):
    """The entries ``a[rows[k], cols[k]]`` of a 2-D array (``rows`` and ``cols`` integer index
    arrays of one length, on a's device), by one gather from a's flattened entries (the array
    API standard has no indexing by pairs of arrays): the diagonal of a block of rows taken
    whole, or of a row store whose rows are in another order."""
    if rows.ndim != 1 or tuple(rows.shape) != tuple(cols.shape):
        raise ValueError(f"rows and cols must be 1-D index arrays of one length; got shapes "
                         f"{tuple(rows.shape)} and {tuple(cols.shape)}")
    n = int(a.shape[1])
    return xp.take(xp.reshape(a, (-1,)), rows * n + cols)


def set_rows(base, rows, values, *, xp):
    """``base`` with ``base[rows] = values`` (rows along the first axis); returns the result.

    NumPy and CuPy assign in place. The array API standard has no integer-array assignment, so
    other namespaces gather instead: each position finds its entry of the sorted ``rows`` with
    ``searchsorted`` and takes ``values`` where it hits (a new array; O(size of base)).
    ``rows``: distinct integer indices on ``base``'s device.
    """
    if is_numpy(xp) or is_cupy(xp):
        base[rows, ...] = values
        return base
    if rows.shape[0] == 0:
        return base
    order = xp.argsort(rows, stable=False)  # (distinct)
    rows, values = xp.take(rows, order), xp.take(values, order, axis=0)
    i = xp.arange(base.shape[0], dtype=rows.dtype, device=base.device)
    pos = xp.minimum(xp.searchsorted(rows, i), rows.shape[0] - 1)
    hit = xp.take(rows, pos) == i
    if base.ndim > 1:
        hit = xp.reshape(hit, (-1,) + (1,) * (base.ndim - 1))
    return xp.where(hit, xp.take(values, pos, axis=0), base)


def widen_rows(flat, m, cols, new_cols):
    """The (m, new_cols) C-ordered array at the start of the NumPy 1-D array ``flat`` whose
    first ``cols`` columns are the (m, cols) C-ordered array that was there (``new_cols ≥
    cols``), its rows moved in place from the last to the first, a block at a time (NumPy
    copies an overlapping block through a temporary); the other columns are left as they
    were.

    A rank grown in stages (:class:`svmgpu.SVC`'s ``rank="auto"``) keeps its features
    contiguous (SciPy's BLAS copies any other layout) without fresh memory for each stage:
    fresh pages fault on first touch, about 2 s/GB on this project's CPU VM.
    """
    import numpy as np  # noqa: PLC0415

    if new_cols < cols or flat.shape[0] < m * new_cols:
        raise ValueError(f"cannot widen {m} rows of {cols} to {new_cols} columns in "
                         f"{flat.shape[0]} elements")
    old = flat[:m * cols].reshape(m, cols)
    new = flat[:m * new_cols].reshape(m, new_cols)
    step = max(1, _CHUNK_BYTES // max(1, new_cols * flat.itemsize))
    for e in range(m, 0, -step):
        s = max(0, e - step)
        np.copyto(new[s:e, :cols], old[s:e])
    return new


class Workspace:
    """Named NumPy buffers reused by the iterations of one computation.

    An iteration that builds a new array of tens of MiB each time (the exact path's Newton
    systems) makes glibc map fresh memory for it and return it when it is freed, so every
    iteration page-faults that memory again: the kernel zeroes each page (about 0.2 s/GB),
    and on this VM, memory freed for a few seconds goes back to the host and costs about
    1.7 s/GB to touch again (bench/README.md, "Measured reasons"). A buffer asked for again
    under the same name reuses the memory of the last one; it grows by half again when a
    larger one is asked for (to at most ``most`` elements, or the size asked for where that
    is more). Arrays of fewer than ``least`` bytes get no buffer (glibc reuses its heap for
    them), nor do other namespaces (a GPU's memory pool already reuses the blocks):
    :meth:`empty` gives None there, for functions whose ``out`` is NumPy's only, and
    :meth:`astype` a new array.

    ``reserve`` (with ``most``): each name's first buffer takes ``most`` elements of address
    space at once (the size asked for where the system refuses that), as the exact path's
    row store does (:class:`~svmgpu.kernels.KernelRows`): its pages are touched only as the
    buffers use them, so a buffer that grows is never moved and its used part never faulted
    again. The exact path's Newton systems grow step by step (``make_classification``'s 20k
    refinement: 564 → 2,288 rows), and each growth by half had faulted a new buffer whole
    (about 35 MB of its 380 MB of fresh memory): its fits 0.640 → 0.628 s (medians of
    twelve, in ABBA order; session 68).
    """

    def __init__(self, xp, *, most=None, least=0, reserve=False):
        self.xp, self.most, self.least = xp, most, least
        self.reserve = bool(reserve)
        self._np = is_numpy(xp)
        self._buffers = {}

    def empty(self, name, shape, dtype):
        """An uninitialized array of ``shape`` and ``dtype`` in the buffer ``name`` (valid
        until the next call with that name), or None (off NumPy, or fewer than ``least``
        bytes)."""
        if not self._np:
            return None
        import numpy as np  # noqa: PLC0415

        n = math.prod(int(d) for d in shape)
        if n * np.dtype(dtype).itemsize < self.least:
            return None
        buf = self._buffers.get(name)
        if buf is None or buf.shape[0] < n or buf.dtype != np.dtype(dtype):
            size = n if buf is None else max(n, int(1.5 * buf.shape[0]))
            if self.most is not None:
                size = max(n, min(size, int(self.most)))
            self._buffers.pop(name, None)
            buf = None  # (the old one released before the new one is allocated)
            if self.reserve and self.most is not None and size < self.most:
                try:  # (address space: see the class)
                    buf = np.empty(int(self.most), dtype=dtype)
                except MemoryError:
                    pass
            if buf is None:
                buf = np.empty(size, dtype=dtype)
            self._buffers[name] = buf
        return buf[:n].reshape(tuple(int(d) for d in shape))

    def widen(self, most):
        """Raise ``most`` to at least ``most`` elements (a caller's next problem, larger than
        the last): a buffer that then grows takes the new reservation (with ``reserve``)."""
        if most is not None and (self.most is None or most > self.most):
            self.most = int(most)

    def astype(self, name, a, dtype):
        """A copy of ``a`` in ``dtype``: in the buffer ``name`` on NumPy, else a new array."""
        out = self.empty(name, a.shape, dtype)
        if out is None:
            return self.xp.astype(a, dtype, copy=True)
        import numpy as np  # noqa: PLC0415

        np.copyto(out, a)
        return out


class BlockScratch:
    """Scratch rows reused by every block of one pass over a large matrix.

    A pass over the m × r features gathers rows, converts them to float64 and weights them,
    block by block. On NumPy each of those would be a new array of up to tens of MiB; glibc
    returns such arrays to the system when they are freed, so every block page-faults its
    memory again (first-touched memory fills slowly: bench/README.md, "Measured reasons").
    Here they are written into buffers allocated once per pass. Other namespaces
    allocate as usual (a GPU's memory pool already reuses the blocks).

    A block returned by :meth:`rows` or :meth:`weighted` is valid until the next call of the
    same method: use it before asking for the next block.

    Parameters
    ----------
    rows, cols : int
        The largest block.
    xp : namespace
    """

    def __init__(self, rows, cols, *, xp):
        self.xp = xp
        self._np = is_numpy(xp)
        self._shape = (int(rows), int(cols))
        self._space = Workspace(xp)

    def _buffer(self, name, dtype=None):
        import numpy as np  # noqa: PLC0415

        return self._space.empty(name, self._shape, np.float64 if dtype is None else dtype)

    def rows(self, X, where, *, native=False):
        """``X[where]`` as float64, or in X's own dtype with ``native`` (``where`` a slice or
        an integer index array): a view of X when it already is one, else written into the
        scratch rows."""
        xp = self.xp
        keep = native or X.dtype == xp.float64
        if not self._np or (isinstance(where, slice) and keep):
            block = X[where, ...] if isinstance(where, slice) else xp.take(X, where, axis=0)
            return block if native else xp.astype(block, xp.float64, copy=False)
        import numpy as np  # noqa: PLC0415

        n = len(range(*where.indices(X.shape[0]))) if isinstance(where, slice) else where.shape[0]
        if not isinstance(where, slice):
            _check_indices(where, X.shape[0])
        if keep:  # (gathered in X's dtype)
            out = self._buffer("_native" if native else "_gather", X.dtype)[:n]
            np.take(X, where, axis=0, out=out, mode="clip")
            return out
        out = self._buffer("_gather")[:n]
        if isinstance(where, slice):
            np.copyto(out, X[where])  # float32 -> float64
        else:  # (gathered into scratch rows of X's dtype first: no fresh pages per block)
            np.copyto(out, np.take(X, where, axis=0, out=self._buffer("_native", X.dtype)[:n],
                                   mode="clip"))
        return out

    def weighted(self, A, w):
        """``A * w[:, None]`` (a new array off NumPy, else in the scratch rows)."""
        if not self._np:
            return A * w[:, None]
        import numpy as np  # noqa: PLC0415

        return np.multiply(A, w[:, None], out=self._buffer("_weight")[: A.shape[0]])
