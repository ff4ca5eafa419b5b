import array_api_strict
import numpy as np
import pytest
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.svm import SVC

from svmgpu.backend import matmul, to_device
from svmgpu.kernels import (
    RBF,
    KernelRows,
    Laplacian,
    Linear,
    Polynomial,
    iter_kernel_blocks,
    kernel_block_min_bytes,
    kernel_columns,
    kernel_matvec,
    make_kernel,
)
from svmgpu.testing import assert_allclose, assert_array_equal, host

CASES = [
    (RBF(0.7), lambda X, Z: rbf_kernel(X, Z, gamma=0.7)),
    (Laplacian(0.3), lambda X, Z: laplacian_kernel(X, Z, gamma=0.3)),
    (Polynomial(3, 0.5, 1.0), lambda X, Z: polynomial_kernel(X, Z, 3, 0.5, 1.0)),
    (Linear(), linear_kernel),
]
IDS = ["rbf", "laplacian", "poly", "linear"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kernel,ref", CASES, ids=IDS)
def test_block_and_diag_match_dense_reference(device, kernel, ref, dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    Z = rng.standard_normal((17, 5))
    Xd = to_device(X.astype(dtype), device)
    Zd = to_device(Z.astype(dtype), device)
    expected = ref(X, Z)
    scale = max(np.abs(expected).max(), 1.0)
    tol = dict(rtol=1e-4, atol=2e-6 * scale) if dtype == "float32" else dict(rtol=1e-10,
                                                                            atol=1e-12 * scale)
    assert_allclose(kernel.block(Xd, Zd), expected, device=device, dtype=dtype, shape=(40, 17),
                    **tol)
    assert_allclose(kernel(Xd, Zd), expected, **tol)
    assert_allclose(kernel.diag(Xd), np.diag(ref(X, X)), device=device, dtype=dtype, shape=(40,),
                    **tol)


@pytest.mark.parametrize("kernel", [RBF(2.0), Laplacian(2.0)], ids=["rbf", "laplacian"])
def test_float32_far_from_origin(device, kernel):
    # Points at distance ~1e4 from the origin, spread ~1: the plain expansion in float32
    # loses everything (eps * |x|^2 ~ 12 >> distances); centring keeps full accuracy.
    rng = np.random.default_rng(1)
    # the reference uses the float32-rounded inputs: only the kernel's own error is measured
    X = (1e4 + rng.random((30, 3))).astype(np.float32).astype(np.float64)
    Z = (1e4 + rng.random((20, 3))).astype(np.float32).astype(np.float64)
    expected = (rbf_kernel if isinstance(kernel, RBF) else laplacian_kernel)(X - 1e4, Z - 1e4,
                                                                            gamma=2.0)
    got = kernel.block(to_device(X.astype(np.float32), device),
                       to_device(Z.astype(np.float32), device))
    assert_allclose(got, expected, dtype="float32", rtol=0, atol=2e-5)


def test_rbf_distances_clipped(device):
    # identical rows: the expansion can round slightly negative; K must never exceed 1
    rng = np.random.default_rng(2)
    for dtype, tol in (("float32", 1e-5), ("float64", 1e-13)):
        X = to_device((rng.random((50, 4)) * 3).astype(dtype), device)
        K = np.asarray(host(RBF(1.0).block(X, X)))
        assert K.max() <= 1.0
        assert_allclose(np.diag(K), 1.0, rtol=0, atol=tol)


@pytest.mark.parametrize("kernel,ref", CASES, ids=IDS)
def test_blocked_equals_unblocked(device, kernel, ref):
    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((101, 3)), rng.standard_normal((13, 3))
    v = rng.standard_normal((13, 2))
    Xd, Zd, vd = (to_device(a, device) for a in (X, Z, v))
    budget = 3 * 8 * 4 * (13 + 5) + 2 * 13 * 5 * 8  # a few rows per block
    blocks = list(iter_kernel_blocks(kernel, Xd, Zd, memory_budget=budget))
    assert len(blocks) > 10
    assert blocks[0][0] == 0 and blocks[-1][1] == 101
    assert all(b[1] == c[0] for b, c in zip(blocks, blocks[1:]))
    full = ref(X, Z)
    for s, e, K in blocks:
        assert_allclose(K, full[s:e], device=device, atol=1e-12 * np.abs(full).max())
    assert_allclose(kernel_matvec(kernel, Xd, Zd, vd, memory_budget=budget), full @ v,
                    device=device, shape=(101, 2), rtol=1e-10, atol=1e-10)
    assert_allclose(kernel_matvec(kernel, Xd, Zd, vd[:, 0], memory_budget=budget), full @ v[:, 0],
                    shape=(101,), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kernel,ref", CASES[:3:2], ids=IDS[:3:2])
def test_kernel_rows_compute_rows_once_into_a_store(device, kernel, ref):
    """KernelRows computes the rows asked for that it does not hold, appends them to its
    store (slots in computing order) and holds K(X, X)'s values; ``strided`` is
    ``K[::s, ::s]`` and ``full`` K; sparse rows give the same values."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 4))
    K = ref(X, X)
    R = KernelRows(kernel, to_device(X, device))
    assert R.shape == (30, 30) and R.computed == 0
    first = to_device(np.array([7, 2, 19]), device)
    assert_array_equal(R.compute(first), np.array([0, 1, 2]), device=device)
    again = to_device(np.array([2, 5, 7, 11]), device)  # (2 and 7 are held: 5 and 11 new)
    assert_array_equal(R.compute(again), np.array([1, 3, 0, 4]), device=device)
    assert R.computed == 5
    rows = host(R.store)[:5]
    assert_allclose(rows, K[[7, 2, 19, 5, 11]], atol=1e-12)
    assert_array_equal(R.slots(first), np.array([0, 1, 2]), device=device)
    assert_allclose(R.full(), K, device=device, atol=1e-12)
    assert R.computed == 30
    assert_allclose(R.strided(4).full(), K[::4, ::4], device=device, atol=1e-12)
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="2-D rows"):
        KernelRows(kernel, X[:, 0])
    # sparse rows: the same values from sparse products, never densified
    S = KernelRows(kernel, sp.csr_matrix(X))
    assert_array_equal(S.compute(np.array([7, 2, 19])), np.array([0, 1, 2]))
    assert_allclose(S.store[:3], K[[7, 2, 19]], atol=1e-12)
    assert_allclose(S.full(), K, atol=1e-12)
    assert_allclose(KernelRows(kernel, sp.csr_matrix(X)).full(), K, atol=1e-12)  # (all at once)
    assert_allclose(S.strided(4).full(), K[::4, ::4], atol=1e-12)


@pytest.mark.parametrize("kernel,ref", CASES[:3:2], ids=IDS[:3:2])
def test_symmetric_blocks_and_kernel_rows_computed_whole(device, kernel, ref, monkeypatch):
    """iter_kernel_blocks(symmetric=True) writes K(X, X) into out from the upper block
    triangle's products (each block row's product from its diagonal block on: half the values
    computed, counted through the kernel), the rest copied; KernelRows whose first rows asked
    for are SYMMETRIC_SHARE of them (and the rows SYMMETRIC_MIN_FEATURES features) computes
    every row that way, slots in row order, as does ``full()`` with no row held (whatever the
    features), which then returns the store itself."""
    from svmgpu.kernels import _blocked

    rng = np.random.default_rng(6)
    X = rng.standard_normal((101, 4))
    K = ref(X, X)
    Xd = to_device(X, device)
    counted = []
    real = type(kernel)._from_side

    def spy(self, A, side, **kw):
        counted.append(A.shape[0] * side.shape[0])
        return real(self, A, side, **kw)

    monkeypatch.setattr(type(kernel), "_from_side", spy)
    out = device.xp.zeros((101, 101), dtype=Xd.dtype, device=device.native)
    blocks = list(iter_kernel_blocks(kernel, Xd, Xd, out=out, max_rows=10, symmetric=True))
    assert [b[0] for b in blocks] == list(range(0, 101, 10))
    assert sum(counted) == sum((101 - s) * (e - s) for s, e, _ in blocks) < 0.6 * 101 ** 2
    assert_allclose(out, K, device=device, atol=1e-12)
    for s, e, B in blocks:
        assert_allclose(B, K[s:e], device=device, atol=1e-12)
    with pytest.raises(ValueError, match="symmetric blocks need"):
        list(iter_kernel_blocks(kernel, Xd, Xd, symmetric=True))
    monkeypatch.setattr(_blocked, "SYMMETRIC_MIN_FEATURES", 4)
    R = KernelRows(kernel, Xd)
    ask = to_device(np.arange(100, 49, -1), device)  # (51 of 101 rows, not in order)
    assert_array_equal(R.compute(ask), np.arange(100, 49, -1), device=device)
    assert R.computed == 101
    assert_allclose(R.full(), K, device=device, atol=1e-12)
    R = KernelRows(kernel, Xd)  # (fewer than SYMMETRIC_SHARE: the rows asked for only)
    assert_array_equal(R.compute(ask[:49]), np.arange(49), device=device)
    assert R.computed == 49
    monkeypatch.setattr(_blocked, "SYMMETRIC_MIN_FEATURES", 10 ** 9)
    counted.clear()
    X = rng.standard_normal((1200, 4))  # (blocks of 512 rows: three)
    R = KernelRows(kernel, to_device(X, device))  # (full() with no row held: every row so,
    assert R.full() is R.store and R.computed == 1200  # the store itself)
    assert sum(counted) < 0.7 * 1200 ** 2 or device.kind != "cpu"  # (elsewhere one block)
    assert_allclose(R.full(), ref(X, X), device=device, atol=1e-12)


def test_budget_too_small_and_zero():
    X = np.ones((10, 2))
    with pytest.raises(MemoryError, match="memory_budget"):
        list(iter_kernel_blocks(RBF(), X, X, memory_budget=10))
    with pytest.raises(ValueError, match="memory_budget"):
        kernel_matvec(RBF(), X, X, np.ones(10), memory_budget=0)
    with pytest.raises(ValueError, match="rows"):
        kernel_matvec(RBF(), X, X, np.ones(3))


def test_kernel_block_min_bytes_is_the_least_budget_of_the_blocks():
    """``kernel_block_min_bytes``: the blocked loop runs at that budget (one row a block, the
    values of the whole block) and refuses a byte less (the planners' check before a fit that
    recomputes its kernel columns per block)."""
    rng = np.random.default_rng(7)
    X, Z = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    least = kernel_block_min_bytes(4, 3, 8)
    blocks = [host(K).copy() for _, _, K in iter_kernel_blocks(RBF(), X, Z,
                                                               memory_budget=least)]
    assert len(blocks) == 5 and all(b.shape == (1, 4) for b in blocks)
    assert_allclose(np.vstack(blocks), RBF().block(X, Z), rtol=1e-12)
    with pytest.raises(MemoryError, match="memory_budget"):
        list(iter_kernel_blocks(RBF(), X, Z, memory_budget=least - 1))


def test_array_api_strict_path():
    rng = np.random.default_rng(4)
    X, Z = rng.standard_normal((9, 3)), rng.standard_normal((4, 3))
    Xs, Zs = array_api_strict.asarray(X), array_api_strict.asarray(Z)
    for kernel, ref in CASES:
        got = kernel.block(Xs, Zs)
        assert type(got).__module__.startswith("array_api_strict")
        assert_allclose(np.asarray(got), ref(X, Z), rtol=1e-10, atol=1e-12)
        assert_allclose(np.asarray(kernel.diag(Xs)), np.diag(ref(X, X)), rtol=1e-10)


def test_make_kernel_and_gamma_rules():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 4)) * 3
    k = make_kernel("rbf", gamma="scale", X=X)  # (moments by row blocks: to rounding)
    assert k.gamma == pytest.approx(SVC(gamma="scale").fit(X, np.arange(30) % 2)._gamma,
                                    rel=1e-13, abs=0)
    assert make_kernel("rbf", gamma="auto", X=X) == RBF(0.25)
    assert make_kernel("poly", gamma=2.0, degree=2, coef0=1.0) == Polynomial(2, 2.0, 1.0)
    assert make_kernel("linear") == Linear()
    assert make_kernel("laplacian", gamma=0.5) == Laplacian(0.5)
    assert make_kernel(RBF(3.0)) == RBF(3.0)
    assert make_kernel("rbf", gamma="scale", X=np.zeros((3, 2))) == RBF(1.0)
    assert "gamma=3.0" in repr(RBF(3.0)) and RBF(3.0).get_params() == {"gamma": 3.0}


@pytest.mark.parametrize("call,match", [
    (lambda: make_kernel("sigmoid"), "valid kernels"),
    (lambda: make_kernel("rbf", gamma="scale"), "needs the training data"),
    (lambda: make_kernel("rbf", gamma="wide", X=np.ones((2, 2))), "gamma"),
    (lambda: RBF(-1.0), "gamma"),
    (lambda: RBF(float("nan")), "gamma"),
    (lambda: Polynomial(degree=0), "degree"),
    (lambda: Polynomial(degree=2.5), "degree"),
    (lambda: Polynomial(coef0=float("inf")), "coef0"),
    (lambda: Polynomial(coef0=-1.0), "not a positive semi-definite kernel"),
])
def test_kernel_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------- against, decay and partition
@pytest.mark.parametrize("kernel,ref", CASES, ids=IDS)
def test_against_equals_evaluate(kernel, ref):
    rng = np.random.default_rng(5)
    X, Z = rng.standard_normal((30, 3)), rng.standard_normal((4, 3))
    c = kernel.center_of(Z, xp=np)
    f = kernel.against(kernel.prepare(Z, c, xp=np), xp=np)
    px = kernel.prepare(X, c, xp=np)
    assert_allclose(f(px.rows(0, 17)), ref(X[:17], Z), rtol=1e-10, atol=1e-12)
    out = np.empty((13, 4))
    assert f(px.rows(17, 30), out=out) is out
    assert_allclose(out, ref(X[17:], Z), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel,ref", CASES, ids=IDS)
def test_sparse_rows_have_no_centre(kernel, ref):
    """``center_of``: the mean of dense rows for a translation-invariant kernel, None for
    sparse rows (never centred: that would densify them) and for other kernels."""
    import scipy.sparse as sp

    Z = np.random.default_rng(6).standard_normal((4, 3))
    c = kernel.center_of(Z, xp=np)
    if kernel.translation_invariant:
        assert_allclose(c, Z.mean(axis=0))
    else:
        assert c is None
    assert kernel.center_of(sp.csr_matrix(Z), xp=np) is None


def test_exp_floor_far_apart_points():
    # exponents far below −700 are clipped to exp(−700): values stay in [0, 1e-300]
    X = np.array([[0.0, 0.0], [1.0, 0.0], [30.0, 0.0]])
    for dtype, small in (("float64", 1e-300), ("float32", 1e-37)):
        K = RBF(1e4).block(X.astype(dtype), X.astype(dtype))
        assert K.dtype == dtype
        assert_array_equal(np.diag(K), 1.0)
        off = K[~np.eye(3, dtype=bool)]
        assert np.all(off >= 0) and np.all(off <= small)


@pytest.mark.parametrize("kernel,ref", CASES[:2], ids=IDS[:2])
def test_negligible_distance_bounds_the_kernel(kernel, ref):
    rng = np.random.default_rng(6)
    for threshold in (1e-3, 1e-19):
        r = kernel.negligible_distance(threshold)
        u = rng.standard_normal((200, 4))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        # points at distance exactly r and 1.5 r from the origin (any direction)
        Z = np.vstack([r * u, 1.5 * r * u])
        assert ref(Z, np.zeros((1, 4))).max() <= threshold * (1 + 1e-9)
        # and the bound is not vacuous: at 0.9 r (along an axis) the RBF exceeds it
        if isinstance(kernel, RBF):
            assert ref(np.array([[0.9 * r, 0, 0, 0]]), np.zeros((1, 4)))[0, 0] > threshold
    assert Linear().negligible_distance(1e-3) is None
    assert Polynomial().negligible_distance(1e-3) is None
    assert kernel.negligible_distance(1.0) == 0.0
    for bad in (0.0, -1e-3, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="threshold"):
            kernel.negligible_distance(bad)


@pytest.mark.parametrize("n,d,leaf", [(1000, 2, 64), (777, 5, 50), (30, 3, 100)])
def test_row_partition_blocks_and_near(n, d, leaf):
    from svmgpu.kernels import RowPartition

    rng = np.random.default_rng(n)
    X = rng.random((n, d)) * [3.0] + [[0.0] * (d - 1) + [100.0]]
    part = RowPartition(X, leaf_size=leaf)
    perm, starts = part.perm, part.starts
    assert_array_equal(np.sort(perm), np.arange(n))
    sizes = np.diff(starts)
    assert starts[0] == 0 and starts[-1] == n and sizes.max() <= leaf and sizes.min() >= 1
    Xp = X[perm]
    for b in range(part.n_blocks):
        rows = Xp[starts[b]:starts[b + 1]]
        assert np.all(np.diff(perm[starts[b]:starts[b + 1]]) > 0)  # original order inside
        assert_array_equal(rows.min(axis=0), part.lower[b])
        assert_array_equal(rows.max(axis=0), part.upper[b])
    for r in (0.05, 0.4, 10.0):
        for j in rng.choice(n, 5, replace=False):
            for gap in (0, 10**9):
                ranges = part.near(Xp[j], r, merge_gap=gap)
                covered = np.zeros(n, bool)
                for s, e in ranges:
                    covered[s:e] = True
                within = np.linalg.norm(Xp - Xp[j], axis=1) < r
                assert np.all(covered[within]), "a row within r is outside the ranges"
                assert all(e0 < s1 for (_, e0), (s1, _) in zip(ranges, ranges[1:]))
                if gap == 10**9:
                    assert len(ranges) <= 1
    if n > 2 * leaf:  # far-apart blocks are skipped for a small r
        assert sum(e - s for s, e in part.near(Xp[0], 0.05)) < n
    with pytest.raises(ValueError, match="leaf_size"):
        RowPartition(X, leaf_size=0)
    with pytest.raises(ValueError, match="2-D"):
        RowPartition(X[:, 0])
    with pytest.raises(ValueError, match="2-D"):
        RowPartition(X[:0])


def test_gamma_scale_warning_is_right_once_and_points_at_the_caller():
    """Issue 26 item 7: the unscaled-features warning fired on a constant column (its computed
    variance is rounding, not 0), again in each of probability=True's folds, and pointed at a
    library line."""
    import warnings

    from svmgpu import UniSVC

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    X[:, 2] = 0.1  # constant: no feature scale
    y = X[:, 0] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        UniSVC(rank=20).fit(X, y)
    # a constant column's variance along NumPy's axis-0 sums is n · eps of its mean: over
    # 1,347 rows (digits standardized, a stratified split) it passed a floor of (64 eps · mean)²
    # and the warning said the scales differ by 1.7e15
    for n, value in ((1347, 0.1), (1347, -0.0208), (5000, 7.123456789)):
        Z = rng.standard_normal((n, 3))
        Z[:, 2] = value
        w = rng.uniform(0.5, 2.0, n)
        w[0] = 0.0  # (a row of weight 0 is no row: constant over the others)
        Zw = Z.copy()
        Zw[0, 2] = 5.0
        for A, weights in ((Z, None), (Zw, w)):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                UniSVC(rank=20).fit(A, A[:, 0] > 0, sample_weight=weights)
    # a few features nonzero in one row each (rare pixels) decide no distance: no warning
    R = rng.standard_normal((300, 20))
    R[:, 17:] = 0.0
    R[[3, 50, 200], [17, 18, 19]] = 1e-3  # (standard deviations 6e-5: 1.7e4 below the others)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        UniSVC(rank=20).fit(R, R[:, 0] > 0)
    X[:, 1] *= 1e9  # a real scale gap: one warning, at this line, also with probability=True
    with pytest.warns(UserWarning, match="gamma='scale' on features") as record:
        UniSVC(rank=20, probability=True).fit(X, y)
    scale = [r for r in record if "gamma='scale'" in str(r.message)]
    assert len(scale) == 1 and scale[0].filename == __file__


def _one_hot_rows(n, rng):
    """Rows like Covtype's: 3 quantitative columns in [0, 1] and a one-hot category of 6."""
    cat = np.eye(6)[rng.integers(0, 6, n)]
    return np.hstack([rng.random((n, 3)), cat])


def test_row_partition_splits_a_one_hot_column_at_its_gap():
    """A split on a 0/1 column is made at the mean, between the 0s and the 1s: every block's box
    is flat on the one-hot columns the tree split on (a median split left boxes spanning [0, 1]
    there, and pruned 51 % of Covtype's pairs where 9 % lie within reach)."""
    from svmgpu.kernels import RowPartition

    X = _one_hot_rows(4000, np.random.default_rng(0))
    part = RowPartition(X, leaf_size=64)
    flat = part.lower[:, 3:] == part.upper[:, 3:]
    assert flat.all(axis=1).mean() > 0.9  # (a leaf too small to split on all 6 may mix)
    # a lopsided mean (one huge value) falls back to the median: the blocks stay balanced
    Y = np.vstack([np.random.default_rng(1).random((999, 2)), [[1e9, 0.5]]])
    sizes = np.diff(RowPartition(Y, leaf_size=64).starts)
    assert sizes.max() <= 64 and sizes.min() >= 4


def test_row_partition_near_box_covers_every_row_within_reach():
    from svmgpu.kernels import RowPartition

    rng = np.random.default_rng(2)
    Z = _one_hot_rows(1500, rng)
    part = RowPartition(Z, leaf_size=40)
    Zp = Z[part.perm]
    for r in (0.2, 0.6, 1.5):
        for _ in range(10):
            A = _one_hot_rows(30, rng)
            ranges = part.near_box(A.min(axis=0), A.max(axis=0), r, merge_gap=0)
            covered = np.zeros(len(Z), bool)
            for s, e in ranges:
                covered[s:e] = True
            D = np.linalg.norm(A[:, None, :] - Zp[None, :, :], axis=2)
            assert np.all(covered[(D < r).any(axis=0)]), "a row within r of the box is skipped"
    one = _one_hot_rows(1, rng)  # a single point against a small reach: most rows skipped
    assert sum(e - s for s, e in part.near_box(one[0], one[0], 0.3)) < 0.5 * len(Z)


class _Counting(RBF):
    """RBF that counts the kernel values it evaluates."""

    def __init__(self, gamma):
        super().__init__(gamma)
        self.values = 0

    def _from_side(self, A, side, *, xp, out):  # (every dense RBF block goes through it)
        self.values += A.shape[0] * side.shape[0]
        return RBF._from_side(self, A, side, xp=xp, out=out)


@pytest.mark.parametrize("kernel_cls,gamma", [(_Counting, 32.0), (Laplacian, 40.0)])
def test_pruned_kernel_matvec_matches_the_full_product(monkeypatch, kernel_cls, gamma):
    """kernel_matvec(prune=True) equals the full product within negligible_level · Σ|v| per row
    (plus rounding) while evaluating a fraction of the kernel values; where pruning does not
    pay or cannot run (small products, sparse X, a kernel without reach, a budget that holds no
    reordered copies) it is the plain product."""
    import scipy.sparse as sp

    from svmgpu.kernels import _blocked, negligible_level
    from svmgpu.kernels._partition import pruned_matvec

    rng = np.random.default_rng(3)
    X, Z = _one_hot_rows(2000, rng), _one_hot_rows(1500, rng)
    V = rng.standard_normal((1500, 3))
    kernel = kernel_cls(gamma)
    full = (rbf_kernel if kernel_cls is _Counting else laplacian_kernel)(X, Z, gamma=gamma) @ V
    # the skipped values, and the rounding of a sum of 1,500 terms in another order
    tol = (negligible_level(np.float64) + 1e-14) * np.abs(V).sum(axis=0)
    monkeypatch.setattr(_blocked, "PRUNE_MIN_VALUES", 0)
    got = kernel_matvec(kernel, X, Z, V, prune=True)
    assert np.all(np.abs(got - full) <= tol)
    if kernel_cls is _Counting:  # (a category is √2 from another, beyond the reach 1.16)
        assert 0 < kernel.values < 0.5 * X.shape[0] * Z.shape[0]
    assert_allclose(kernel_matvec(kernel, X, Z, V[:, 1], prune=True), full[:, 1], rtol=1e-12,
                    atol=float(tol[1]))
    if kernel_cls is _Counting:
        # a block cap splits the ranges, same values
        r = kernel.negligible_distance(negligible_level(np.float64))
        assert_allclose(pruned_matvec(kernel, X, Z, V, r, max_cols=7), got, rtol=1e-12,
                        atol=1e-13)
        kernel.values = 0  # a budget with no room for the reordered copies: the plain product
        assert_allclose(kernel_matvec(kernel, X, Z, V, prune=True, memory_budget=500_000), full,
                        rtol=1e-10, atol=1e-12)
        assert kernel.values == X.shape[0] * Z.shape[0]
        assert_allclose(kernel_matvec(kernel, sp.csr_matrix(X), Z, V, prune=True), full,
                        rtol=1e-10, atol=1e-12)  # sparse X: the plain sparse product
        # a kernel whose reach is shorter than Z's extent but covers most of it: a sample of
        # X reaches more than PRUNE_MAX_REACH of Z, so the plain product
        G, H = rng.standard_normal((2000, 20)), rng.standard_normal((1500, 20))
        wide = _Counting(0.5)
        assert _blocked.RowPartition.worthwhile(H, wide.negligible_distance(1e-19))
        assert_allclose(kernel_matvec(wide, G, H, V, prune=True), rbf_kernel(G, H, gamma=0.5) @ V,
                        rtol=1e-10, atol=1e-12)
        assert wide.values == G.shape[0] * H.shape[0]
        kernel.values = 0
        monkeypatch.setattr(_blocked, "PRUNE_MIN_VALUES", 1 << 24)  # too small to pay
        kernel_matvec(kernel, X, Z, V, prune=True)
        assert kernel.values == X.shape[0] * Z.shape[0]
    assert_allclose(kernel_matvec(Linear(), X, Z, V, prune=True), X @ Z.T @ V, rtol=1e-12)


def _three_cores(monkeypatch):
    """Every kernel product threaded on 3 cores (THREADED_MATVEC_VALUES = 1); returns the
    list that collects the rows of each call of the blocked loop (iter_kernel_blocks)."""
    import os

    from svmgpu.kernels import _blocked

    monkeypatch.setattr(_blocked, "THREADED_MATVEC_VALUES", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    parts, real = [], _blocked.iter_kernel_blocks

    def spy(kernel, X, Z, **kw):
        parts.append(X.shape[0])
        return real(kernel, X, Z, **kw)

    monkeypatch.setattr(_blocked, "iter_kernel_blocks", spy)
    return parts


def test_kernel_matvec_splits_large_products_between_the_cores(monkeypatch):
    """From THREADED_MATVEC_VALUES kernel values kernel_matvec (NumPy) computes one part of the
    rows per core, each in its own thread, Z's side prepared once: the product of the whole,
    for a vector and a matrix, dense and sparse rows, a row count that does not divide; dense
    rows of more than THREADED_MATVEC_MAX_FEATURES features in one part."""
    import threading

    import scipy.sparse as sp

    from svmgpu.kernels import _blocked

    class Threads(RBF):
        def _from_side(self, A, side, *, xp, out):
            self.seen.add(threading.get_ident())
            return RBF._from_side(self, A, side, xp=xp, out=out)

    rng = np.random.default_rng(9)
    X, Z, V = rng.standard_normal((1001, 5)), rng.standard_normal((300, 5)), \
        rng.standard_normal((300, 3))
    full = rbf_kernel(X, Z, gamma=0.3) @ V
    parts = _three_cores(monkeypatch)  # (the rows of each block loop's call)
    kernel = Threads(0.3)
    kernel.seen = set()
    assert_allclose(kernel_matvec(kernel, X, Z, V), full, rtol=1e-12, atol=1e-12)
    assert sorted(parts) == [333, 334, 334]  # (a part per core, in a thread pool)
    assert kernel.seen and threading.get_ident() not in kernel.seen
    assert_allclose(kernel_matvec(kernel, X, Z, V[:, 0]), full[:, 0], rtol=1e-12, atol=1e-12)
    assert_allclose(kernel_matvec(RBF(0.3), sp.csr_matrix(X), Z, V), full, rtol=1e-10,
                    atol=1e-12)
    # (dense rows of more features than THREADED_MATVEC_MAX_FEATURES: one part, this thread;
    # sparse rows of as many still split)
    monkeypatch.setattr(_blocked, "THREADED_MATVEC_MAX_FEATURES", X.shape[1] - 1)
    kernel.seen, parts[:] = set(), []
    assert_allclose(kernel_matvec(kernel, X, Z, V), full, rtol=1e-12, atol=1e-12)
    assert kernel.seen == {threading.get_ident()} and parts == [X.shape[0]]
    parts[:] = []
    assert_allclose(kernel_matvec(kernel, sp.csr_matrix(X), Z, V), full, rtol=1e-10,
                    atol=1e-12)
    assert sorted(parts) == [333, 334, 334]
    monkeypatch.setattr(_blocked, "THREADED_MATVEC_MAX_FEATURES", X.shape[1])
    monkeypatch.setattr(_blocked, "THREADED_MATVEC_VALUES", X.shape[0] * Z.shape[0] + 1)
    kernel.seen = set()
    assert_allclose(kernel_matvec(kernel, X, Z, V), full, rtol=1e-12, atol=1e-12)
    assert kernel.seen == {threading.get_ident()}  # (below the threshold: this thread)


def test_kernel_features_split_large_blocks_between_the_cores(monkeypatch):
    """kernel_columns (float64 rows into float32 columns, beside an intercept column) and the
    Nyström features run their blocks in one thread per core from THREADED_MATVEC_VALUES
    kernel values (map_kernel_blocks): every row written, the same values as in one part."""
    import threading

    from svmgpu.lowrank import nystrom

    seen = set()

    class Threads(RBF):
        def _from_side_narrow(self, A, side, *, xp, out):
            seen.add(threading.get_ident())
            return RBF._from_side_narrow(self, A, side, xp=xp, out=out)

        def _from_side(self, A, side, *, xp, out):
            seen.add(threading.get_ident())
            return RBF._from_side(self, A, side, xp=xp, out=out)

    rng = np.random.default_rng(3)
    X = rng.standard_normal((1001, 4))
    kernel = Threads(0.5)
    one = kernel_columns(kernel, X, X[:40], intercept=True, dtype=np.float32)
    f_one = nystrom(X, kernel, 40, random_state=0).P
    assert seen == {threading.get_ident()}
    parts = _three_cores(monkeypatch)  # (the rows of each block loop's call)
    seen.clear()
    split = kernel_columns(kernel, X, X[:40], intercept=True, dtype=np.float32)
    assert sorted(parts) == [333, 334, 334]
    assert seen and threading.get_ident() not in seen
    assert split.dtype == np.float32 and np.all(split[:, 40] == 1.0)
    assert np.abs(split - one).max() <= 2.0**-23
    assert_allclose(split[:, :40], rbf_kernel(X, X[:40], gamma=0.5), rtol=0, atol=2e-7)
    parts[:] = []
    f_split = nystrom(X, kernel, 40, random_state=0).P
    assert sorted(parts) == [333, 334, 334]
    assert_allclose(f_split, f_one, rtol=1e-10, atol=1e-12)


def test_kernel_rows_split_large_row_sets_between_the_cores(monkeypatch):
    """KernelRows computes the rows asked for in one part per core from THREADED_MATVEC_VALUES
    kernel values (map_kernel_blocks, X's side prepared once): each row in its slot, as in one
    part and as scikit-learn's; a few rows later in one part, sparse rows split too."""
    import threading

    import scipy.sparse as sp

    seen = set()

    class Threads(RBF):
        def _from_side(self, A, side, *, xp, out):
            seen.add(threading.get_ident())
            return RBF._from_side(self, A, side, xp=xp, out=out)

    rng = np.random.default_rng(4)
    X = rng.standard_normal((700, 6))
    K = rbf_kernel(X, gamma=0.4)
    rows = rng.permutation(700)[:301]
    R = KernelRows(Threads(0.4), X)
    at = R.compute(rows)
    assert seen == {threading.get_ident()}  # (below the threshold: one part, this thread)
    one = R.store[at].copy()
    parts = _three_cores(monkeypatch)
    seen.clear()
    R = KernelRows(Threads(0.4), X)
    at = R.compute(rows)
    assert sorted(parts) == [100, 100, 101]
    assert seen and threading.get_ident() not in seen
    assert_allclose(R.store[at], one, rtol=0, atol=1e-14)  # (blocks of other shapes)
    assert_allclose(R.store[at], K[rows], rtol=1e-12, atol=1e-12)
    more = np.setdiff1d(np.arange(700), rows)[:2]  # (fewer rows than two a core: one part)
    parts[:] = []
    assert_allclose(R.store[R.compute(more)], K[more], rtol=1e-12, atol=1e-12)
    assert parts == [2]
    S = KernelRows(RBF(0.4), sp.csr_matrix(X))
    parts[:] = []
    assert_allclose(S.store[S.compute(rows)], K[rows], rtol=1e-10, atol=1e-12)
    assert sorted(parts) == [100, 100, 101]


def test_matmul_on_one_blas_thread_releases_the_gil(monkeypatch):
    """Under one BLAS thread (serial_blas, a map_threads task) backend.matmul multiplies by
    np.matmul, which releases the GIL, never by SciPy's f2py BLAS, which holds it; outside,
    by SciPy's. The same products either way (vector, matrix, into a strided out)."""
    from svmgpu.backend import _ops, serial_blas

    calls = []
    real = _ops._scipy_matmul

    def spy(a, b, out):
        calls.append(a.shape)
        return real(a, b, out)

    monkeypatch.setattr(_ops, "_scipy_matmul", spy)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((30, 7)), rng.standard_normal((7, 5))
    plain = [matmul(A, B, xp=np), matmul(A, B[:, 0], xp=np)]
    assert len(calls) == 2
    with serial_blas(xp=np):
        out = np.zeros((30, 6))
        serial = [matmul(A, B, xp=np), matmul(A, B[:, 0], xp=np),
                  matmul(A, B, xp=np, out=out[:, 1:])]
    assert len(calls) == 2
    assert_allclose(serial[0], plain[0], rtol=1e-13)
    assert_allclose(serial[1], plain[1], rtol=1e-13)
    assert np.shares_memory(out, serial[2])
    assert_allclose(out[:, 1:], A @ B, rtol=1e-13)


def test_pruned_kernel_matvec_on_array_api_strict_is_the_plain_product(monkeypatch):
    """prune=True on another namespace (device1, where a host round trip raises) is the plain
    blocked product, on that device."""
    from svmgpu.kernels import _blocked
    from svmgpu.testing import backend_device

    monkeypatch.setattr(_blocked, "PRUNE_MIN_VALUES", 0)
    rng = np.random.default_rng(4)
    X, Z, v = _one_hot_rows(300, rng), _one_hot_rows(200, rng), rng.standard_normal(200)
    dev = backend_device("strict-device1")
    got = kernel_matvec(RBF(32.0), *(to_device(a, dev) for a in (X, Z, v)), prune=True)
    assert got.device == dev.native
    assert_allclose(host(got), rbf_kernel(X, Z, gamma=32.0) @ v, rtol=1e-10, atol=1e-12)


def test_distance_range_problem_bounds():
    """The squared distances of d-dimensional rows reaching ``amax`` overflow past
    sqrt(max / 4d) and underflow below 1e3 · sqrt(smallest normal), per dtype; 0 (rows at
    the origin) and ordinary scales are fine."""
    from svmgpu.kernels import distance_range_problem

    f64, f32 = np.finfo(np.float64), np.finfo(np.float32)
    for amax, finfo, want in [(0.0, f64, None), (1.0, f64, None), (1e150, f64, None),
                              (1e160, f64, "overflow"), (np.inf, f64, "overflow"),
                              (1e-160, f64, "underflow"), (1e-150, f64, None),
                              (1e18, f32, None), (1e19, f32, "overflow"),
                              (1e-17, f32, "underflow"), (1e-15, f32, None)]:
        assert distance_range_problem(amax, 3, finfo) == want, (amax, finfo.dtype)
    bound = np.sqrt(f32.max / 12.0)
    assert distance_range_problem(bound * 0.99, 3, f32) is None
    assert distance_range_problem(bound * 1.01, 3, f32) == "overflow"


def test_feature_dimension_bounds_the_rank_of_kernel_matrices():
    """``Kernel.feature_dimension``: 'linear' d, 'poly' the monomials (degree at most p with
    coef0 != 0, exactly p with coef0 = 0), reached by the rank of a kernel matrix of many
    random rows; None where the feature space is infinite."""
    import math

    from svmgpu.kernels import RBF, Linear, Polynomial

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    for kernel, dim in [(Linear(), 4), (Polynomial(3, 0.5, 0.0), math.comb(6, 3)),
                        (Polynomial(2, 0.5, 1.0), math.comb(6, 2))]:
        assert kernel.feature_dimension(4) == dim
        assert np.linalg.matrix_rank(np.asarray(kernel.block(X, X))) == dim
    assert RBF(1.0).feature_dimension(4) is None
