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

from svmgpu.backend import to_device
from svmgpu.kernels import (
    RBF,
    Laplacian,
    Linear,
    Polynomial,
    iter_kernel_blocks,
    kernel_matvec,
    make_kernel,
)
from svmgpu.testing import assert_allclose

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
        K = np.asarray(to_device(RBF(1.0).block(X, X), "cpu"))
        assert K.max() <= 1.0
        np.testing.assert_allclose(np.diag(K), 1.0, rtol=0, atol=tol)


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


def test_budget_too_small_and_zero():
    X = np.ones((10, 2))
    with pytest.raises(MemoryError, match="memory_budget"):
        list(iter_kernel_blocks(RBF(), X, X, memory_budget=10))
    with pytest.raises(ValueError, match="memory_budget"):
        kernel_matvec(RBF(), X, X, np.ones(10), memory_budget=0)
    with pytest.raises(ValueError, match="rows"):
        kernel_matvec(RBF(), X, X, np.ones(3))


def test_array_api_strict_path():
    rng = np.random.default_rng(4)
    X, Z = rng.standard_normal((9, 3)), rng.standard_normal((4, 3))
    Xs, Zs = array_api_strict.asarray(X), array_api_strict.asarray(Z)
    for kernel, ref in CASES:
        got = kernel.block(Xs, Zs)
        assert type(got).__module__.startswith("array_api_strict")
        np.testing.assert_allclose(np.asarray(got), ref(X, Z), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(kernel.diag(Xs)), np.diag(ref(X, X)), rtol=1e-10)


def test_make_kernel_and_gamma_rules():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 4)) * 3
    k = make_kernel("rbf", gamma="scale", X=X)
    assert k == RBF(SVC(gamma="scale").fit(X, np.arange(30) % 2)._gamma)
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
])
def test_kernel_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
