import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from svmgpu.backend import to_device
from svmgpu.kernels import RBF, Laplacian, Polynomial
from svmgpu.lowrank import FeatureOperator, nystrom, pivoted_cholesky
from svmgpu.testing import assert_allclose, host


def _data(m=300, d=3, seed=0):
    return np.random.default_rng(seed).random((m, d))


def _dense_pivoted_cholesky(K, max_rank, tol):
    """Plain NumPy transcription of greedy pivoted Cholesky (the reference)."""
    m = K.shape[0]
    d = np.diag(K).copy()
    P = np.zeros((m, 0))
    piv = []
    while len(piv) < max_rank and d.sum() > tol * m:
        j = int(np.argmax(d))
        col = (K[:, j] - P @ P[j]) / np.sqrt(d[j])
        P = np.column_stack([P, col])
        d = np.maximum(d - col**2, 0)
        d[j] = 0
        piv.append(j)
    return P, piv


@pytest.mark.parametrize("method", ["nystrom", "pivoted_cholesky"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_reproduces_visited_rows_and_transform(device, method, dtype):
    X = _data()
    K = rbf_kernel(X, gamma=2.0)
    Xd = to_device(X.astype(dtype), device)
    if method == "nystrom":
        f = nystrom(Xd, "rbf", 60, gamma=2.0, random_state=0)
    else:
        f = pivoted_cholesky(Xd, "rbf", 60, tol=1e-8, gamma=2.0)
    P = host(f.P).astype(np.float64)
    B = host(f.landmarks)
    assert f.rank == P.shape[1] and P.shape[0] == 300 and len(set(B.tolist())) == f.rank
    tol = 1e-10 if dtype == "float64" else 2e-5
    assert_allclose(f.P, P, device=device, dtype=dtype)
    assert_allclose(P[B] @ P.T, K[B], atol=tol)            # P_B Pᵀ = K_B
    assert_allclose(np.triu(P[B], 1), 0, atol=tol)           # P_B lower triangular
    # features of the training points are the rows of P; of new points p(x)ᵀp(z) ≈ k(x, z)
    assert_allclose(f.transform(Xd[:25, ...]), P[:25], device=device, dtype=dtype, atol=10 * tol,
                    rtol=10 * tol)
    Xn = _data(40, seed=9)
    F = host(f.transform(to_device(Xn.astype(dtype), device))).astype(np.float64)
    assert_allclose(F @ F[:, :].T, rbf_kernel(Xn, gamma=2.0), atol=0.05)
    # exact on landmarks: p(x_b)ᵀ p(z) = k(x_b, z)
    assert_allclose(P[B] @ F.T, rbf_kernel(X[B], Xn, gamma=2.0), atol=10 * tol)
    # the recorded residual trace is the true one
    assert f.trace_residual == pytest.approx(np.trace(K) - np.sum(P * P), abs=1e-3 if
                                             dtype == "float32" else 1e-8)


def test_full_rank_is_exact(device):
    X = _data(50)
    K = rbf_kernel(X, gamma=1.0)
    f = nystrom(to_device(X, device), RBF(1.0), 50, random_state=1)
    P = host(f.P)
    # landmarks that are numerically dependent are dropped; K is still reproduced
    assert_allclose(P @ P.T, K, atol=1e-6)
    F = host(f.transform(to_device(_data(7, seed=3), device)))
    assert_allclose(F @ P.T, rbf_kernel(_data(7, seed=3), X, gamma=1.0), atol=1e-6)


def test_pivoted_cholesky_matches_dense_transcription_and_trace_rule():
    X = _data(200, 2, seed=4)
    K = rbf_kernel(X, gamma=5.0)
    for tol, max_rank in [(1e-3, 200), (1e-12, 25)]:
        Pref, piv = _dense_pivoted_cholesky(K, max_rank, tol)
        f = pivoted_cholesky(X, RBF(5.0), max_rank, tol=tol)
        assert f.landmarks.tolist() == piv
        assert_allclose(host(f.P), Pref, atol=1e-10)
        assert f.trace_residual <= tol * 200 or f.rank == max_rank
        if f.rank < max_rank:  # stopped by the trace rule, not earlier
            assert np.trace(K - Pref[:, :-1] @ Pref[:, :-1].T) > tol * 200


def test_duplicates_are_dropped_not_jittered():
    X = np.repeat(_data(20, seed=5), 3, axis=0)  # every point three times
    f = nystrom(X, RBF(3.0), 50, random_state=0)
    assert f.rank <= 20
    P = host(f.P)
    K = rbf_kernel(X, gamma=3.0)
    assert_allclose(P[f.landmarks] @ P.T, K[f.landmarks], atol=1e-9)
    g = pivoted_cholesky(X, RBF(3.0), 60, tol=0)
    assert g.rank <= 20


@pytest.mark.parametrize("kernel", [Laplacian(1.0), Polynomial(2, 1.0, 1.0)])
def test_other_kernels(kernel):
    X = _data(120, 2, seed=6)
    K = kernel.block(X, X)
    for f in (nystrom(X, kernel, 30, random_state=0), pivoted_cholesky(X, kernel, 30, tol=0)):
        P = host(f.P)
        assert_allclose(P[f.landmarks] @ P.T, K[f.landmarks], atol=1e-8)


def test_blocked_features_equal_one_block(device):
    X = to_device(_data(500, seed=7), device)
    a = nystrom(X, RBF(2.0), 40, random_state=3, memory_budget=20_000)  # dozens of blocks
    b = nystrom(X, RBF(2.0), 40, random_state=3, memory_budget="1GB")
    assert_allclose(a.P, host(b.P), device=device, rtol=1e-12, atol=1e-12)
    assert_allclose(a.transform(X, memory_budget=20_000), host(b.P), atol=1e-12)


def test_gamma_scale_and_auto_device():
    X = _data(100, seed=8)
    f = nystrom(X, "rbf", 10, random_state=0)  # gamma="scale"
    assert f.kernel.gamma == pytest.approx(1.0 / (3 * X.var()), rel=1e-13, abs=0)
    assert f.method == "nystrom"


def test_float64_features_stored_in_float32(device):
    """``feature_dtype="float32"`` on float64 rows: the float64 factor (its landmarks, L⁻¹),
    every feature computed in float64 and rounded once into float32 P, where float32 rows keep
    fewer landmarks (their pivots below 100·eps₃₂)."""
    X = _data(400)
    Xd = to_device(X, device)
    f64 = nystrom(Xd, "rbf", 150, gamma=2.0, random_state=0)
    mixed = nystrom(Xd, "rbf", 150, gamma=2.0, random_state=0, feature_dtype="float32",
                    memory_budget=2**20)  # (several row blocks)
    f32 = nystrom(to_device(X.astype(np.float32), device), "rbf", 150, gamma=2.0,
                  random_state=0)
    assert f32.rank < mixed.rank == f64.rank == 150
    np.testing.assert_array_equal(host(mixed.landmarks), host(f64.landmarks))
    assert_allclose(mixed.L_inv, host(f64.L_inv), device=device, dtype="float64")
    P64, P = host(f64.P), host(mixed.P)
    assert P.dtype == np.float32
    # each value rounded once: within half a float32 ulp of the float64 one, beside the
    # float64 blocks' own rounding (other block sizes: up to 5e-9 in the late columns)
    assert np.all(np.abs(P - P64) <= 0.6 * np.spacing(np.abs(P64).astype(np.float32)) + 2e-8)
    np.testing.assert_array_equal(P[host(f64.landmarks)], P64[host(f64.landmarks)]
                                  .astype(np.float32))  # (the landmark rows: L itself)
    assert mixed.trace_residual == pytest.approx(f64.trace_residual, abs=1e-5)
    with pytest.raises(ValueError, match="feature_dtype"):
        nystrom(Xd, "rbf", 10, feature_dtype="float16")


def test_float32_features_trace_residual_summed_in_float64(device):
    """The trace residual ``Σ Kᵢᵢ − Σ ‖pᵢ‖²`` of float32 features: its two sums are taken in
    float64. In float32 the second alone rounds to half an ulp of m (0.001 at m = 20,000:
    0.3 % of this residual; on CuPy, 3e-5 off at m = 400 in session 39)."""
    X = to_device(_data(20000, d=2, seed=3), device)
    f64 = nystrom(X, "rbf", 30, gamma=2.0, random_state=0)
    mixed = nystrom(X, "rbf", 30, gamma=2.0, random_state=0, feature_dtype="float32")
    assert 0.1 < f64.trace_residual < 1.0  # (0.28; float32 sums: 0.2793)
    assert mixed.trace_residual == pytest.approx(f64.trace_residual, rel=5e-4)


@pytest.mark.parametrize("call,exc,match", [
    (lambda X: nystrom(X, "rbf", 0), ValueError, "rank"),
    (lambda X: nystrom(X, "rbf", 31), ValueError, "exceeds"),
    (lambda X: nystrom(X, "rbf", 2.5), ValueError, "rank"),
    (lambda X: pivoted_cholesky(X, "rbf", 5, tol=-1), ValueError, "tol"),
    (lambda X: nystrom(X, "cosine", 5), ValueError, "valid kernels"),
    (lambda X: nystrom(X[:, 0], "rbf", 5), ValueError, "2-D"),
    (lambda X: nystrom(np.where(X > 0.5, np.nan, X), "rbf", 5), ValueError, "NaN"),
    (lambda X: nystrom(X, "rbf", 5, device="tpu"), ValueError, "device"),
    (lambda X: nystrom(X, "rbf", 5, memory_budget=8), MemoryError, "memory_budget"),
    (lambda X: pivoted_cholesky(X, "rbf", 5, memory_budget=8), MemoryError, "memory_budget"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call(_data(30))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gram_blocked_equals_dense(device, dtype):
    rng = np.random.default_rng(10)
    P = rng.standard_normal((1000, 7))
    G = FeatureOperator(to_device(P.astype(dtype), device),
                        memory_budget=7 * 8 * 50 + 3 * 49 * 8).gram()
    assert_allclose(G, P.astype(dtype).astype(np.float64).T @ P.astype(dtype).astype(np.float64),
                    device=device, dtype="float64", shape=(7, 7),
                    rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-3 if dtype == "float32" else 1e-9)
    f = nystrom(to_device(_data(200).astype(dtype), device), "rbf", 20, random_state=0)
    Pn = host(f.P).astype(np.float64)
    assert_allclose(f.features().gram(), Pn.T @ Pn, rtol=1e-5, atol=1e-4)


def test_gram_of_float32_features_is_formed_in_float64():
    """PᵀWP of float32 features is the exact (float64) product of those float32 values: the
    Newton Hessian I + C·PᵀΛP stays positive definite at large C only then (float32 block
    products err by ~√n·eps32·‖PᵀP‖, which C ≈ 3e3 turned into a failed Cholesky on Covtype)."""
    rng = np.random.default_rng(0)
    P = rng.standard_normal((20_000, 40)).astype(np.float32) + 3.0
    w = rng.uniform(0.0, 2.0, size=P.shape[0])
    rows = np.sort(rng.choice(P.shape[0], 5000, replace=False))
    P64 = P.astype(np.float64)
    c = np.full(P.shape[0], 2.5)
    sign = rng.choice([-1.0, 0.0, 1.0], size=P.shape[0])
    for kw, ref in [({}, P64.T @ P64),
                    ({"weights": w}, P64.T @ (w[:, None] * P64)),
                    ({"weights": w, "rows": rows}, P64[rows].T @ (w[rows, None] * P64[rows])),
                    # signed weights: one syrk pass per sign on the host
                    ({"weights": w - 1.0, "rows": rows},
                     P64[rows].T @ ((w[rows] - 1.0)[:, None] * P64[rows])),
                    ({"weights": w - 1.0}, P64.T @ ((w - 1.0)[:, None] * P64)),
                    # one weight on every row (the Huber hinge's curvature: no weighted
                    # copy), and ± one weight (its Hessian's updates), with a zero among them
                    ({"weights": c, "rows": rows}, 2.5 * P64[rows].T @ P64[rows]),
                    ({"weights": c * sign, "rows": rows},
                     P64[rows].T @ ((c * sign)[rows, None] * P64[rows])),
                    ({"weights": c * sign, "nonnegative": False},
                     P64.T @ ((c * sign)[:, None] * P64)),
                    ({"weights": np.abs(c * sign), "nonnegative": True},
                     P64.T @ (np.abs(c * sign)[:, None] * P64))]:
        G = FeatureOperator(P, memory_budget=2**20).gram(**kw)  # several row blocks
        assert G.dtype == np.float64
        assert_allclose(G, ref, rtol=1e-12, atol=1e-9 * np.abs(ref).max())


def test_public_factor_functions_read_the_free_memory_once(monkeypatch):
    """Each public entry point resolves its budget once and passes it down: the free memory of
    the device is read once per nystrom / pivoted_cholesky / features() call, not per block."""
    import svmgpu.backend._memory as mem

    calls = []
    real = mem.available_memory
    monkeypatch.setattr(mem, "available_memory", lambda dev: calls.append(dev) or real(dev))
    X = _data(3000)
    for build in (lambda: nystrom(X, "rbf", 40, random_state=0),
                  lambda: pivoted_cholesky(X, "rbf", 40)):
        calls.clear()
        f = build()
        assert len(calls) == 1
        calls.clear()
        op = f.without_features().features(X)  # rows recomputed per block
        op.gram(), op.matvec(np.ones(f.rank)), op.rmatvec(np.ones(3000))
        assert len(calls) == 1
