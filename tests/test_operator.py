"""FeatureOperator: the one m × r feature matrix of every solver, in memory or recomputed per
row block; both forms must give the same products and the same solutions (dense references)."""

import numpy as np
import pytest

from svmgpu.backend import to_device
from svmgpu.kernels import RBF, Polynomial, kernel_columns
from svmgpu.losses import get_loss
from svmgpu.lowrank import FeatureOperator, nystrom, reduced_kernel_features
from svmgpu.solvers.closed_form import least_squares
from svmgpu.solvers.path import l2svm_path
from svmgpu.solvers.reduced import newton_reduced
from svmgpu.solvers.unisvm import unisvm, unisvm_newton
from svmgpu.testing import assert_allclose, host, namespace_name

#: A budget that forces many row blocks (a few dozen rows each) for 600 × 25 features.
SMALL = 40 * 25 * 24 + 3 * 25 * 25 * 8 + 64


def _data(m=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (m, d))
    y = np.where(np.sin(3 * X[:, 0]) + X[:, 1] > 0, 1.0, -1.0)
    return X, y


def _pair(device, *, intercept=False):
    """The same reduced-kernel features held in memory and recomputed per block."""
    X, y = _data()
    Xd = to_device(X, device)
    Z = Xd[:25, ...]
    kern = RBF(2.0)
    mem = reduced_kernel_features(Xd, kern, Z, intercept=intercept, memory_budget=SMALL)
    rec = reduced_kernel_features(Xd, kern, Z, intercept=intercept, in_memory=False,
                                  memory_budget=SMALL)
    dense = kernel_columns(kern, X, X[:25], intercept=intercept)
    return mem, rec, dense, X, y


@pytest.mark.parametrize("chunk", [7, 4096])
def test_float32_rmatvec_sums_chunks_in_float64(monkeypatch, device, chunk):
    """``Pᵀu`` of float32 features is a float32 product per chunk of _PRODUCT_ROWS rows, the
    chunks summed in float64 (no float64 copy of P): within float32's rounding of the float64
    product of the same float32 entries, over all rows, gathered rows and k columns; chunks of
    7 rows (a partial last chunk, every backend's branch) and of 4,096 (one chunk)."""
    from svmgpu.backend import _ops

    monkeypatch.setattr(_ops, "_PRODUCT_ROWS", chunk)
    rng = np.random.default_rng(3)
    P = rng.standard_normal((600, 26)).astype(np.float32)
    u = rng.standard_normal((600, 3))
    rows = np.sort(rng.choice(600, 170, replace=False))
    op = FeatureOperator(to_device(P, device), memory_budget=SMALL)
    P64 = P.astype(np.float64)
    scale = np.abs(P64).T @ np.abs(u)  # (the sums' magnitude: float32's error is relative to it)
    got = host(op.rmatvec(to_device(u, device)))
    assert got.dtype == np.float64 and got.shape == (26, 3)
    assert np.all(np.abs(got - P64.T @ u) <= 1e-6 * scale)
    assert np.any(got != P64.T @ u)  # (float32 products: not the float64 one)
    one = host(op.rmatvec(to_device(u[:, 1], device), rows=to_device(rows, device)))
    assert one.shape == (26,)
    assert np.all(np.abs(one - P64[rows].T @ u[rows, 1]) <= 1e-6 * scale[:, 1])
    assert_allclose(op.rmatvec(to_device(u[:0, 0], device), rows=to_device(rows[:0], device)),
                    np.zeros(26), shape=(26,), dtype="float64")


def test_products_match_dense_reference(device):
    mem, rec, P, X, _ = _pair(device, intercept=True)
    assert mem.in_memory and not rec.in_memory
    assert mem.shape == rec.shape == P.shape == (600, 26)
    rng = np.random.default_rng(1)
    v, u, w = rng.standard_normal(26), rng.standard_normal((600, 2)), rng.uniform(-1, 2, 600)
    rows = np.sort(rng.choice(600, 170, replace=False))
    ns = namespace_name(device)
    for op in (mem, rec):
        assert_allclose(op.matvec(to_device(v, device)), P @ v, namespace=ns, device=device,
                        dtype="float64", shape=(600,))
        assert_allclose(op.rmatvec(to_device(u, device)), P.T @ u, shape=(26, 2), dtype="float64")
        assert_allclose(op.rmatvec(to_device(u[:, 0], device), rows=to_device(rows, device)),
                        P[rows].T @ u[rows, 0], shape=(26,))
        V = rng.standard_normal((26, 3))  # (the rows of an index array: many small blocks)
        assert_allclose(op.matvec(to_device(V, device), rows=to_device(rows, device)),
                        P[rows] @ V, namespace=ns, device=device, dtype="float64",
                        shape=(170, 3))
        assert_allclose(op.matvec(to_device(v, device), rows=to_device(rows[::-1], device)),
                        P[rows[::-1]] @ v, shape=(170,))
        assert_allclose(op.gram(), P.T @ P, dtype="float64", shape=(26, 26))
        assert_allclose(op.gram(to_device(w, device)), P.T @ (w[:, None] * P), rtol=1e-10)
        assert_allclose(op.gram(to_device(np.abs(w), device), rows=to_device(rows, device),
                                nonnegative=True),
                        P[rows].T @ (np.abs(w)[rows, None] * P[rows]), rtol=1e-10)
        sub = op.take(to_device(rows, device))
        assert sub.shape == (170, 26) and sub.in_memory == op.in_memory
        assert_allclose(sub.to_array(), P[rows])
        cols = np.array([3, 0, 17, 25])  # (a block: rows and these columns only)
        block = op.take(to_device(rows, device), to_device(cols, device))
        assert block.shape == (170, 4) and block.in_memory == op.in_memory
        assert_allclose(block.to_array(), P[np.ix_(rows, cols)])
        assert_allclose(block.matvec(to_device(v[:4], device)), P[np.ix_(rows, cols)] @ v[:4])
        Xn = X[:7] + 0.1
        assert_allclose(op.transform(to_device(Xn, device)),
                        kernel_columns(RBF(2.0), Xn, X[:25], intercept=True))
        assert_allclose(block.transform(to_device(Xn, device)),
                        kernel_columns(RBF(2.0), Xn, X[:25], intercept=True)[:, cols])
    assert "in memory" in repr(mem) and "recomputed per block" in repr(rec)
    assert mem.nbytes == rec.nbytes == 600 * 26 * 8


def test_known_columns_are_copied_and_the_rest_computed(device):
    """``known`` (the columns of a nested smaller set of landmarks) gives the features of the
    whole set; it must have m rows and at most r columns, and is refused for features
    recomputed per block."""
    X, _ = _data()
    Xd = to_device(X, device)
    kern = RBF(2.0)
    small = reduced_kernel_features(Xd, kern, Xd[:10, ...], intercept=True)
    grown = reduced_kernel_features(Xd, kern, Xd[:25, ...], intercept=True,
                                    known=small.to_array()[:, :10])
    assert_allclose(grown.to_array(), kernel_columns(kern, X, X[:25], intercept=True),
                    rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="known columns must have shape"):
        kernel_columns(kern, Xd, Xd[:5, ...], known=small.to_array()[:, :10])
    with pytest.raises(ValueError, match="known columns must have shape"):
        kernel_columns(kern, Xd, Xd[:25, ...], known=small.to_array()[:50, :10])
    with pytest.raises(ValueError, match="held in memory only"):
        reduced_kernel_features(Xd, kern, Xd[:25, ...], in_memory=False,
                                known=small.to_array()[:, :10])
    # into ``out`` whose first ``filled`` columns hold them already: nothing copied
    P26 = kernel_columns(kern, X, X[:25], intercept=True)
    buf = np.full((600, 26), np.nan)
    buf[:, :10] = P26[:, :10]
    out = to_device(buf, device)
    grown2 = reduced_kernel_features(Xd, kern, Xd[:25, ...], intercept=True, out=out, filled=10)
    assert_allclose(grown2.to_array(), P26, rtol=1e-12, atol=1e-15)
    if device.kind == "cpu" and namespace_name(device) == "numpy":
        assert np.shares_memory(grown2.to_array(), out)
    for bad, match in (({"filled": 3}, "pass out"), ({"out": out[:, :20]}, "out must have"),
                       ({"out": out, "filled": 3, "known": small.to_array()[:, :3]},
                        "not both"), ({"out": out, "filled": 26}, "exceed the landmarks")):
        with pytest.raises(ValueError, match=match):
            kernel_columns(kern, Xd, Xd[:25, ...], intercept=True, **bad)
    with pytest.raises(ValueError, match="held in memory only"):
        reduced_kernel_features(Xd, kern, Xd[:25, ...], in_memory=False, out=out)


def test_nystrom_features_recomputed_equal_held(device):
    X, _ = _data(400)
    f = nystrom(to_device(X, device), "rbf", 30, gamma=1.5, random_state=0)
    held = f.features(memory_budget=SMALL)
    X_train = to_device(X, device)
    rec = f.without_features().features(X_train, memory_budget=SMALL)
    assert held.in_memory and not rec.in_memory
    P = host(f.P)
    assert_allclose(rec.to_array(), P, rtol=1e-9, atol=1e-9)
    v = np.linspace(-1, 1, f.rank)
    assert_allclose(rec.matvec(to_device(v, device)), P @ v, rtol=1e-9, atol=1e-9)
    assert_allclose(rec.gram(), P.T @ P, rtol=1e-9, atol=1e-9)
    assert_allclose(held.transform(to_device(X[:5], device)), P[:5], rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="pass the training X"):
        f.without_features().features()


def test_solvers_accept_recomputed_features(device):
    """Every low-rank solver gives the same solution from recomputed rows as from held rows."""
    mem, rec, P, _, y = _pair(device)
    xp = device.xp
    yd = to_device(y, device)
    sq = get_loss("squared_hinge")
    runs = [
        lambda op: newton_reduced(op, yd, loss="squared_hinge", C=5.0, xp=xp).coef,
        lambda op: newton_reduced(op, yd, loss="logistic", C=5.0, xp=xp).coef,
        lambda op: unisvm_newton(yd, sq, C=5.0, P=op, tol=1e-10, xp=xp).coef,
        lambda op: unisvm(yd, get_loss("truncated_squared_hinge"), C=5.0, P=op, tol=1e-9,
                          xp=xp).coef,
        lambda op: least_squares(yd, C=5.0, P=op, fit_intercept=True, xp=xp).coef,
        lambda op: l2svm_path(op, yd, lambda_min=1e-2, xp=xp).coef,
    ]
    for run in runs:
        a, b = run(mem), run(rec)
        assert_allclose(b, host(a), namespace=namespace_name(device), device=device,
                        rtol=1e-8, atol=1e-10)
    # and the reference: the least-squares solution of the dense problem (w/o offset)
    w = least_squares(yd, C=5.0, P=rec, xp=xp).coef
    ref = np.linalg.solve(P.T @ P + np.eye(25) / 10.0, P.T @ y)
    assert_allclose(w, ref, rtol=1e-8, atol=1e-10)


def test_bad_construction():
    X, _ = _data(10)
    with pytest.raises(ValueError, match="exactly one of P"):
        FeatureOperator()
    with pytest.raises(ValueError, match="need feature_map and rank"):
        FeatureOperator(X=X)
    with pytest.raises(ValueError, match="must be 2-D"):
        FeatureOperator(X[:, 0])
    with pytest.raises(ValueError, match="without its feature map"):
        FeatureOperator(X).transform(X)
    with pytest.raises(MemoryError, match="memory budget"):
        list(FeatureOperator(X, memory_budget=8).blocks())


def test_every_row_source_and_row_object_fulfils_the_declared_contract():
    # the solvers read P.distributed and build their rows with P.rows(cls, ...): no hasattr
    from svmgpu.lowrank import AdditiveRows, FeatureRows, RowSource, as_operator, combine_rules
    from svmgpu.solvers.newton import NewtonRows
    from svmgpu.solvers.unisvm import DCARows

    X, y = _data(50)
    P = FeatureOperator(X)
    assert isinstance(P, RowSource) and isinstance(P, FeatureRows) and not P.distributed
    assert not isinstance(X, RowSource) and as_operator(P) is P
    assert P.reduce(lambda F, v: F.rmatvec(v), y).shape == (3,)
    rows = P.rows(NewtonRows, y, None, task="classification")
    dca = P.rows(DCARows, y, None, loss=get_loss("squared_hinge"), task="classification", A=1.0)
    for r in (rows, dca):
        assert isinstance(r, AdditiveRows) and not r.distributed and r.P is P
    newton = combine_rules(NewtonRows)
    assert newton["examine"] == ("sum", ()) and newton["active_rows"][0] == "concat"
    assert newton["curvature"] == ("sum", ("n_changed", "n_active"))
    assert newton["strided"] == ("client", ()) and newton["margins"] == ("stay", ())
    assert "correction" not in combine_rules(DCARows)  # m-long: no distributed form


def test_kernel_columns_stored_in_float32(device):
    """``kernel_columns(..., dtype=float32)`` on float64 rows, over several row blocks, with
    the intercept column: RBF's exponent in float64 and its ``exp`` in float32, every value
    within one float32 unit of 1 (2⁻²³) of the float64 column's and, relative, within
    (a + 3)·2⁻²⁴ of a value e⁻ᵃ down to e⁻¹⁰; a polynomial kernel's values computed in
    float64 and rounded once (the float64 columns cast); ``out`` keeps X's dtype (a dtype
    beside it is refused)."""
    X, _ = _data()
    Xd = to_device(X, device)
    xp = device.xp
    for kern in (RBF(2.0), Polynomial(degree=3, gamma=0.5, coef0=1.0)):
        F64 = host(kernel_columns(kern, Xd, Xd[:25, ...], intercept=True, memory_budget=SMALL))
        F = host(kernel_columns(kern, Xd, Xd[:25, ...], intercept=True, memory_budget=SMALL,
                                dtype=xp.float32))
        assert F.dtype == np.float32 and F.shape == (600, 26)
        if kern.name == "rbf":
            assert np.abs(F - F64).max() <= 2.0**-23
            big = F64 >= np.exp(-10.0)
            assert 0.1 < big.mean() < 1  # (the relative bound checks a range of values)
            a = -np.log(F64[big])  # (value e⁻ᵃ: the exponent's rounding a·2⁻²⁴ relative)
            assert (np.abs(F - F64)[big] <= (a + 3.0) * 2.0**-24 * F64[big]).all()
            assert not np.array_equal(F, F64.astype(np.float32))  # (not rounded once)
        else:
            np.testing.assert_array_equal(F, F64.astype(np.float32))
    with pytest.raises(ValueError, match="dtype"):
        kernel_columns(kern, Xd, Xd[:25, ...], out=xp.empty((600, 25), dtype=xp.float64,
                                                            device=device.native_device),
                       dtype=xp.float32)
