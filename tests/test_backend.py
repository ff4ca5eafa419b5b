import itertools
import pickle

import array_api_strict
import numpy as np
import pytest
import scipy.linalg

from svmgpu import backend as B
from svmgpu.testing import assert_allclose, assert_array_equal, host


def test_get_device_cpu_and_auto():
    assert B.get_device("cpu") == B.Device("cpu")
    assert B.get_device("CPU") == B.Device("cpu")
    auto = B.get_device("auto")
    assert auto.kind == ("cuda" if B.cupy_available() else "cpu")
    assert B.get_device(None) == auto
    assert B.get_device(B.Device("cpu")) is not None
    assert str(B.get_device("cpu")) == "cpu"


@pytest.mark.parametrize("bad", ["tpu", "cuda:x", "cpu:1", "", 3, 1.5])
def test_get_device_unknown(bad):
    with pytest.raises(ValueError, match="device"):
        B.get_device(bad)


@pytest.mark.skipif(B.cupy_available(), reason="this machine has a usable GPU")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "gpu"])
def test_cuda_without_cupy_says_how_to_fix(spec):
    """The fix is a command that works: svmgpu is not on the package index, so the message
    names the `cuda` extra from a checkout and CuPy's own package (issue 26 item 7)."""
    with pytest.raises(RuntimeError, match=r'`cuda` extra .*pip install -e "\.\[cuda\]".*'
                                           r'cupy-cuda12x\[ctk\]') as err:
        B.get_device(spec)
    assert "svmgpu[" not in str(err.value)


@pytest.mark.parametrize("text,expected", [
    ("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1e6", 10**6), (1024, 1024),
    ("1.5 kb", 1500), ("3gib", 3 * 2**30), (2.5e3, 2500),
])
def test_parse_bytes(text, expected):
    assert B.parse_bytes(text) == expected


@pytest.mark.parametrize("bad", [0, -1, "0GB", "two GB", "5 parsecs", True, None, float("nan")])
def test_parse_bytes_rejects(bad):
    with pytest.raises(ValueError, match="memory_budget"):
        B.parse_bytes(bad)


def test_block_rows_and_budget():
    assert B.block_rows(100, 8, 8000) == 10
    assert B.block_rows(100, 8, 8000, n_buffers=2) == 5
    assert B.block_rows(100, 8, 10**9, max_rows=7) == 7
    with pytest.raises(MemoryError, match="memory_budget"):
        B.block_rows(1000, 8, 100)
    assert B.resolve_budget("1MB", "cpu") == 10**6
    free = B.available_memory("cpu")
    assert free > 0
    assert 0 < B.resolve_budget(None, "cpu") <= free


def _spd(n, rng, dtype=np.float64):
    A = rng.standard_normal((n, n))
    return (A @ A.T + n * np.eye(n)).astype(dtype)


def test_linalg_matches_scipy(device, xp):
    rng = np.random.default_rng(0)
    A = _spd(6, rng)
    b = rng.standard_normal((6, 2))
    Ad, bd = B.to_device(A, device), B.to_device(b, device)
    L = B.cholesky(Ad, xp=xp)
    assert_allclose(L, scipy.linalg.cholesky(A, lower=True), device=device, dtype="float64")
    U = B.cholesky(Ad, lower=False, xp=xp)
    assert_allclose(U, scipy.linalg.cholesky(A, lower=False), device=device)
    assert_allclose(B.solve_triangular(L, bd, lower=True, xp=xp),
                    scipy.linalg.solve_triangular(host(L), b, lower=True), device=device)
    assert_allclose(B.solve_triangular(L, bd, lower=True, trans=1, xp=xp),
                    scipy.linalg.solve_triangular(host(L), b, lower=True, trans=1))
    for lower in (True, False):
        c = B.cho_factor(Ad, lower=lower, xp=xp)
        assert_allclose(B.cho_solve(c, bd, xp=xp), np.linalg.solve(A, b), rtol=1e-9)
        T = L if lower else U
        Ti = B.tri_inv(T, lower=lower, xp=xp)
        assert_allclose(Ti, np.linalg.inv(host(T)), device=device, rtol=1e-10, atol=1e-14)
        tri = np.tril if lower else np.triu
        assert_array_equal(host(Ti), tri(host(Ti)))
    L32 = B.cholesky(B.to_device(A.astype(np.float32), device), xp=xp)
    assert_allclose(B.tri_inv(L32, xp=xp), np.linalg.inv(host(L32).astype(np.float64)),
                    dtype="float32", rtol=1e-4, atol=1e-6)


def test_cho_factor_solves_in_place_and_leaves_the_other_triangle(device, xp):
    # (overwrite: factored in A's own memory, no copy; NumPy: cho_factor skips zeroing the
    # triangle its solves never read, where cholesky zeroes it)
    rng = np.random.default_rng(1)
    A = _spd(9, rng)
    b = rng.standard_normal((9, 2))
    for lower, overwrite in itertools.product((True, False), (True, False)):
        Ad = B.to_device(A.copy(), device)
        c = B.cho_factor(Ad, lower=lower, overwrite=overwrite, xp=xp)
        assert_allclose(B.cho_solve(c, B.to_device(b, device), xp=xp), np.linalg.solve(A, b),
                        device=device, rtol=1e-10)
        T = B.cholesky(B.to_device(A.copy(), device), lower=lower, xp=xp)
        tri = np.tril if lower else np.triu
        assert_array_equal(host(T), tri(host(T)))
        assert_allclose(B.solve_triangular(c[0], B.to_device(b, device), lower=lower, xp=xp),
                        scipy.linalg.solve_triangular(host(T), b, lower=lower), rtol=1e-10)
        if B.is_numpy(xp):
            assert np.shares_memory(c[0], Ad) == overwrite
            other = np.triu(np.ones((9, 9), bool), 1) if lower else \
                np.tril(np.ones((9, 9), bool), -1)
            assert_array_equal(c[0][other], A[other])


def test_take_entries_gathers_pairs_of_indices(device, xp):
    """``take_entries(a, rows, cols)`` is NumPy's ``a[rows, cols]`` (repeats and any order),
    on every backend; index arrays of other shapes are refused by name."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((6, 4)).astype(np.float32)
    rows, cols = np.array([5, 0, 2, 5, 3]), np.array([3, 0, 1, 3, 2])
    got = B.take_entries(B.to_device(A, device), B.to_device(rows, device),
                         B.to_device(cols, device), xp=xp)
    assert_array_equal(got, A[rows, cols], device=device)
    with pytest.raises(ValueError, match="rows and cols must be 1-D index arrays of one"):
        B.take_entries(B.to_device(A, device), B.to_device(rows, device),
                       B.to_device(cols[:3], device), xp=xp)


def test_take_block_and_add_diagonal(device, xp):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((9, 7))
    rows, cols = np.array([4, 0, 8, 4]), np.array([6, 1, 2])
    blk = B.take_block(B.to_device(A, device), B.to_device(rows, device),
                       B.to_device(cols, device), xp=xp)
    assert_array_equal(blk, A[np.ix_(rows, cols)], device=device)
    S = rng.standard_normal((5, 5))
    v = rng.standard_normal(5)
    out = B.add_diagonal(B.to_device(S.copy(), device), B.to_device(v, device), xp=xp)
    assert_array_equal(out, S + np.diag(v), device=device)
    if B.is_numpy(xp):  # (a Fortran-ordered matrix too, in place)
        F = np.asfortranarray(S)
        assert B.add_diagonal(F, v, xp=xp) is F
        assert_array_equal(F, S + np.diag(v))
        T = S.copy()[:, ::2]  # (neither order: a new array)
        T = T[:3, :]
        assert_array_equal(B.add_diagonal(T, v[:3], xp=xp), T + np.diag(v[:3]))
    empty = B.take_block(B.to_device(A, device), B.to_device(rows, device),
                         B.to_device(cols[:0], device), xp=xp)
    assert tuple(empty.shape) == (4, 0)


@pytest.mark.parametrize("n_cols", [3, 40])  # (few columns; many)
def test_take_block_of_a_large_array(device, xp, n_cols, monkeypatch):
    """Above _SMALL_GATHER elements of whole rows (NumPy: in chunks of _CHUNK_BYTES of rows,
    3 rows here; CuPy: one 2-D index), into a buffer or not, the block is
    ``A[rows][:, cols]``."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_SMALL_GATHER", 0)
    monkeypatch.setattr(_ops, "_CHUNK_BYTES", 3 * 50 * 4)  # (3 rows a chunk)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((60, 50)).astype(np.float32)
    rows = rng.choice(60, 25, replace=False)
    cols = np.sort(rng.choice(50, n_cols, replace=False))
    blk = B.take_block(B.to_device(A, device), B.to_device(rows, device),
                       B.to_device(cols, device), xp=xp)
    assert_array_equal(blk, A[np.ix_(rows, cols)], device=device)
    if B.is_numpy(xp):  # (its gathers clip: an index out of range is refused first)
        with pytest.raises(IndexError, match="out of range"):
            B.take_block(A, np.append(rows[1:], 60), cols, xp=xp)
    # into a buffer (NumPy: written in chunks of rows and returned; elsewhere allocated)
    buf = xp.full((25 * n_cols + 7,), -1.0, dtype=xp.float32)
    blk = B.take_block(B.to_device(A, device), B.to_device(rows, device),
                       B.to_device(cols, device), xp=xp, out=buf)
    assert_array_equal(blk, A[np.ix_(rows, cols)], device=device)
    if B.is_numpy(xp):
        assert np.shares_memory(blk, buf) and np.all(buf[25 * n_cols:] == -1.0)
        for bad in (buf[:25 * n_cols - 1], xp.astype(buf, xp.float64)):  # (too small, dtype)
            with pytest.raises(ValueError, match="out must be 1-D"):
                B.take_block(B.to_device(A, device), B.to_device(rows, device),
                             B.to_device(cols, device), xp=xp, out=bad)
        # (its gathers clip instead of buffering: an index out of range is refused first)
        for r_bad, c_bad in ((np.append(rows[1:], 60), cols), (rows, np.append(cols[1:], -1))):
            with pytest.raises(IndexError, match="out of range"):
                B.take_block(A, r_bad, c_bad, xp=xp, out=buf)
    # several column sets from one pass over the rows (take_blocks): each its own C-ordered
    # block, into its buffer or a new array
    other = rng.choice(50, 7, replace=False)
    bufs = (xp.full((25 * n_cols,), -1.0, dtype=xp.float32), None)
    got = B.take_blocks(B.to_device(A, device), B.to_device(rows, device),
                        (B.to_device(cols, device), B.to_device(other, device)), xp=xp,
                        out=bufs)
    for blk, c in zip(got, (cols, other)):
        assert_array_equal(blk, A[np.ix_(rows, c)], device=device)
    if B.is_numpy(xp):
        assert np.shares_memory(got[0], bufs[0]) and all(b.flags.c_contiguous for b in got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vecdot_and_vector_norm(device, xp, dtype):
    """The dot product and Euclidean norm of 1-D arrays (NumPy float64: SciPy's BLAS) against
    NumPy's in float64; there a tiny and a huge vector keep their norm (BLAS's scaled nrm2:
    NumPy's own vector_norm overflows at 1e200)."""
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal(5000).astype(dtype), rng.standard_normal(5000).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    dot = B.vecdot(B.to_device(a, device), B.to_device(b, device), xp=xp)
    nrm = B.vector_norm(B.to_device(a, device), xp=xp)
    assert float(dot) == pytest.approx(float(a.astype(np.float64) @ b.astype(np.float64)),
                                       rel=tol)
    assert float(nrm) == pytest.approx(float(np.linalg.norm(a.astype(np.float64))), rel=tol)
    if dtype == np.float64 and B.is_numpy(xp):
        for scale in (1e-200, 1e200):
            assert float(B.vector_norm(B.to_device(scale * a, device), xp=xp)) == \
                pytest.approx(scale * np.linalg.norm(a), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matvec_in_dtype_multiplies_in_the_matrix_dtype(device, xp, dtype):
    """``a @ v`` for a float64 v, in a's dtype (v rounded to it), returned as float64."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 30)).astype(dtype)
    v = rng.standard_normal(30)
    got = B.matvec_in_dtype(B.to_device(a, device), B.to_device(v, device), xp=xp)
    assert got.dtype == xp.float64
    want = (a @ v.astype(dtype)).astype(np.float64)
    assert_allclose(got, want, device=device, rtol=1e-6 if dtype == np.float32 else 1e-13,
                    atol=1e-6 if dtype == np.float32 else 1e-13)
    if dtype == np.float32:  # (v rounded to float32: not the float64 product)
        assert np.max(np.abs(host(got) - a.astype(np.float64) @ v)) > 1e-9


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_block_times_is_the_rows_product_and_block(device, xp, dtype, small, monkeypatch):
    """``(A[rows] @ v, A[rows][:, cols])`` in one pass over the rows (NumPy: chunks of 3
    rows here, or the rows at once where they are small): the product in A's dtype returned
    as float64, the block in the dtype asked for (float64 from a float32 A: exactly its
    entries)."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_CHUNK_BYTES", 3 * 50 * np.dtype(dtype).itemsize)
    if not small:
        monkeypatch.setattr(_ops, "_SMALL_GATHER", 0)
    rng = np.random.default_rng(6)
    A = rng.standard_normal((60, 50)).astype(dtype)
    rows, cols = rng.choice(60, 25, replace=False), np.sort(rng.choice(50, 20, replace=False))
    v = rng.standard_normal(50)
    for want in (np.float64, dtype):
        prod, blk = B.take_block_times(B.to_device(A, device), B.to_device(rows, device),
                                       B.to_device(cols, device), B.to_device(v, device),
                                       xp=xp, dtype=getattr(xp, np.dtype(want).name))
        assert prod.dtype == xp.float64 and blk.dtype == getattr(xp, np.dtype(want).name)
        assert_array_equal(blk, A[np.ix_(rows, cols)].astype(want), device=device)
        ref = A[rows].astype(np.float64) @ v.astype(dtype).astype(np.float64)
        assert_allclose(prod, ref, device=device, rtol=1e-5 if dtype == np.float32 else 1e-12,
                        atol=1e-5 if dtype == np.float32 else 1e-12)
    if B.is_numpy(xp):  # (its gathers clip: an index out of range is refused first)
        for r_bad, c_bad in ((np.append(rows[1:], 60), cols), (rows, np.append(cols[1:], 50))):
            with pytest.raises(IndexError, match="out of range"):
                B.take_block_times(A, r_bad, c_bad, v, xp=xp, dtype=np.float64)


def test_product_in_float64_multiplies_float32_entries_exactly(device, xp, monkeypatch):
    """``a @ b`` for a float32 ``a`` (here a strided view, converted 3 rows at a time on NumPy)
    in float64: the float64 product of its entries, far closer than the float32 product."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_CHUNK_BYTES", 3 * 40 * 8)
    rng = np.random.default_rng(9)
    whole = rng.standard_normal((50, 60)).astype(np.float32)
    a = whole[:, :40]  # (rows of 60 entries, 40 read)
    for b in (rng.standard_normal(40), rng.standard_normal((40, 2))):
        want = a.astype(np.float64) @ b
        got = B.product_in_float64(B.to_device(whole, device)[:, :40], B.to_device(b, device),
                                   xp=xp)
        assert got.dtype == xp.float64 and tuple(got.shape) == want.shape
        assert_allclose(got, want, device=device, rtol=1e-13, atol=1e-12)
        err32 = np.max(np.abs((a @ b.astype(np.float32)).astype(np.float64) - want))
        assert err32 > 1e-8  # (what the float32 product would have lost)


@pytest.mark.parametrize("small", [False, True])
def test_take_block_times_writes_its_block_into_out(small, monkeypatch):
    """On NumPy the block goes into ``out`` (a Workspace buffer), whose shape and dtype must be
    the block's (the rows in chunks, or at once where they are small)."""
    from svmgpu.backend import _ops

    if not small:
        monkeypatch.setattr(_ops, "_SMALL_GATHER", 0)
    rng = np.random.default_rng(8)
    A = rng.standard_normal((40, 30)).astype(np.float32)
    rows, cols, v = np.array([3, 0, 17, 39]), np.array([1, 5, 29]), rng.standard_normal(30)
    out = np.full((4, 3), np.nan)
    prod, blk = B.take_block_times(A, rows, cols, v, xp=np, dtype=np.float64, out=out)
    assert blk is out
    assert B.take_block_times(A, rows, cols, v, xp=np, dtype=np.float32)[1].flags.c_contiguous
    assert_array_equal(out, A[np.ix_(rows, cols)].astype(np.float64))
    ref, _ = B.take_block_times(A, rows, cols, v, xp=np, dtype=np.float64)
    assert_array_equal(prod, ref)
    for bad in (np.empty((4, 4)), np.empty((4, 3), dtype=np.float32)):
        with pytest.raises(ValueError, match="out must be a"):
            B.take_block_times(A, rows, cols, v, xp=np, dtype=np.float64, out=bad)


def test_workspace_reuses_its_buffers(device, xp):
    """A name's next array reuses the memory of its last (NumPy), growing by half again up to
    ``most`` elements; arrays under ``least`` bytes, and every array off NumPy, get none
    (empty: None; astype: a new copy)."""
    space = B.Workspace(xp, most=1000, least=800)
    a = B.to_device(np.arange(12.0).reshape(3, 4), device)
    if not B.is_numpy(xp):
        assert space.empty("M", (30, 30), xp.float64) is None
        c = space.astype("M", a, xp.float32)
        assert c.dtype == xp.float32
        assert_array_equal(c, np.arange(12.0).reshape(3, 4).astype(np.float32), device=device)
        return
    assert space.empty("M", (3, 4), np.float64) is None  # (96 bytes < least)
    first = space.empty("M", (10, 12), np.float64)
    assert first.shape == (10, 12) and first.dtype == np.float64
    second = space.empty("M", (11, 10), np.float64)  # (fits the 120 elements held)
    assert np.shares_memory(first, second) and second.shape == (11, 10)
    grown = space.empty("M", (11, 12), np.float64)  # 132 > 120: a new buffer of 180
    assert not np.shares_memory(first, grown)
    assert np.shares_memory(grown, space.empty("M", (12, 15), np.float64))
    space.empty("M", (30, 30), np.float64)  # (900 > 1.5 · 180: 900)
    big = space.empty("M", (950,), np.float64)  # (1.5 · 900 = 1,350, capped at most: 1,000)
    assert np.shares_memory(big, space.empty("M", (1000,), np.float64))
    assert not np.shares_memory(big, space.empty("M", (1001,), np.float64))  # (past most)
    src = np.random.default_rng(0).standard_normal((20, 20))
    c = space.astype("low", src, np.float32)
    assert c.dtype == np.float32 and np.shares_memory(c, space.empty("low", (400,), np.float32))
    assert_array_equal(c, src.astype(np.float32))
    # reserve: a name's first buffer takes ``most`` elements, so it never moves as it grows
    kept = B.Workspace(xp, most=1000, least=800, reserve=True)
    small = kept.empty("M", (10, 12), np.float64)
    assert small.base is not None and small.base.size == 1000
    assert np.shares_memory(small, kept.empty("M", (30, 33), np.float64))
    assert not np.shares_memory(small, kept.empty("M", (1001,), np.float64))  # (past most)
    kept.widen(500)  # (below most: no change)
    assert kept.most == 1000
    kept.widen(3000)  # (a larger next problem: the next growth reserves 3,000)
    grown = kept.empty("M", (1600,), np.float64)
    assert grown.base.size == 3000 and kept.most == 3000
    assert np.shares_memory(grown, kept.empty("M", (3000,), np.float64))
    # (address space the system refuses: the size asked for)
    refused = B.Workspace(xp, most=2 ** 50, least=0, reserve=True)
    assert refused.empty("M", (10, 12), np.float32).base.size == 120


@pytest.mark.parametrize("gather", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symmetric_matvec_reads_the_support_rows(device, xp, dtype, gather, monkeypatch):
    """``a @ v`` for symmetric ``a`` and ``v`` zero outside ``support``: float64, within the
    dtype's rounding of the float64 product (on NumPy the support's rows in chunks of
    _MATVEC_CHUNK_BYTES, 3 rows here, where the support is a small part of a large matrix or
    of a row store, or the plain product; elsewhere the full product)."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_MATVEC_CHUNK_BYTES", 3 * 40 * 8)
    if gather:  # (40 rows, 11 in the support: gathered only below these sizes)
        monkeypatch.setattr(_ops, "_MATVEC_FULL_ORDER", 0)
        monkeypatch.setattr(_ops, "_MATVEC_ROWS_MIN", 1)
    rng = np.random.default_rng(6)
    G = rng.standard_normal((40, 40))
    A = (G + G.T).astype(dtype)
    support = np.sort(rng.choice(40, 11, replace=False))
    v = np.zeros(40)
    v[support] = rng.standard_normal(11)
    got = B.symmetric_matvec(B.to_device(A, device), B.to_device(v, device),
                             B.to_device(support, device), xp=xp)
    ref = A.astype(np.float64) @ v
    assert_allclose(got, ref, device=device, dtype="float64", shape=(40,),
                    atol=1e-5 if dtype == np.float32 else 1e-12)
    tol = 1e-5 if dtype == np.float32 else 1e-12

    def through_store(n_rows, at):
        """The product through a row store of n_rows rows whose row ``at[i]`` is the matrix's
        row ``support[i]`` (its other rows zero, finite: the docstring)."""
        store = np.zeros((n_rows, 40), dtype=dtype)
        store[at] = A[support]
        got = B.symmetric_matvec(B.to_device(store, device), B.to_device(v, device),
                                 B.to_device(support, device), rows=B.to_device(at, device),
                                 xp=xp)
        assert_allclose(got, ref, device=device, dtype="float64", shape=(40,), atol=tol)

    through_store(40, rng.permutation(40)[:11])  # (11 of 40 rows, scattered: gathered)
    if B.is_numpy(xp) and gather:
        with pytest.raises(IndexError, match="out of range"):
            B.symmetric_matvec(A, v, np.array([3, 40]), xp=xp)
        with pytest.raises(IndexError, match="out of range"):  # (a range past a's rows)
            B.symmetric_matvec(A, v, np.array([38, 39]), rows=np.array([39, 40]), xp=xp)
    gathered = []
    real = _ops.BlockScratch.rows
    monkeypatch.setattr(_ops.BlockScratch, "rows",
                        lambda self, *a, **k: gathered.append(1) or real(self, *a, **k))
    # the support's rows a range of the store in order (under half of it): read in place
    through_store(40, np.arange(5, 16))
    assert not gathered
    # the support on at least half of the store's rows (11 of 15), in any order: every row of
    # the store read in place, v moved to the support's rows (_MATVEC_STORE_FULL)
    through_store(15, rng.permutation(15)[:11])
    assert not gathered


@pytest.mark.parametrize("values", [[3, 1, 3, 2, 1, 7, 7], [5], [], [2, 2, 2]])
def test_sorted_unique_is_numpys_unique(device, xp, values):
    x = np.array(values, dtype=np.int64)
    got = B.sorted_unique(B.to_device(x, device), xp=xp)
    assert_array_equal(got, np.unique(x), device=device)


def test_range_block_is_the_gather_of_its_ranges(device, xp, monkeypatch):
    """``range_block``: rows of ranges by columns of ranges, range after range or each range's
    rows at the places ``at`` (NumPy: chunks of 2 rows here)."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_CHUNK_BYTES", 2 * 5 * 8)
    A = np.random.default_rng(3).standard_normal((10, 10))
    ranges = [(0, 3), (5, 5), (6, 10)]  # (an empty range adds nothing)
    idx = np.concatenate([np.arange(s, e) for s, e in ranges])
    blk = B.range_block(B.to_device(A, device), ranges, xp=xp)
    assert_array_equal(blk, A[np.ix_(idx, idx)], device=device)
    assert_array_equal(B.range_block(B.to_device(A, device), [(2, 7)], xp=xp), A[2:7, 2:7],
                       device=device)
    cols = [(1, 2), (4, 8), (9, 9)]  # (other columns than rows)
    jdx = np.concatenate([np.arange(s, e) for s, e in cols])
    assert_array_equal(B.range_indices(cols, xp=xp, device=getattr(B.to_device(A, device),
                                                                   "device", None)), jdx)
    assert_array_equal(B.range_block(B.to_device(A, device), ranges, cols, xp=xp),
                       A[np.ix_(idx, jdx)], device=device)
    buf = np.full(100, np.nan)  # (NumPy: written into the front of a flat buffer)
    got = B.range_block(A, ranges, cols, xp=np, out=buf)
    assert_array_equal(got, A[np.ix_(idx, jdx)])
    assert np.shares_memory(got, buf) and np.all(np.isnan(buf[got.size:]))
    with pytest.raises(ValueError, match="out must be 1-D"):
        B.range_block(A, ranges, cols, xp=np, out=np.empty(10))
    # each range's rows at given places: here the rows of both ranges interleaved by index
    at = [np.array([0, 2, 4]), np.array([], dtype=np.int64), np.array([1, 3, 5, 6])]
    want = np.empty((7, 5))
    for (s, e), p in zip(ranges, at):
        want[p] = A[np.ix_(np.arange(s, e), jdx)]
    got = B.range_block(B.to_device(A, device), ranges, cols, xp=xp,
                        at=[B.to_device(p, device) for p in at])
    assert_array_equal(got, want, device=device)


def test_range_block_splits_a_large_blocks_chunks_between_the_cores(monkeypatch):
    """NumPy: a block of ``_THREADED_COPY_BYTES`` or more is copied by ``map_threads``, its
    chunks of rows in two halves, each range's rows range after range or at their places;
    the block is the serial copy's (and the gather's)."""
    from svmgpu.backend import _ops

    calls = []

    def spy(fn, items, *, xp, max_workers=None):
        calls.append(len(items))
        return [fn(item) for item in items]

    monkeypatch.setattr(_ops, "map_threads", spy)
    monkeypatch.setattr(_ops, "_CHUNK_BYTES", 3 * 6 * 8)  # (chunks of 3 rows of 6 columns)
    A = np.random.default_rng(4).standard_normal((40, 12))
    ranges, cols = [(0, 13), (20, 38)], [(1, 4), (6, 9)]
    idx = np.concatenate([np.arange(s, e) for s, e in ranges])
    jdx = np.concatenate([np.arange(s, e) for s, e in cols])
    perm = np.random.default_rng(5).permutation(31)
    at = [np.sort(perm[:13]), np.sort(perm[13:])]
    want_at = np.empty((31, 6))
    want_at[at[0]], want_at[at[1]] = A[np.ix_(np.arange(0, 13), jdx)], A[np.ix_(np.arange(20, 38),
                                                                              jdx)]
    for threaded in (False, True):
        monkeypatch.setattr(_ops, "_THREADED_COPY_BYTES", 8 if threaded else 1 << 40)
        calls.clear()
        assert_array_equal(B.range_block(A, ranges, cols, xp=np), A[np.ix_(idx, jdx)])
        assert_array_equal(B.range_block(A, ranges, cols, xp=np, at=at), want_at)
        assert calls == ([2, 2] if threaded else [])


def test_random_subset_unsorted_prefixes_and_astype_rows(device, xp):
    """``random_subset(sort=False)``: the draw in its order (sorted, the default's), so that
    every prefix is a set of distinct rows; ``astype_rows`` converts dense and sparse X."""
    import scipy.sparse as sp

    draw = host(B.random_subset(50, 20, seed=3, device=device, sort=False))
    assert len(set(draw.tolist())) == 20 and not np.all(np.diff(draw) > 0)
    assert_array_equal(np.sort(draw), B.random_subset(50, 20, seed=3, device=device))
    X = B.to_device(np.arange(6.0).reshape(3, 2), device)
    assert B.astype_rows(X, xp.float32, xp=xp).dtype == xp.float32
    assert B.astype_rows(X, xp.float64, xp=xp) is X  # (no copy)
    S = sp.csr_matrix(np.eye(3))
    assert B.astype_rows(S, np.float32, xp=xp).dtype == np.float32


@pytest.mark.parametrize("weighted", [False, True])
def test_column_moments_of_dense_rows_by_blocks(device, xp, monkeypatch, weighted):
    """Dense ``column_moments`` (blocks of 4 rows here) is NumPy's ``var`` per column and over
    all entries, in float64 for float32 rows too; integer weights count as repetitions (rows
    repeated, weight 0 dropped), the same as sparse X's."""
    import scipy.sparse as sp

    import svmgpu.backend._sparse as sparse_module

    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 4 * 3 * 8)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((11, 3)) * [1.0, 5.0, 0.01] + [0.0, 1e3, -2.0]
    w = rng.integers(0, 4, 11).astype(np.float64) if weighted else None
    R = np.repeat(A, w.astype(int), axis=0) if weighted else A
    for dt in (np.float32, np.float64):
        col, total = B.column_moments(B.to_device(A.astype(dt), device),
                                      None if w is None else B.to_device(w, device), xp=xp)
        ref = R.astype(dt).astype(np.float64)
        assert_allclose(col, ref.var(axis=0), rtol=1e-12, atol=0, dtype="float64",
                        shape=(3,), device=device)
        assert float(total) == pytest.approx(ref.var(), rel=1e-12)
    scol, stotal = B.column_moments(sp.csr_matrix(A), w)  # (float64 A, as the last above)
    assert_allclose(host(col), np.asarray(scol), rtol=1e-9)
    assert float(total) == pytest.approx(float(stotal), rel=1e-9)


def test_column_range_over_kept_rows_by_blocks(device, xp, monkeypatch):
    """``column_range``: each column's min and max over the rows ``keep`` holds (blocks of 4
    rows here), all rows for None; a column without kept rows gets (inf, -inf)."""
    import svmgpu.backend._sparse as sparse_module

    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 4 * 3 * 8)
    A = np.random.default_rng(5).standard_normal((11, 3))
    keep = np.arange(11) % 3 != 0
    lo, hi = B.column_range(B.to_device(A, device), xp=xp, keep=B.to_device(keep, device))
    assert_allclose(lo, A[keep].min(axis=0), rtol=0, atol=0, device=device, shape=(3,))
    assert_allclose(hi, A[keep].max(axis=0), rtol=0, atol=0, device=device, shape=(3,))
    lo, hi = B.column_range(B.to_device(A, device), xp=xp)
    assert_allclose(lo, A.min(axis=0), rtol=0, atol=0)
    assert_allclose(hi, A.max(axis=0), rtol=0, atol=0)
    lo, hi = B.column_range(B.to_device(A, device), xp=xp,
                            keep=B.to_device(np.zeros(11, dtype=bool), device))
    assert np.all(host(lo) == np.inf) and np.all(host(hi) == -np.inf)


def test_astype_rows_shifted_and_row_extent(device, xp, monkeypatch):
    """``astype_rows(shift=c)`` is ``X − c`` converted (row block by row block: here blocks
    of 4 rows), so that an offset of 10⁶ keeps float32's digits for the spread;
    ``row_extent`` is (max |x − c|, max ‖x − c‖²), dense or sparse (unshifted)."""
    import scipy.sparse as sp

    import svmgpu.backend._sparse as sparse_module

    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 4 * 3 * 8)  # (blocks of 4 rows)
    A = np.random.default_rng(0).standard_normal((10, 3))
    c = np.full(3, 1e6)
    X, cd = B.to_device(A + c, device), B.to_device(c, device)
    got = B.astype_rows(X, xp.float32, xp=xp, shift=cd)
    assert got.dtype == xp.float32
    assert_allclose(got, A, rtol=1e-6, atol=0, device=device)  # (unshifted: off by up to 0.03)
    amax, sq = B.row_extent(X, shift=cd, xp=xp)
    assert amax == pytest.approx(np.abs(A).max()) and sq == pytest.approx((A * A).sum(1).max())
    assert B.row_extent(X[:0, :], xp=xp) == (0.0, 0.0)
    S = sp.csr_matrix(np.where(np.abs(A) > 1, A, 0.0))
    assert B.row_extent(S, xp=np) == pytest.approx(
        (np.abs(S.toarray()).max(), (S.toarray() ** 2).sum(1).max()))
    with pytest.raises(ValueError, match="sparse X cannot be shifted"):
        B.astype_rows(S, np.float32, xp=np, shift=c)
    with pytest.raises(ValueError, match="sparse X cannot be shifted"):
        B.row_extent(S, xp=np, shift=c)


def test_cholesky_not_pd_raises(device, xp):
    A = B.to_device(np.array([[1.0, 2.0], [2.0, 1.0]]), device)
    with pytest.raises(np.linalg.LinAlgError):
        B.cholesky(A, xp=xp)
    if B.is_numpy(xp):  # LAPACK trtri reports a zero on the diagonal
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            B.tri_inv(np.array([[1.0, 0.0], [2.0, 0.0]]), xp=xp)


def test_jittered_cholesky_reports_shift(device, xp):
    rng = np.random.default_rng(1)
    V = rng.standard_normal((8, 3))
    A = V @ V.T  # rank 3: singular
    L, shift = B.jittered_cholesky(B.to_device(A, device), xp=xp)
    assert shift > 0
    Ln = host(L)
    assert_allclose(Ln @ Ln.T, A + shift * np.eye(8), atol=1e-10)
    L2, shift2 = B.jittered_cholesky(B.to_device(_spd(4, rng), device), xp=xp)
    assert shift2 == 0.0
    with pytest.raises(np.linalg.LinAlgError):
        B.jittered_cholesky(B.to_device(-np.eye(3), device), xp=xp, max_tries=3)
    with pytest.raises(np.linalg.LinAlgError, match="NaN"):
        B.jittered_cholesky(B.to_device(np.full((2, 2), np.nan), device), xp=xp)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tri_inv_matmul_inplace(device, xp, dtype):
    rng = np.random.default_rng(2)
    M = rng.standard_normal((7, 5)).astype(dtype)
    Li = np.tril(rng.standard_normal((5, 5))).astype(dtype)
    got = B.tri_inv_matmul_inplace(B.to_device(M.copy(), device),
                                   B.to_device(np.asfortranarray(Li), device), xp=xp)
    assert_allclose(got, M.astype(np.float64) @ Li.T.astype(np.float64), device=device,
                    dtype=np.dtype(dtype).name, rtol=1e-5 if dtype == np.float32 else 1e-12)


def _layouts(rng, shape, dtype):
    """The same values C-ordered, Fortran-ordered and as a strided view."""
    a = rng.standard_normal(shape).astype(dtype)
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype=dtype)
    wide[..., ::2] = a
    return [a, np.asfortranarray(a), wide[..., ::2]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_every_layout_matches_numpy(device, xp, dtype):
    """matmul, with and without out (SciPy's BLAS on NumPy) equal np.matmul for C, Fortran and strided
    operands, vector and matrix right sides, into an output and not."""
    rng = np.random.default_rng(3)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a in _layouts(rng, (7, 5), dtype):
        for b in _layouts(rng, (5, 3), dtype) + _layouts(rng, (5,), dtype):
            ref = a.astype(np.float64) @ b.astype(np.float64)
            got = B.matmul(B.to_device(a, device), B.to_device(b, device), xp=xp)
            assert_allclose(got, ref, device=device, dtype=np.dtype(dtype).name, **tol)
            out = B.to_device(np.empty(ref.shape, dtype=dtype), device)
            got = B.matmul(B.to_device(a, device), B.to_device(b, device), xp=xp, out=out)
            if B.is_numpy(xp):
                assert got is out
            assert_allclose(got, ref, device=device, **tol)
            if B.is_numpy(xp):  # a column block of a wider matrix (kernel columns beside an
                # intercept column): written in place though not C-ordered
                wide = np.full(ref.shape[:-1] + (ref.shape[-1] + 1,), 7.0, dtype=dtype) \
                    if ref.ndim == 2 else np.full((2 * ref.shape[0],), 7.0, dtype=dtype)
                view = wide[:, :-1] if ref.ndim == 2 else wide[::2]
                assert B.matmul(a, b, xp=xp, out=view) is view
                np.testing.assert_allclose(view, ref, **tol)
                np.testing.assert_array_equal(wide[:, -1] if ref.ndim == 2 else wide[1::2], 7.0)
    empty = B.matmul(B.to_device(np.zeros((0, 5), dtype), device),
                     B.to_device(np.ones((5, 3), dtype), device), xp=xp)
    assert tuple(empty.shape) == (0, 3)


@pytest.mark.parametrize("r", [1, 127, 128, 129, 300])
def test_gram_accumulator_fills_the_upper_triangle_across_copy_blocks(r):
    """syrk writes the lower triangle; result() copies it up a block of columns at a time
    (blocks of _SYMMETRIZE_BLOCK columns): every size around a block edge is AᵀA exactly."""
    import array_api_compat.numpy as np_xp

    from svmgpu.backend._linalg import _SYMMETRIZE_BLOCK

    assert _SYMMETRIZE_BLOCK == 128
    A = np.random.default_rng(r).standard_normal((40, r))
    acc = B.GramAccumulator(r, xp=np_xp)
    acc.add_sym(A)
    G = acc.result()
    np.testing.assert_array_equal(G, G.T)
    np.testing.assert_allclose(G, A.T @ A, rtol=1e-12, atol=1e-12)


def test_gram_accumulator_matches_dense(device, xp):
    """Σ_b A_bᵀ W_b A_b from blocks, symmetric (syrk into one triangle on NumPy) and signed
    (gemm), against one dense product."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((40, 6))
    w = rng.random(40) + 0.1
    s = rng.standard_normal(40)
    sym = B.GramAccumulator(6, xp=xp, device=device.native_device)
    signed = B.GramAccumulator(6, xp=xp, device=device.native_device)
    for lo, hi in ((0, 17), (17, 17), (17, 40)):
        Ab = B.to_device(A[lo:hi], device)
        sym.add_sym(Ab * xp.sqrt(B.to_device(w[lo:hi], device))[:, None])
        signed.add(Ab * B.to_device(s[lo:hi], device)[:, None], Ab)
    sym.add_sym(B.to_device(np.asfortranarray(A[:5]), device), alpha=-2.0)
    G = sym.result()
    ref = A.T @ (w[:, None] * A) - 2.0 * A[:5].T @ A[:5]
    assert_allclose(G, ref, device=device, dtype="float64", rtol=1e-12, atol=1e-12)
    assert_array_equal(host(G), host(G).T)
    assert_allclose(signed.result(), A.T @ (s[:, None] * A), device=device, rtol=1e-12,
                    atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_scratch_rows_and_weights(device, xp, dtype):
    """Gathered, converted and weighted rows equal the direct expressions; a float64 slice is a
    view of the matrix itself (never written)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 4)).astype(dtype)
    Xd = B.to_device(X, device)
    scratch = B.BlockScratch(8, 4, xp=xp)
    idx = B.to_device(np.array([1, 7, 29]), device)
    for where, ref in ((slice(3, 11), X[3:11]), (idx, X[[1, 7, 29]])):
        got = scratch.rows(Xd, where)
        assert_allclose(got, ref.astype(np.float64), device=device, dtype="float64")
        w = rng.random(ref.shape[0])
        assert_allclose(scratch.weighted(got, B.to_device(w, device)), ref * w[:, None],
                        device=device, rtol=1e-6 if dtype == np.float32 else 1e-14)
    for where, ref in ((slice(3, 11), X[3:11]), (idx, X[[1, 7, 29]])):  # (X's own dtype)
        got = scratch.rows(Xd, where, native=True)
        assert got.dtype == Xd.dtype
        assert_array_equal(got, ref, device=device)
    if B.is_numpy(xp) and dtype == np.float64:
        assert np.shares_memory(scratch.rows(X, slice(0, 5)), X)
    if B.is_numpy(xp):
        for native in (False, True):
            with pytest.raises(IndexError, match="out of range"):
                scratch.rows(X, np.array([1, 30]), native=native)
    assert_array_equal(host(Xd), X)


def test_moves_and_tree(device):
    x = np.arange(6.0).reshape(2, 3)
    d = B.to_device(x, device)
    assert B.array_device(d) == device
    assert_array_equal(host(d), x)
    assert B.to_numpy(x) is x
    tree = {"a": [x, (x, 3)], "b": "s"}
    moved = B.tree_to_device(tree, device)
    assert B.array_device(moved["a"][1][0]) == device and moved["b"] == "s"
    back = B.tree_to_device(moved, "cpu")
    assert isinstance(back["a"][0], np.ndarray)
    pickle.loads(pickle.dumps(back))
    assert_allclose(B.asarray([1, 2], device=device, dtype=device.xp.float32), [1, 2],
                    dtype="float32", device=device)


def test_check_fits_and_numpy_dtype():
    B.check_fits(100, 100, what="x", hint="y")
    with pytest.raises(MemoryError, match=r"the thing needs about .* GB.*lower r, or raise memory_budget"):
        B.check_fits(10**9, 10**6, what="the thing", hint="lower r")
    assert B.numpy_dtype(np.float32) == np.float32
    assert B.numpy_dtype(array_api_strict.float64) == np.float64


def test_pivoted_cholesky_dense_full_rank_and_deficient():
    import array_api_compat.numpy as nxp

    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 30))
    S = A @ A.T + 30 * np.eye(30)  # well conditioned: the unpivoted factor, natural order
    L, piv = B.pivoted_cholesky_dense(S, rel_tol=1e-14, xp=nxp)
    assert_array_equal(piv, np.arange(30))
    assert_allclose(L @ L.T, S, rtol=1e-12)
    # rank 7 with 3 duplicated rows: the greedy largest-diagonal pivots, dependent ones dropped
    F = rng.standard_normal((20, 7))
    F[[3, 9, 15]] = F[[0, 1, 2]]
    K = F @ F.T
    L, piv = B.pivoted_cholesky_dense(K, rel_tol=1e-10, xp=nxp)
    assert len(piv) == 7 and len(set(piv.tolist())) == 7
    assert piv[0] == int(np.argmax(np.diag(K)))
    assert_allclose(L @ L.T, K[np.ix_(piv, piv)], atol=1e-10 * np.abs(K).max())
    assert np.allclose(L, np.tril(L))
    # an all-zero matrix has no pivot
    L0, piv0 = B.pivoted_cholesky_dense(np.zeros((4, 4)), rel_tol=1e-10, xp=nxp)
    assert L0.shape == (0, 0) and piv0.shape == (0,)


def test_nonzero_indices_and_fetch_scalars():
    import array_api_compat.numpy as nxp
    import array_api_strict as xs

    mask = np.random.default_rng(1).random(500) > 0.6
    want = np.flatnonzero(mask)
    assert_array_equal(B.nonzero_indices(mask, int(mask.sum()), xp=nxp), want)
    assert_array_equal(np.asarray(B.nonzero_indices(xs.asarray(mask), len(want), xp=xs)),
                                  want)
    with pytest.raises(ValueError, match="entries set"):
        B.nonzero_indices(mask, int(mask.sum()) + 1, xp=nxp)
    a = xs.asarray([1.5, -2.0])
    assert B.fetch_scalars(xs.sum(a), 3, xs.max(a), xp=xs) == [-0.5, 3.0, 1.5]
    assert B.fetch_scalars(2, 4.5, xp=nxp) == [2.0, 4.5]
    assert B.fetch_vector(a, xp=xs) == [1.5, -2.0]
    assert B.fetch_vector(nxp.asarray([0.25, 3.0, -1.0]), xp=nxp) == [0.25, 3.0, -1.0]


@pytest.mark.gpu
def test_cupy_names_the_backend_calls_exist():
    """Every CuPy / cupyx / array-api-compat-for-CuPy name the backend and the solvers call
    exists with the arguments used (checked on CuPy 14.2 without a GPU too, see the session
    note; the names come from ``grep -rn "xp\\.\\|cupy" svmgpu``)."""
    import inspect

    import array_api_compat.cupy as cxp
    import cupy
    import cupyx.scipy.linalg

    for name in ("unique_inverse", "unique_values", "cumulative_sum", "count_nonzero", "vecdot",
                 "matrix_transpose", "take", "astype", "isdtype", "searchsorted", "argsort",
                 "sort", "concat", "stack", "where", "maximum", "minimum", "nonzero", "argmax",
                 "argmin", "reshape", "full_like", "zeros_like", "eye", "empty", "arange",
                 "log1p", "exp", "sqrt", "abs", "sum", "mean", "max", "min", "all", "any"):
        assert hasattr(cxp, name), name
    for name in ("cholesky", "vector_norm", "diagonal", "solve", "trace"):
        assert hasattr(cxp.linalg, name), name
    params = inspect.signature(cupyx.scipy.linalg.solve_triangular).parameters
    assert {"a", "b", "trans", "lower"} <= set(params)
    for fn in (cupy.minimum, cupy.exp):
        assert callable(fn)
    assert callable(cupy.cuda.runtime.getDeviceCount) and callable(cupy.cuda.runtime.memGetInfo)
    assert hasattr(cupy.get_default_memory_pool(), "free_bytes")


def test_map_threads_keeps_order_runs_serial_blas_and_reraises():
    """map_threads: the results in the items' order; on NumPy each task sees BLAS on one
    thread (the serial context carried into its thread); the first exception is re-raised;
    other namespaces run in order in the caller's thread."""
    import threading

    import array_api_strict

    from svmgpu.backend import map_threads
    from svmgpu.backend._threads import _SERIAL

    seen = []

    def task(i):
        seen.append((threading.get_ident(), _SERIAL.get()))
        return i * i

    assert map_threads(task, range(7), xp=np) == [i * i for i in range(7)]
    assert all(serial for _, serial in seen)
    seen.clear()
    assert map_threads(task, range(3), xp=array_api_strict) == [0, 1, 4]
    assert {t for t, _ in seen} == {threading.get_ident()}
    assert map_threads(task, [], xp=np) == []

    def boom(i):
        if i == 2:
            raise ValueError("region 2")
        return i

    with pytest.raises(ValueError, match="region 2"):
        map_threads(boom, range(4), xp=np)

    def nested(i):  # (a task's own map_threads runs in order in the task's thread)
        outer = threading.get_ident()
        return map_threads(lambda j: threading.get_ident() == outer, range(3), xp=np)

    assert map_threads(nested, range(2), xp=np) == [[True] * 3] * 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_inplace_matches_pow_within_ulps(dtype):
    """Exponents 1–4 are products (faster than ``pow``), the others ``np.power``: each result
    in place in z, within a few ulps of ``z ** e`` for values of either sign."""
    from svmgpu.backend import power_inplace

    rng = np.random.default_rng(0)
    z0 = (rng.standard_normal(1000) * 3.0).astype(dtype)
    for e in range(1, 7):
        z = z0.copy()
        out = power_inplace(z, e, xp=np)
        assert out is z
        ref = z0.astype(np.float64) ** e
        ulp = np.spacing(np.abs(ref).astype(dtype)).astype(np.float64)
        assert np.all(np.abs(out.astype(np.float64) - ref) <= 4 * ulp), e


def test_power_inplace_cubes_large_arrays_without_a_temporary_of_their_size():
    """A cube larger than the chunk is formed a chunk at a time: the same values as
    ``(z · z) · z`` whole, in place, and no allocation near z's size during the call (a
    temporary as large as z was fresh memory: the exact path's whole kernel matrix of the
    'poly' kernel); a strided array takes the whole product."""
    import tracemalloc

    from svmgpu.backend import _ops, power_inplace

    rng = np.random.default_rng(1)
    z0 = rng.standard_normal((1500, 1001))  # 12 MB, 12 chunks of _CHUNK_BYTES
    assert z0.nbytes > 8 * _ops._CHUNK_BYTES
    z = z0.copy()
    tracemalloc.start()
    try:
        out = power_inplace(z, 3, xp=np)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is z
    assert np.array_equal(out, (z0 * z0) * z0)
    assert peak < 2 * _ops._CHUNK_BYTES < z0.nbytes / 4
    strided = z0.copy()[:, ::2]
    ref = (strided * strided) * strided
    assert np.array_equal(power_inplace(strided, 3, xp=np), ref)
