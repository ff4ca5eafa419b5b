"""Reduced-SVM Newton solvers (Zhou 2013) and ReducedSVC."""

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from sklearn.datasets import load_iris, make_classification
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from svmgpu.backend import get_device, solve_smw, to_device
from svmgpu.datasets import make_checkerboard
from svmgpu.estimators.reduced import ReducedSVC
from svmgpu.lowrank import CurvatureGram, FeatureOperator
from svmgpu.solvers.newton import semismooth_newton
from svmgpu.solvers.reduced import (
    LOSS_SCALE,
    c_to_lambda,
    lambda_to_c,
    loss_terms,
    newton_reduced,
    registry_loss,
)
from svmgpu.solvers.unisvm import unisvm_newton
from svmgpu.testing import assert_allclose, assert_array_equal, host

NXP = get_device("cpu").xp
# fixed smoothing parameters, so that the objective is one function scipy can minimize
FIXED = {"least_squares": {}, "squared_hinge": {},
         "huber_hinge": {"delta0": 0.3, "delta_min": 0.3}, "logistic": {"p0": 5.0, "p_max": 5.0}}
PARAM = {"least_squares": None, "squared_hinge": None, "huber_hinge": 0.3, "logistic": 5.0}


def _problem(m=240, r=24, gamma=8.0, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 2))
    y = np.where((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5), 1.0, -1.0)
    y[rng.choice(m, int(noise * m), replace=False)] *= -1  # label noise: margin violators
    J = np.sort(rng.choice(m, r, replace=False))
    F = rbf_kernel(X, X[J], gamma=gamma)
    K_JJ = rbf_kernel(X[J], X[J], gamma=gamma)
    s = rng.uniform(0.5, 2.0, m)
    return F, y, K_JJ, s


def _paper_loss(loss, u, param):
    """The paper's L and L' (Zhou 2013, Table 1), written out here as an independent reference
    for the registry's losses."""
    if loss == "least_squares":
        return 0.5 * u * u, u
    if loss == "squared_hinge":
        up = np.maximum(u, 0.0)
        return 0.5 * up * up, up
    if loss == "huber_hinge":
        d = param
        inside, pos = np.abs(u) < d, u >= d
        return (np.where(pos, u, np.where(inside, (u + d) ** 2 / (4 * d), 0.0)),
                np.where(pos, 1.0, np.where(inside, (u + d) / (2 * d), 0.0)))
    z = np.exp(-param * np.abs(u))
    return np.maximum(u, 0.0) + np.log1p(z) / param, np.where(u >= 0, 1.0, z) / (1.0 + z)


@pytest.mark.parametrize("loss", ["least_squares", "squared_hinge", "huber_hinge", "logistic"])
def test_registry_losses_are_the_papers(loss):
    u = np.linspace(-3.0, 3.0, 601)
    param = {"huber_hinge": 0.3, "logistic": 5.0}.get(loss)
    L, L1, L2 = loss_terms(registry_loss(loss, param), LOSS_SCALE[loss], u, xp=np)
    ref, ref1 = _paper_loss(loss, u, param)
    assert_allclose(L, ref, rtol=1e-13, atol=1e-15)
    assert_allclose(L1, ref1, rtol=1e-13, atol=1e-15)
    h = 1e-6  # L'' against a central difference of L', away from the kinks
    num = (_paper_loss(loss, u + h, param)[1] - _paper_loss(loss, u - h, param)[1]) / (2 * h)
    smooth = np.min(np.abs(u[:, None] - np.array([[0.0, -0.3, 0.3]])), axis=1) > 1e-3
    assert_allclose(L2[smooth], num[smooth], rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="huber_hinge"):
        registry_loss("huber")


def _objective(z, F, y, s, loss, C, B):
    """½ zᵀBz + C Σ sᵢ ψ(uᵢ) with ψ = κ L (NumPy reference)."""
    u = 1.0 - y * (F @ z)
    L = _paper_loss(loss, u, PARAM[loss])[0]
    return 0.5 * z @ (z if B is None else B @ z) + C * LOSS_SCALE[loss] * np.sum(s * L)


def _scipy_minimum(F, y, s, loss, C, B):
    """L-BFGS on the same objective, in coordinates z = T β with Tᵀ M T = I for the fixed
    matrix M = B + C FᵀSF (a change of variables: same minimum, better conditioned)."""
    r = F.shape[1]
    M = (np.eye(r) if B is None else B) + C * F.T @ (s[:, None] * F)
    T = scipy.linalg.solve_triangular(np.linalg.cholesky(M), np.eye(r), lower=True).T
    G = F @ T

    def fun(beta):
        u = 1.0 - y * (G @ beta)
        L, L1 = _paper_loss(loss, u, PARAM[loss])
        k = C * LOSS_SCALE[loss]
        z = T @ beta
        q = z if B is None else B @ z
        return 0.5 * z @ q + k * np.sum(s * L), T.T @ q - k * G.T @ (s * y * L1)

    res = scipy.optimize.minimize(fun, np.zeros(F.shape[1]), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 50_000, "ftol": 1e-15, "gtol": 1e-11})
    return T @ res.x, res.fun


@pytest.mark.parametrize("regularizer", ["gsvm", "rkhs"])
@pytest.mark.parametrize("loss", ["least_squares", "squared_hinge", "huber_hinge", "logistic"])
def test_newton_reaches_the_scipy_optimum(loss, regularizer):
    F, y, K_JJ, s = _problem()
    C = 4.0
    B = None if regularizer == "gsvm" else K_JJ
    res = newton_reduced(F, y, loss=loss, C=C, B=B, sample_weight=s, tol=1e-10, xp=NXP,
                         **FIXED[loss])
    assert res.converged and res.info["stop"] in ("active_set", "gradient")
    B_eff = None if B is None else B + 1e-8 / c_to_lambda(C, loss) * np.eye(B.shape[0])
    z_ref, f_ref = _scipy_minimum(F, y, s, loss, C, B_eff)
    f_newton = _objective(res.coef, F, y, s, loss, C, B_eff)
    assert f_newton == pytest.approx(res.objective_history[-1], rel=1e-12)
    assert f_newton <= f_ref * (1 + 1e-9)                   # not worse than scipy ...
    assert f_newton == pytest.approx(f_ref, rel=1e-7)       # ... and the same minimum
    assert_allclose(F @ res.coef, F @ z_ref, atol=2e-3)
    if loss == "least_squares":
        assert res.n_iter == 1


def test_least_squares_is_one_step_of_21():
    F, y, _, s = _problem()
    C = 3.0
    res = newton_reduced(F, y, loss="least_squares", C=C, sample_weight=s, xp=NXP)
    lam = 1 / (2 * C)
    z = np.linalg.solve(lam * np.eye(F.shape[1]) + F.T @ (s[:, None] * F), F.T @ (s * y))
    assert_allclose(res.coef, z, rtol=1e-9, atol=1e-9)
    assert res.n_iter == 1 and res.info["lambda"] == lam


def test_squared_hinge_finite_termination():
    F, y, _, s = _problem(m=400, r=40)
    res = newton_reduced(F, y, loss="squared_hinge", C=10.0, sample_weight=s, tol=1e-300,
                         xp=NXP)
    # stopped because a full step left the active set unchanged: the exact minimizer
    assert res.converged and res.info["stop"] == "active_set"
    assert res.n_iter < 30 and res.info["step_sizes"][-1] == 1.0
    assert res.info["grad_norms"][-1] <= 1e-10 * res.info["grad_scale"]
    # the optimality condition holds exactly on the final active set
    u = 1 - y * (F @ res.coef)
    act = u > 0
    g = res.coef - 2 * 10.0 * F[act].T @ (s[act] * y[act] * u[act])
    assert_allclose(g, 0, atol=1e-8)
    # objective is monotone (Armijo) along the iterations
    h = np.asarray(res.objective_history)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))


def test_incremental_hessian_equals_recomputed():
    rng = np.random.default_rng(1)
    F = rng.standard_normal((500, 12))
    s = rng.uniform(0.1, 3.0, 500)
    gram = CurvatureGram(FeatureOperator(F, memory_budget=37 * 12 * 24 + 3 * 12 * 12 * 8))
    mask = rng.random(500) < 0.6
    for step in range(8):
        flip = rng.random(500) < (0.05 if step else 0.0)
        mask = mask ^ flip
        Q = gram.update(np.where(mask, s, 0.0), mode="incremental")
        ref = (F[mask] * s[mask, None]).T @ F[mask]
        assert_allclose(Q, ref, rtol=1e-11, atol=1e-11)
    assert gram.n_incremental == 7 and gram.n_recompute == 1
    assert_allclose(FeatureOperator(F, memory_budget=64 * 12 * 24 + 3456).gram(s),
                               (F * s[:, None]).T @ F, rtol=1e-12)
    assert_allclose(FeatureOperator(F, memory_budget=64 * 12 * 24).rmatvec(
                                   np.stack([s, -s], 1), rows=np.arange(3, 400, 2)),
                               F[3:400:2].T @ np.stack([s, -s], 1)[3:400:2], rtol=1e-12)
    # the solver gives the same iterates with both Hessian updates
    F, y, _, s = _problem(m=600, r=30)
    kw = dict(loss="squared_hinge", C=20.0, sample_weight=s, tol=1e-12, xp=NXP, smw="never")
    a = newton_reduced(F, y, hessian_update="incremental", **kw)
    b = newton_reduced(F, y, hessian_update="recompute", **kw)
    assert a.info["hessian_incremental"] > 0 and b.info["hessian_incremental"] == 0
    assert a.n_iter == b.n_iter and a.info["active_set_sizes"] == b.info["active_set_sizes"]
    assert_allclose(a.coef, b.coef, rtol=1e-9, atol=1e-10)
    for loss in ("huber_hinge",):  # at δ = 0.3: the Huber Hessian is ill-conditioned for small δ
        a = newton_reduced(F, y, loss=loss, C=20.0, sample_weight=s, xp=NXP, smw="never",
                           hessian_update="incremental", tol=1e-12, **FIXED[loss])
        b = newton_reduced(F, y, loss=loss, C=20.0, sample_weight=s, xp=NXP, smw="never",
                           hessian_update="recompute", tol=1e-12, **FIXED[loss])
        assert a.info["stop"] == b.info["stop"] == "active_set"
        assert_allclose(a.coef, b.coef, rtol=1e-9, atol=1e-10)


def test_one_newton_serves_unisvm_and_the_reduced_svm(device):
    """UniSVM's Newton and Zhou 2013's GSVM Newton are one solver: on the same features,
    labels, weights and C (objective ½‖z‖² + C Σ sᵢψ(rᵢ)) they return the same minimizer."""
    F, y, _, s = _problem(m=400, r=30)
    Fd, yd, sd = (to_device(a, device) for a in (F, y, s))
    for loss in ("squared_hinge", "least_squares"):
        a = newton_reduced(Fd, yd, loss=loss, C=3.0, sample_weight=sd, tol=1e-12, xp=device.xp)
        b = unisvm_newton(yd, registry_loss(loss), C=3.0, P=Fd, sample_weight=sd, tol=1e-12,
                          xp=device.xp)
        assert a.converged and b.converged
        assert_allclose(b.coef, host(a.coef), device=device, dtype="float64", rtol=1e-8,
                        atol=1e-10)
        assert b.objective_history[-1] == pytest.approx(a.objective_history[-1], rel=1e-12)


def test_semismooth_newton_regression_with_a_regularizer_matches_scipy(device):
    """Regression residuals, an SPD regularizer B, sample weights and the Huber loss (piecewise
    quadratic: finite termination) against scipy's minimizer of the same objective."""
    from svmgpu.losses import get_loss

    rng = np.random.default_rng(4)
    m, r = 300, 12
    P = rng.standard_normal((m, r))
    y = P @ rng.standard_normal(r) + 0.1 * rng.standard_normal(m)
    y[:15] += 20.0  # outliers on the linear pieces of the Huber loss
    A = rng.standard_normal((r, r))
    B = A @ A.T / r + np.eye(r)
    s = rng.uniform(0.5, 2.0, m)
    huber, C = get_loss("huber", task="regression", delta=0.5), 2.0

    def objective(z):
        return 0.5 * z @ B @ z + C * np.sum(s * huber.value(y - P @ z, xp=np))

    def gradient(z):
        return B @ z - C * P.T @ (s * huber.grad(y - P @ z, xp=np))

    ref = scipy.optimize.minimize(objective, np.zeros(r), jac=gradient, method="L-BFGS-B",
                                  options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000}).x
    res = semismooth_newton(to_device(P, device), to_device(y, device), [huber], C=C,
                            B=to_device(B, device), task="regression",
                            sample_weight=to_device(s, device), tol=1e-12, xp=device.xp)
    assert res.converged and res.info["stop"] in ("active_set", "gradient")
    assert res.objective_history[-1] == pytest.approx(objective(ref), rel=1e-10)
    assert_allclose(res.coef, ref, device=device, rtol=1e-6, atol=1e-7)
    assert res.info["smw_steps"] == 0  # SMW (28) needs B = I
    with pytest.raises(ValueError, match="stop must be"):
        semismooth_newton(P, y, [huber], C=C, stop="never", xp=NXP)


def test_smw_path_equals_direct_solve():
    rng = np.random.default_rng(2)
    U = rng.standard_normal((7, 20))
    lw = rng.uniform(0.5, 2.0, 7)
    b = rng.standard_normal(20)
    direct = np.linalg.solve(0.3 * np.eye(20) + U.T @ (lw[:, None] * U), b)
    assert_allclose(solve_smw(U, lw, 0.3, b, xp=NXP), direct, rtol=1e-10)
    assert_allclose(solve_smw(U[:0], lw[:0], 0.3, b, xp=NXP), b / 0.3)
    # the whole Newton path: SMW (28) at every step vs Cholesky of the r × r Hessian
    F, y, _, s = _problem(m=300, r=60, gamma=30.0)
    for loss in ("squared_hinge", "huber_hinge", "logistic"):
        kw = dict(loss=loss, C=2.0, sample_weight=s, tol=1e-10, xp=NXP, **FIXED[loss])
        a = newton_reduced(F, y, smw="always", **kw)
        b = newton_reduced(F, y, smw="never", **kw)
        c = newton_reduced(F, y, smw="auto", **kw)
        assert a.info["smw_steps"] == a.n_iter and b.info["smw_steps"] == 0
        assert_allclose(a.coef, b.coef, rtol=1e-7, atol=1e-8)
        assert_allclose(c.coef, b.coef, rtol=1e-7, atol=1e-8)
    # "auto" switches to SMW once |I| < r
    F, y, _, s = _problem(m=300, r=100, gamma=30.0, noise=0.0)
    c = newton_reduced(F, y, loss="squared_hinge", C=20.0, sample_weight=s, xp=NXP)
    sizes = c.info["active_set_sizes"]
    assert min(sizes[:-1]) < 100 and c.info["smw_steps"] == sum(n < 100 for n in sizes[:-1])
    d = newton_reduced(F, y, loss="squared_hinge", C=20.0, sample_weight=s, xp=NXP, smw="never")
    assert_allclose(c.coef, d.coef, rtol=1e-8, atol=1e-9)


def test_continuation_schedules_and_convergence():
    F, y, _, _ = _problem(m=400, r=30)
    hub = newton_reduced(F, y, loss="huber_hinge", C=5.0, xp=NXP)
    assert [st["param"] for st in hub.info["stages"]] == pytest.approx([1, 0.1, 0.01, 1e-3, 1e-4])
    assert hub.converged and hub.info["final_param"] == pytest.approx(1e-4)
    log = newton_reduced(F, y, loss="logistic", C=5.0, xp=NXP)
    assert [st["param"] for st in log.info["stages"]] == [10, 100, 1000, 10000]
    assert log.converged
    # Huber with small δ and logistic with large p both approach the hinge loss
    assert_allclose(F @ hub.coef, F @ log.coef, atol=0.05)
    hub2 = newton_reduced(F, y, loss="huber_hinge", C=5.0, delta_min=0.01, xp=NXP)
    assert hub2.info["final_param"] == pytest.approx(0.01)


def test_presolve_warm_start_reaches_the_same_optimum():
    F, y, _, s = _problem(m=2000, r=30)
    for loss in ("squared_hinge", "huber_hinge"):
        kw = dict(loss=loss, C=5.0, sample_weight=s, tol=1e-10, xp=NXP, **FIXED[loss])
        a = newton_reduced(F, y, presolve=None, **kw)
        b = newton_reduced(F, y, presolve=500, **kw)
        assert b.info["presolve"]["rows"] == 500 and b.converged
        assert_allclose(b.objective_history[-1], a.objective_history[-1], rtol=1e-9)
        assert_allclose(b.coef, a.coef, rtol=1e-5, atol=1e-6)
    # "auto": a pre-solve on m/50 (at least 2000) rows once m is large enough
    F, y, _, _ = _problem(m=20000, r=20, gamma=20.0)
    a = newton_reduced(F, y, C=5.0, tol=1e-300, xp=NXP, presolve=None)
    b = newton_reduced(F, y, C=5.0, tol=1e-300, xp=NXP)
    assert b.info["presolve"]["rows"] == 2000 and b.converged and b.n_iter <= a.n_iter
    assert_allclose(b.objective_history[-1], a.objective_history[-1], rtol=1e-12)


def test_given_margins_of_the_start_replace_its_product(monkeypatch):
    """``margins0 = P z0`` (a grown rank's start: the last rank's margins) gives the solve
    from z0 without its product; the margins of the rows of positive weight; refused without
    z0 or at another shape, never silently used."""
    F, y, _, s = _problem(m=600, r=30)
    s[::5] = 0
    kw = dict(loss="huber_hinge", C=5.0, sample_weight=s, tol=1e-10, xp=NXP, **FIXED["huber_hinge"])
    z0 = newton_reduced(F[:, :20], y, max_iter=2, **kw).coef  # (a smaller problem's point,
    z0 = np.concatenate([z0, np.zeros(10)])  # its new coefficients 0)
    calls = []
    matvec = FeatureOperator.matvec
    monkeypatch.setattr(FeatureOperator, "matvec",
                        lambda self, v, **k: calls.append(1) or matvec(self, v, **k))
    a = newton_reduced(F, y, z0=z0, **kw)
    n_a, calls[:] = len(calls), []
    b = newton_reduced(F, y, z0=z0, margins0=(F @ z0)[s > 0], **kw)
    assert_allclose(b.coef, a.coef, rtol=1e-10, atol=1e-12)
    assert b.n_iter == a.n_iter and len(calls) == n_a - 1  # (P z0's product saved)
    with pytest.raises(ValueError, match="margins0 .* needs the start z0"):
        newton_reduced(F, y, margins0=F @ z0, **kw)
    with pytest.raises(ValueError, match=r"margins0 must have shape \(480,\)"):
        newton_reduced(F, y, z0=z0, margins0=F @ z0, **kw)


def test_the_point_that_ends_the_iteration_forms_no_direction(monkeypatch):
    """The stopping test is read before the Newton direction: each step forms one direction
    (its Hessian, factor and trial product P d), and the point where the gradient test, the
    active set's test or the step limit ends the iteration forms none (from z = 0, and from
    the minimum itself, where a given start with min_iter=1 takes one step and stays)."""
    from svmgpu.solvers.newton import NewtonRows

    F, y, _, s = _problem(m=600, r=30)
    trials = []
    real = NewtonRows.trial
    monkeypatch.setattr(NewtonRows, "trial",
                        lambda self, *a, **k: trials.append(1) or real(self, *a, **k))
    kw = dict(loss="huber_hinge", C=5.0, sample_weight=s, xp=NXP, presolve=None,
              **FIXED["huber_hinge"])
    a = newton_reduced(F, y, tol=1e-2, **kw)
    assert a.converged and a.info["stop"] == "gradient" and a.n_iter >= 3
    assert len(trials) == a.n_iter  # (a direction a step, none at the last point)
    trials[:] = []
    exact = newton_reduced(F, y, tol=1e-12, **kw)  # (to the minimum: the active set's stop)
    assert exact.info["stop"] == "active_set" and len(trials) == exact.n_iter
    trials[:] = []
    b = newton_reduced(F, y, tol=1e-2, max_iter=2, **kw)
    assert not b.converged and b.n_iter == 2 and len(trials) == 2
    trials[:] = []
    c = newton_reduced(F, y, tol=1e-2, z0=exact.coef, min_iter=1, **kw)  # (a step at least)
    assert c.converged and c.n_iter == 1 and len(trials) == 1
    assert_allclose(c.coef, exact.coef, rtol=1e-9, atol=1e-10)


def test_zero_weights_drop_rows():
    F, y, _, s = _problem()
    s[::3] = 0
    a = newton_reduced(F, y, sample_weight=s, C=3.0, xp=NXP)
    keep = s > 0
    b = newton_reduced(F[keep], y[keep], sample_weight=s[keep], C=3.0, xp=NXP)
    assert_allclose(a.coef, b.coef, rtol=1e-10, atol=1e-12)


def test_lambda_mapping():
    assert c_to_lambda(5.0, "squared_hinge") == 0.1 and c_to_lambda(5.0, "huber_hinge") == 0.2
    assert lambda_to_c(0.01, "least_squares") == 50 and lambda_to_c(0.01, "logistic") == 100


@pytest.mark.parametrize("kwargs,match", [
    ({"loss": "hinge"}, "unknown loss"),
    ({"smw": "yes"}, "smw"),
    ({"hessian_update": "lazy"}, "hessian_update"),
    ({"C": 0.0}, "C must"),
    ({"presolve": -2}, "presolve"),
])
def test_solver_bad_input(kwargs, match):
    F, y, _, _ = _problem(m=50, r=5)
    with pytest.raises(ValueError, match=match):
        newton_reduced(F, y, xp=NXP, **kwargs)
    with pytest.raises(ValueError, match="labels"):
        newton_reduced(F, y * 2, xp=NXP)
    with pytest.raises(ValueError, match="shape"):
        newton_reduced(F, y, B=np.eye(3), xp=NXP)


# ------------------------------------------------------------------------------ estimator
@parametrize_with_checks(
    [ReducedSVC(device="cpu"), ReducedSVC(loss="least_squares", regularizer="rkhs",
                                          multi_class="ovo", device="cpu", fit_intercept=True),
     ReducedSVC(regularizer="rkhs", reduced_set="pivoted_cholesky", device="cpu")],
    expected_failed_checks=lambda est: {} if est.regularizer == "rkhs" else {
        f"check_sample_weight_equivalence_on_{data}_data":
            "with every point in the reduced set, a repeated row repeats a column of K(X, X_J) "
            "and GSVM's ½‖z‖² is not invariant to that (the RKHS norm is: those pass)"
        for data in ("dense", "sparse")})
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_checkerboard_accuracy_and_fitted_attributes():
    X, y = make_checkerboard(3000, random_state=0)
    Xt, yt = make_checkerboard(5000, random_state=1)
    clf = ReducedSVC(rank=150, C=100.0, gamma=16.0, random_state=0, device="cpu").fit(X, y)
    assert clf.score(Xt, yt) > 0.97
    assert clf.support_.shape == (150,) and clf.coef_.shape == (1, 150)
    assert_array_equal(clf.support_vectors_, X[clf.support_])
    assert clf.n_iter_[0] >= 1 and clf.converged_[0]
    assert clf.solver_info_[0]["stop"] == "active_set"
    d = clf.decision_function(Xt[:10])
    assert_allclose(d, rbf_kernel(Xt[:10], X[clf.support_], gamma=16.0)
                               @ clf.coef_[0], rtol=1e-10, atol=1e-12)
    pc = ReducedSVC(rank=150, C=100.0, gamma=16.0, reduced_set="pivoted_cholesky",
                    device="cpu").fit(X, y)
    assert pc.score(Xt, yt) > 0.97 and len(set(pc.support_.tolist())) == 150


def test_multiclass_and_intercept():
    X, y = load_iris(return_X_y=True)
    for mc in ("ovr", "ovo"):
        clf = ReducedSVC(rank=40, C=10.0, fit_intercept=True, multi_class=mc, random_state=0,
                         device="cpu").fit(X, y)
        assert clf.score(X, y) > 0.95 and clf.coef_.shape == (3, 40)
        assert clf.intercept_.shape == (3,) and np.any(clf.intercept_ != 0)


def test_sample_weight_zero_equals_removal():
    X, y = make_classification(200, 4, random_state=0)
    sw = np.ones(200)
    sw[::4] = 0
    keep = sw > 0
    a = ReducedSVC(rank=60, C=5.0, gamma=0.2, random_state=0, device="cpu")
    a.fit(X, y, sample_weight=sw)
    assert np.all(sw[a.support_] > 0)
    b = ReducedSVC(rank=60, C=5.0, gamma=0.2, random_state=0, device="cpu")
    b.fit(X[keep], y[keep])
    # the same reduced points (drawn among the kept rows) give the same classifier
    b_support = np.flatnonzero(keep)[b.support_]
    assert_array_equal(a.support_, b_support)
    assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-9)


def test_float32_agrees_with_float64():
    X, y = make_checkerboard(2000, random_state=3)
    kw = dict(rank=100, C=10.0, gamma=16.0, random_state=0, device="cpu")
    a = ReducedSVC(**kw).fit(X, y)
    b = ReducedSVC(dtype="float32", **kw).fit(X, y)
    assert b.coef_.dtype == np.float32
    assert_allclose(b.decision_function(X), a.decision_function(X), atol=2e-3)


@pytest.mark.parametrize("params,match", [
    ({"loss": "hinge"}, "'loss' parameter of ReducedSVC must be a str among .*'logistic'"),
    ({"regularizer": "l1"}, "'regularizer' parameter"),
    ({"reduced_set": "kmeans"}, "'reduced_set' parameter"),
    ({"rank": 0}, "'rank' parameter"),
    ({"C": -1.0}, "'C' parameter of ReducedSVC must be a float in the range"),
    ({"fit_intercept": "yes"}, "'fit_intercept' parameter"),
])
def test_estimator_bad_input(params, match):
    X, y = make_classification(100, 4, random_state=0)
    with pytest.raises(ValueError, match=match):
        ReducedSVC(device="cpu", **params).fit(X, y)


@pytest.mark.parametrize("loss", ["squared_hinge", "huber_hinge"])
def test_numpy_and_device_agree(device, loss):
    X, y = make_checkerboard(800, random_state=4)
    kw = dict(loss=loss, rank=60, C=20.0, gamma=16.0, random_state=0)
    ref = ReducedSVC(device="cpu", **kw).fit(X, y)
    clf = ReducedSVC(device=device, **kw).fit(to_device(X, device), y)
    assert clf.device_ == str(device)
    assert_allclose(clf.coef_, ref.coef_, device=device, dtype="float64", rtol=1e-6, atol=1e-6)
    out = clf.decision_function(to_device(X, device))
    assert_allclose(out, ref.decision_function(X), device=device, rtol=1e-6, atol=1e-6)
    assert_allclose(host(clf.decision_function(X)), ref.decision_function(X),
                               atol=1e-6)


def test_armijo_line_search():
    from svmgpu.solvers._linesearch import armijo

    calls = []

    def phi(eta):
        calls.append(eta)
        return eta * eta - eta  # φ(0) = 0, φ'(0) = -1

    assert armijo(phi, 0.0, -1.0) == (0.5, -0.25, 1, True)
    assert calls == [1.0, 0.5]
    assert armijo(phi, 0.0, -1.0, phi1=0.0, sigma=0.4)[:3] == (0.5, -0.25, 1)  # φ(1) given
    eta, _, k, ok = armijo(lambda e: 1.0, 0.0, -1.0, max_backtracks=5)  # never decreases
    assert (eta, k, ok) == (0.5**5, 5, False)
    # an accepted full step that falls short is lengthened while φ decreases: φ = (η − 5)² − 25
    calls.clear()

    def short(eta):
        calls.append(eta)
        return (eta - 5.0) ** 2 - 25.0

    assert armijo(short, 0.0, -10.0, max_extensions=8) == (4.0, -24.0, 0, True)
    assert calls == [1.0, 2.0, 4.0, 8.0]
    assert armijo(short, 0.0, -10.0, max_extensions=1)[0] == 2.0
    assert armijo(phi, 0.0, -1.0, max_extensions=8)[0] == 0.5  # only after a full step
    # fallback_below: where no step decreases enough (a slope that overstates the decrease
    # 100-fold), the longest that decreases at all, once a step below the bound decreases
    calls.clear()

    def flat(eta):
        calls.append(eta)
        return eta * eta - 0.9 * eta  # φ(1) > 0 = φ(0)

    assert armijo(flat, 0.0, -100.0, sigma=0.4, fallback_below=0.1) == (0.5, -0.2, 4, True)
    assert calls == [1.0, 0.5, 0.25, 0.125, 0.0625]
    # ... or when the reductions run out; none that decreases: not accepted
    assert armijo(flat, 0.0, -100.0, sigma=0.4, max_backtracks=2, fallback_below=1e-3) == \
        (0.5, -0.2, 2, True)
    assert armijo(lambda e: 1.0, 0.0, -1.0, max_backtracks=3, fallback_below=0.5)[3] is False
    # a later step that decreases enough is still taken before the bound
    assert armijo(lambda e: -1.0 if e < 0.3 else -0.01, 0.0, -1.0, sigma=0.4,
                  fallback_below=0.1) == (0.25, -1.0, 2, True)


def test_reduced_svc_n_iter_counts_the_presolve():
    """n_iter_ counts every Newton step, the presolve's (on a strided subset of the rows) too,
    and n_iter_detail_ reports the two (issue 13, item 4), as UniSVC does."""
    from svmgpu import ReducedSVC
    from svmgpu.datasets import make_checkerboard

    X, y = make_checkerboard(20_000, random_state=0)
    clf = ReducedSVC(C=100.0, gamma=16.0, rank=30, random_state=0, device="cpu").fit(X, y)
    (d,) = clf.n_iter_detail_
    assert set(d) == {"presolve", "solver"} and d["presolve"] > 0
    assert clf.n_iter_[0] == d["presolve"] + d["solver"]
    assert clf.solver_info_[0]["n_presolve_iter"] == d["presolve"]
    small = ReducedSVC(C=10.0, gamma=16.0, rank=30, random_state=0, device="cpu").fit(X[:2000],
                                                                                      y[:2000])
    assert small.n_iter_detail_[0]["presolve"] == 0  # (too few rows for a presolve)
    assert small.n_iter_[0] == small.n_iter_detail_[0]["solver"]


def test_newton_options_are_one_frozen_value_and_the_knobs_replace_its_fields():
    import dataclasses

    from svmgpu.losses import get_loss
    from svmgpu.solvers.newton import NewtonOptions

    rng = np.random.default_rng(5)
    P = rng.standard_normal((400, 6))
    y = np.sign(P[:, 0] + 0.3 * rng.standard_normal(400))
    psi = [get_loss("squared_hinge")]
    opts = NewtonOptions(tol=1e-10, stop="kkt", presolve=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tol = 1.0
    with pytest.raises(ValueError, match="stop must be"):
        NewtonOptions(stop="never")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="min_iter must be"):
            NewtonOptions(min_iter=bad)
    for bad in (0.0, -1.0, float("inf"), True, "0.1"):
        with pytest.raises(ValueError, match="balance_tol must be"):
            NewtonOptions(balance_tol=bad)
    assert NewtonOptions(balance_tol=0.1).for_presolve().balance_tol is None
    for bad in (0.0, -1.0, float("inf"), True, "0.1"):
        with pytest.raises(ValueError, match="decrement_tol must be"):
            NewtonOptions(decrement_tol=bad)
    assert NewtonOptions(decrement_tol=0.1).for_presolve().decrement_tol is None
    # from its own solution the gradient test stops at once; min_iter=1 takes a step first,
    # and lands on the same minimizer (a full step on the right pieces)
    kw = dict(tol=1e-3, presolve=None, xp=NXP)
    z = semismooth_newton(P, y, psi, C=3.0, tol=1e-12, presolve=None, xp=NXP).coef
    assert semismooth_newton(P, y, psi, C=3.0, z0=z, **kw).n_iter == 0
    again = semismooth_newton(P, y, psi, C=3.0, z0=z, min_iter=1, **kw)
    assert again.n_iter == 1
    assert_allclose(again.coef, z, atol=1e-10)
    a = semismooth_newton(P, y, psi, C=3.0, options=opts, xp=NXP)
    b = semismooth_newton(P, y, psi, C=3.0, tol=1e-10, stop="kkt", presolve=None, xp=NXP)
    c = semismooth_newton(P, y, psi, C=3.0, options=NewtonOptions(tol=1.0), tol=1e-10,
                          stop="kkt", presolve=None, xp=NXP)
    assert_array_equal(a.coef, b.coef)
    assert_array_equal(a.coef, c.coef)
    assert opts.for_presolve().tol == 1e-2 and opts.for_presolve().presolve is None


def test_the_reduced_losses_and_their_scale_come_from_the_one_registry():
    from svmgpu.losses import LOSSES, ZHOU2013_LOSSES
    from svmgpu.solvers.reduced import LOSSES as REDUCED

    assert REDUCED == tuple(ZHOU2013_LOSSES)
    for name, (loss, _) in ZHOU2013_LOSSES.items():
        assert LOSS_SCALE[name] == LOSSES["classification"][loss].zhou2013_scale
    # Zhou 2013's logistic loss is the registry's smooth hinge, not a second definition
    assert type(registry_loss("logistic", 10.0)) is LOSSES["classification"]["smooth_hinge"]
    assert LOSSES["classification"]["truncated_squared_hinge"].zhou2013_scale is None


def _along(loss, seed, m=200, scale=1.0, zBd=0.0, dBd=1.0):
    """F along a step as the Newton solver sees it: ``½(2η zBd + η² dBd) + c Σ s ψ(r + η q)``,
    with F, F' and F'' from the loss's value, gradient and curvature."""
    rng = np.random.default_rng(seed)
    r, q, s, c = rng.normal(0, 1.5, m), scale * rng.normal(0, 1, m), rng.uniform(0.5, 2, m), 1.3

    def along(eta):
        u = r + eta * q
        return (eta * zBd + 0.5 * eta * eta * dBd + c * np.sum(s * loss.value(u, xp=np)),
                zBd + eta * dBd + c * np.sum(s * q * loss.grad(u, xp=np)),
                dBd + c * np.sum(s * q * q * loss.curvature(u, xp=np)))
    return along


@pytest.mark.parametrize("name", ["huber_hinge", "huber_epsilon_insensitive", "squared_hinge"])
@pytest.mark.parametrize("scale", [0.05, 0.5, 3.0])
def test_convex_minimum_is_the_minimizer_along_the_step(name, scale):
    """The exact line search against scipy's bounded scalar minimizer of the same convex
    piecewise-quadratic F (minimizers below, near and above the full step)."""
    from svmgpu.losses import get_loss
    from svmgpu.solvers._linesearch import convex_minimum

    task = "regression" if "epsilon" in name else "classification"
    loss = get_loss(name, task=task)
    for seed in range(4):
        along = _along(loss, seed, scale=scale)
        phi0, slope, _ = along(0.0)
        if slope >= 0:  # (make the step a descent direction)
            along = _along(loss, seed, scale=-scale)
            phi0, slope, _ = along(0.0)
        ref = scipy.optimize.minimize_scalar(lambda e, along=along: along(e)[0], bounds=(0, 50),
                                             method="bounded", options={"xatol": 1e-12})
        found = convex_minimum(along, phi0, slope, first=along(1.0))
        if ref.x < 2.0 ** -10:  # shorter than min_step: the caller backtracks
            assert found is None
            continue
        eta, val, n, ok = found
        assert ok and n <= 20
        assert abs(along(eta)[1]) <= 1e-3 * abs(slope)  # (its stopping rule)
        # ... within (1e-3 φ'(0))² / (2 φ'') of the minimum
        assert val == along(eta)[0] and val <= ref.fun + 1e-6 * abs(slope) ** 2


def test_convex_minimum_takes_the_full_step_exactly_and_refuses_rounding():
    from svmgpu.solvers._linesearch import convex_minimum

    calls = []

    def quadratic(eta, a=1.0):  # φ = (η − a)² − a², minimum at a
        calls.append(eta)
        return (eta - a) ** 2 - a * a, 2 * (eta - a), 2.0

    assert convex_minimum(quadratic, 0.0, -2.0, first=quadratic(1.0)) == (1.0, -1.0, 0, True)
    assert calls == [1.0]  # the full step, read by the caller: no evaluation here
    # one Newton iteration from η = 1 lands on a minimizer at 0.3 or 4
    for a in (0.3, 4.0):
        calls.clear()

        def shifted(eta, a=a):
            return quadratic(eta, a)

        eta, val, n, ok = convex_minimum(shifted, 0.0, -2 * a, first=shifted(1.0))
        assert (eta, n, ok) == (pytest.approx(a), 1, True) and val == pytest.approx(-a * a)
    # a minimizer shorter than min_step, or one that fails Armijo's test: None (backtrack)
    assert convex_minimum(lambda e: quadratic(e, 1e-4), 0.0, -2e-4,
                          first=quadratic(1.0, 1e-4)) is None
    assert convex_minimum(quadratic, -10.0, -2.0, first=quadratic(1.0)) is None


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_loss_along_derivatives_are_the_loss_terms(task):
    """NewtonRows' F along the step: L(η), L'(η), L''(η) and L'(0) against central
    differences of L (ψ's pieces are quadratic: the differences are exact away from knots)."""
    from svmgpu.losses import get_loss
    from svmgpu.solvers.newton import NewtonRows

    rng = np.random.default_rng(7)
    m, r = 150, 6
    P = rng.standard_normal((m, r))
    y = np.sign(rng.standard_normal(m)) if task == "classification" else rng.standard_normal(m)
    s = rng.uniform(0.5, 2.0, m)
    loss = get_loss("huber_hinge" if task == "classification" else "huber_epsilon_insensitive",
                    task=task)
    rows = NewtonRows(P, y, s, task=task)
    rows.start(rng.standard_normal(r))
    d, c, h = rng.standard_normal(r), 0.7, 1e-6
    L1, dL1, ddL1, dL0 = (float(v) for v in rows.trial(d, loss, c, derivatives=True))
    assert L1 == float(rows.trial(d, loss, c))
    for eta in (1.0, 0.37, 0.0):
        L, dL, ddL = (float(v) for v in rows.loss_along(eta, loss, c, derivatives=True))
        if eta == 1.0:
            assert (L, dL, ddL) == (L1, dL1, ddL1)
        Lp, Lm = (float(rows.loss_along(eta + e, loss, c)) for e in (h, -h))
        dLp, dLm = (float(rows.loss_along(eta + e, loss, c, derivatives=True)[1])
                    for e in (h, -h))
        assert L == pytest.approx(float(rows.loss_along(eta, loss, c)), rel=1e-14)
        assert dL == pytest.approx((Lp - Lm) / (2 * h), rel=1e-5, abs=1e-6)
        assert ddL == pytest.approx((dLp - dLm) / (2 * h), rel=1e-5, abs=1e-6)
        if eta == 0.0:
            assert dL0 == pytest.approx(dL, rel=1e-12)


def test_exact_line_search_takes_fewer_steps_to_the_same_minimum():
    """SVR's ε-insensitive Huber loss over random features: the exact line search and
    backtracking reach scipy's minimum; the exact one in fewer Newton steps."""
    from svmgpu.losses import get_loss

    rng = np.random.default_rng(5)
    m, r = 2000, 40
    P = rng.standard_normal((m, r)) / np.sqrt(r)
    y = P @ rng.standard_normal(r) + rng.standard_normal(m)
    loss, C = get_loss("huber_epsilon_insensitive", task="regression"), 5.0

    def objective(z):
        return 0.5 * z @ z + C * np.sum(loss.value(y - P @ z, xp=np))

    ref = scipy.optimize.minimize(
        objective, np.zeros(r), jac=lambda z: z - C * P.T @ loss.grad(y - P @ z, xp=np),
        method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    runs = {how: semismooth_newton(P, y, [loss], C=C, task="regression", tol=1e-10,
                                   presolve=None, line_search=how, xp=NXP)
            for how in ("exact", "backtrack")}
    for res in runs.values():
        assert res.converged
        assert res.objective_history[-1] == pytest.approx(ref.fun, rel=1e-9)
    assert runs["exact"].n_iter < runs["backtrack"].n_iter
    assert min(runs["backtrack"].info["step_sizes"]) < 1.0  # (it backtracked)
    with pytest.raises(ValueError, match="line_search must be"):
        semismooth_newton(P, y, [loss], C=C, task="regression", line_search="wolfe", xp=NXP)


def test_a_crawl_ends_the_iteration_as_stalled():
    """``crawl_steps``: that many accepted steps in a row of at most ``crawl_step`` end the
    iteration unconverged, ``info["stalled"]`` (a caller's continuation takes over); off,
    the same problem converges, and a converged one is not stalled. The backtracking line
    search's steps are at most 1 each, so ``crawl_step=1`` counts them all."""
    from svmgpu.losses import get_loss

    rng = np.random.default_rng(5)
    m, r = 2000, 40
    P = rng.standard_normal((m, r)) / np.sqrt(r)
    y = P @ rng.standard_normal(r) + rng.standard_normal(m)
    loss = get_loss("huber_epsilon_insensitive", task="regression")
    kw = dict(C=5.0, task="regression", tol=1e-10, presolve=None, xp=NXP)
    free = semismooth_newton(P, y, [loss], **kw)
    assert free.converged and not free.info["stalled"] and free.n_iter > 3
    crawled = semismooth_newton(P, y, [loss], crawl_steps=3, crawl_step=1.0,
                                line_search="backtrack", **kw)
    assert crawled.n_iter == 3 and not crawled.converged
    assert crawled.info["stalled"] and crawled.info["stop"] == "crawl"
    assert crawled.objective_history[-1] < crawled.objective_history[0]
    assert not semismooth_newton(P, y, [loss], crawl_steps=3, **kw).info["stalled"]
    for bad in ({"crawl_steps": 0}, {"crawl_steps": 2.5}, {"crawl_steps": True},
                {"crawl_step": 0.0}, {"crawl_step": 2.0}, {"crawl_step": float("nan")}):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=f"{name} must be"):
            semismooth_newton(P, y, [loss], **bad, **kw)


def test_large_reduced_features_stored_in_float32(device, monkeypatch):
    """ReducedSVC with ``dtype=None`` on float64 rows holds K(X, X_J) of
    FLOAT32_FEATURES_BYTES or more in float32, computed in float64: the decision values stay
    the float64 fit's to float32's rounding; below the threshold the features stay float64."""
    import svmgpu.estimators._base as base
    import svmgpu.estimators.reduced as reduced

    seen = []
    real = reduced.reduced_kernel_features

    def spy(*args, **kwargs):
        op = real(*args, **kwargs)
        seen.append(np.dtype(str(op.dtype).split(".")[-1]))
        return op

    monkeypatch.setattr(reduced, "reduced_kernel_features", spy)
    X, y = make_checkerboard(3000, random_state=0)
    Xt, _ = make_checkerboard(500, random_state=1)
    Xd, Xtd = to_device(X, device), to_device(Xt, device)
    kw = dict(C=100.0, gamma=16.0, rank=150, random_state=0, loss="squared_hinge")
    ref = ReducedSVC(dtype="float64", **kw).fit(Xd, y)
    monkeypatch.setattr(base, "FLOAT32_FEATURES_BYTES", 3000 * 150 * 8 + 1)
    ReducedSVC(**kw).fit(Xd, y)
    monkeypatch.setattr(base, "FLOAT32_FEATURES_BYTES", 3000 * 150 * 8)
    clf = ReducedSVC(**kw).fit(Xd, y)
    assert seen == [np.float64, np.float64, np.float32]
    assert host(clf.coef_).dtype == np.float64  # (X's dtype: predictions in float64)
    d, d_ref = host(clf.decision_function(Xtd)), host(ref.decision_function(Xtd))
    assert_allclose(d, d_ref, atol=1e-4 * np.abs(d_ref).max())
    assert np.mean(np.sign(d) == np.sign(d_ref)) >= 0.998
