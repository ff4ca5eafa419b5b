"""The backend's generic branch: a namespace that is neither NumPy nor CuPy, on a device that is
not the host (array-api-strict's ``Device("device1")``), and CuPy's failure modes emulated."""

from __future__ import annotations

import types

import array_api_strict as xs
import numpy as np
import pytest
import scipy.linalg

import svmgpu.backend as B
from svmgpu.testing import assert_allclose, assert_array_equal, host

D1 = xs.Device("device1")


def on_d1(a):
    a = np.asarray(a)
    return xs.asarray(a if a.dtype == np.float32 else a.astype(np.float64), device=D1)


@pytest.fixture
def spd():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    return A @ A.T + 6 * np.eye(6)


def test_to_numpy_refuses_a_device_array_and_to_host_names_the_reason():
    a = on_d1([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="device1"):
        B.to_numpy(a)  # no silent DLPack copy from a non-host device
    assert_array_equal(host(a), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="reason"):
        B.to_host(a, why="")


def test_device_of_a_foreign_array_and_moves_onto_it():
    a = on_d1([1.0, 2.0])
    dev = B.array_device(a)
    assert dev.kind == "array_api" and dev.native == D1 and dev.xp is xs
    assert "device1" in str(dev)
    moved = B.to_device(np.arange(3.0), dev)
    assert moved.device == D1
    assert B.to_device(a, dev) is a
    with pytest.raises(RuntimeError):
        B.to_device(a, "cpu")


def test_floating_dtype_names_the_parameter():
    """The namespace's float32 / float64 of a name or a dtype; anything else is refused naming
    the caller's parameter."""
    assert B.floating_dtype("float32", xs, what="dtype") == xs.float32
    assert B.floating_dtype(np.dtype("float64"), xs, what="dtype") == xs.float64
    assert B.floating_dtype(xs.float32, np, what="dtype") == np.float32
    for bad in ("float16", np.int64, "f8"):
        with pytest.raises(ValueError, match="feature_dtype must be None, 'float32' or"):
            B.floating_dtype(bad, xs, what="feature_dtype")


def test_check_positive_names_the_parameter():
    """A positive finite real comes back as a float (NumPy scalars too); bools, strings, zero,
    negatives, infinities and NaN are refused naming the parameter."""
    assert B.check_positive("gamma", 2) == 2.0 and isinstance(B.check_positive("C", 1), float)
    assert B.check_positive("C", np.float32(0.5)) == 0.5
    for bad in (True, "1", 0, -1.0, float("inf"), float("nan"), None):
        with pytest.raises(ValueError, match="eps must be a positive finite number"):
            B.check_positive("eps", bad)


def test_compute_context_follows_the_input_device():
    a = on_d1(np.ones((3, 2), dtype=np.float32))
    ctx = B.compute_context(a, device="auto", memory_budget="1MB")
    assert ctx.kind == "generic" and ctx.device.native == D1 and ctx.dtype == xs.float32
    assert ctx.budget_bytes == 10**6
    z = ctx.zeros((2,), dtype=xs.float64)
    assert z.device == D1 and z.dtype == xs.float64
    assert B.compute_context(a, dtype="float64", memory_budget=1).dtype == xs.float64
    ctx_np = B.compute_context(np.ones((3, 2)), device="cpu", memory_budget=10)
    assert ctx_np.kind == "numpy" and ctx_np.device == B.Device("cpu") and ctx_np.budget_bytes == 10
    with pytest.raises(ValueError, match="dtype"):
        B.compute_context(np.ones((2, 2)), dtype="int8", memory_budget=1)


def test_cholesky_solves_on_device1_match_scipy(spd):
    a = on_d1(spd)
    L = B.cholesky(a, xp=xs)
    assert L.device == D1
    assert_allclose(host(L), np.linalg.cholesky(spd), rtol=1e-12)
    U = B.cholesky(a, lower=False, xp=xs)
    assert_allclose(host(U), np.linalg.cholesky(spd).T, rtol=1e-12)
    b = np.arange(6.0)
    Lh = np.linalg.cholesky(spd)
    for trans in (0, 1):
        x = B.solve_triangular(L, on_d1(b), lower=True, trans=trans, xp=xs)
        ref = scipy.linalg.solve_triangular(Lh, b, lower=True, trans=trans)
        assert_allclose(host(x), ref, rtol=1e-12)
    for lower in (True, False):
        c = B.cho_factor(a, lower=lower, xp=xs)
        x = B.cho_solve(c, on_d1(np.stack([b, -b], axis=1)), xp=xs)
        assert_allclose(host(x), np.linalg.solve(spd, np.stack([b, -b], 1)),
                                   rtol=1e-10)
    Linv = B.tri_inv(L, xp=xs)
    assert_allclose(host(Linv), np.linalg.inv(Lh), rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match="trans"):
        B.solve_triangular(L, on_d1(b), trans="X", xp=xs)


def test_cholesky_failure_raises_on_device1():
    with pytest.raises(np.linalg.LinAlgError):
        B.cholesky(on_d1([[1.0, 2.0], [2.0, 1.0]]), xp=xs)
    L, shift = B.jittered_cholesky(on_d1([[1.0, 1.0], [1.0, 1.0]]), xp=xs)
    assert shift > 0 and L.device == D1


def _partial_potrf_namespace():
    """A namespace whose ``linalg.cholesky`` behaves like CuPy's default ``linalg='ignore'``:
    no exception, LAPACK potrf's partial factor returned as is."""
    import array_api_compat.numpy as nxp

    def cholesky(a):
        c, _info = scipy.linalg.lapack.dpotrf(np.asarray(a), lower=1, clean=1)
        return np.tril(c)

    linalg = types.SimpleNamespace(cholesky=cholesky, solve=np.linalg.solve,
                                   diagonal=lambda x: np.diagonal(x, axis1=-2, axis2=-1))
    ns = types.ModuleType("fake_cupy_like")
    ns.__dict__.update({k: getattr(nxp, k) for k in dir(nxp) if not k.startswith("_")})
    ns.linalg = linalg
    return ns


def test_a_partial_factor_without_an_exception_is_detected():
    ns = _partial_potrf_namespace()
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    partial = ns.linalg.cholesky(bad)  # [[1, 0], [2, -3]]: finite, not a factor
    assert np.all(np.isfinite(partial)) and partial[1, 1] == -3.0
    with pytest.raises(np.linalg.LinAlgError):
        B.cholesky(bad, xp=ns)
    with pytest.raises(np.linalg.LinAlgError, match="shift"):  # indefinite: no small shift
        B.jittered_cholesky(bad, xp=ns)  # (was: the partial factor, reported with shift 0)
    L, shift = B.jittered_cholesky(np.array([[1.0, 1.0], [1.0, 1.0]]), xp=ns)
    assert shift > 0 and np.all(np.diag(L) > 0)


def test_a_namespace_without_linalg_is_named():
    ns = types.ModuleType("bare_namespace")
    with pytest.raises(NotImplementedError, match="bare_namespace"):
        B.solve_triangular(np.eye(2), np.ones(2), xp=ns)
    with pytest.raises(NotImplementedError, match="bare_namespace"):
        B.cholesky(np.eye(2), xp=ns)


@pytest.mark.parametrize("rank", [6, 3])
def test_pivoted_cholesky_dense_on_device1_matches_lapack(rank):
    rng = np.random.default_rng(1)
    F = rng.standard_normal((6, rank))
    a = F @ F.T + (1e-3 * np.eye(6) if rank == 6 else 0.0)
    L_ref, piv_ref = B.pivoted_cholesky_dense(a, rel_tol=1e-12, xp=np)
    L, piv = B.pivoted_cholesky_dense(on_d1(a), rel_tol=1e-12, xp=xs)
    assert L.device == D1
    assert_array_equal(piv, piv_ref)
    assert_allclose(host(L), L_ref, rtol=1e-8, atol=1e-10)
    Lh = host(L)
    assert_allclose(Lh @ Lh.T, a[np.ix_(piv, piv)], rtol=1e-10, atol=1e-10)


def test_greedy_pivoted_cholesky_reproduces_visited_columns():
    rng = np.random.default_rng(2)
    F = rng.standard_normal((8, 3))
    a = F @ F.T
    Pt, piv, trace = B.greedy_pivoted_cholesky(on_d1(np.diag(a)), lambda j: on_d1(a[:, j]), 8,
                                               stop_trace=0.0, rel_tol=1e-12, xp=xs)
    P = host(Pt).T
    assert len(piv) == 3 and len(set(piv)) == 3
    assert_allclose(P @ P.T, a, atol=1e-10)
    assert abs(trace) < 1e-9


def test_scalars_nonzero_and_clip_on_device1():
    a = on_d1([0.0, 2.0, 0.0, 3.0])
    assert B.fetch_scalars(xs.sum(a), 1.5, xs.max(a), xp=xs) == [5.0, 1.5, 3.0]
    assert B.fetch_vector(a, xp=xs) == [0.0, 2.0, 0.0, 3.0]
    idx = B.nonzero_indices(a != 0, 2, xp=xs)
    assert idx.device == D1 and host(idx).tolist() == [1, 3]
    c = B.clip(a, min=1.0, max=2.5, xp=xs)
    assert host(c).tolist() == [1.0, 2.0, 1.0, 2.5]
    e = B.exp_neg_clipped_inplace(on_d1([-1.0, 2.0]), xp=xs)
    assert_allclose(host(e), [np.exp(-1.0), 1.0])
