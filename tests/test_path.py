"""l2-SVM regularization path (solver) and L2SVMPath (estimator)."""

import importlib.util
import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg  # noqa: F401 - load SciPy's BLAS before the thread limit below
import scipy.optimize
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from svmgpu.backend import to_device
from svmgpu.estimators.path import L2SVMPath
from svmgpu.kernels import RBF
from svmgpu.lowrank import nystrom
from svmgpu.solvers._radius import EnclosingBall
from svmgpu.solvers.path import l2svm_path
from svmgpu.testing import assert_allclose, assert_array_equal, host

EPS = 1e-8


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Tiny matrices: on a loaded 2-core machine, threaded BLAS only adds contention."""
    with threadpool_limits(1):
        yield


def _data(m=50, seed=0, imbalance=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.6 * rng.normal(size=m) - 0.3 + imbalance
    return X, np.where(score > 0, 1.0, -1.0)


def _full_factor(X, gamma=0.5):
    """The exact factor L Lᵀ = K + ε/2 I and K."""
    K = RBF(gamma=gamma).block(X, X)
    return np.linalg.cholesky(K + 0.5 * EPS * np.eye(len(X))), K


def _path(P, y, **kw):
    import array_api_compat.numpy as xp

    return l2svm_path(P, y, xp=xp, eps=EPS, **kw)


def _scipy_dual(Hl, y):
    """max −½ αᵀ H(λ) α + 1ᵀα s.t. α >= 0, yᵀα = 0 (Problem 2) by SLSQP."""
    m = len(y)
    res = scipy.optimize.minimize(
        lambda a: 0.5 * a @ Hl @ a - a.sum(), np.zeros(m), jac=lambda a: Hl @ a - 1.0,
        method="SLSQP", bounds=[(0.0, None)] * m,
        constraints=[{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}],
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    return res.x


def _dual(alpha, Hl):
    return alpha.sum() - 0.5 * alpha @ Hl @ alpha


@pytest.mark.parametrize("factor", ["full", "full_gram", "nystrom"])
def test_dual_objective_matches_scipy_and_kkt(factor):
    X, y = _data(40)
    if factor.startswith("full"):
        P, K = _full_factor(X)
        Kr = K                                   # H(λ) = YKY + λ/2 I exactly
    else:
        P = nystrom(X, "rbf", 15, gamma=0.5, random_state=0).P
        Kr = P @ P.T - 0.5 * EPS * np.eye(len(X))  # the approximated problem: RRᵀ + (λ−ε)/2 I
    gram = P @ P.T if factor == "full_gram" else None  # m_E-space solves
    res = _path(P, y, criterion=None, store_alphas=True, gram=gram)
    lams = np.array(res.info["lambdas"])
    alphas = np.asarray(res.info["alphas"])
    H = np.outer(y, y) * Kr
    picked = [j for j in range(len(lams)) if 1e-3 <= lams[j] <= 1e3][::5]
    assert len(picked) >= 3
    for j in picked:
        lam, a, b = lams[j], alphas[j], res.info["intercepts"][j]
        Hl = H + 0.5 * lam * np.eye(len(y))
        ref = _dual(_scipy_dual(Hl, y), Hl)
        ratio = _dual(a, Hl) / ref
        assert 0.99 <= ratio <= 1.0 + 1e-6, (lam, ratio)     # Table 2's criterion
        assert_allclose(res.objective_history[j], _dual(a, Hl), rtol=1e-8)
        # KKT on the partition: α_E > 0, yᵀα = 0, y_i h̃(x_i) = 1 on E, y_i h(x_i) >= 1 on I.
        E = a != 0                                            # α is exactly 0 on I
        assert E.sum() == res.info["n_active"][j]
        assert np.all(a[E] >= -1e-6 / (0.5 * lam))            # α_E >= 0 (margin tol 1e-6)
        assert abs(y @ a) <= 1e-8 * a.sum()
        margins = H @ a + y * b                               # (3)
        assert_allclose((margins + 0.5 * lam * a)[E], 1.0, atol=1e-7)
        assert np.all(margins[~E] >= 1.0 - 1e-6)


@pytest.mark.parametrize("factor", ["full", "full_gram", "nystrom", "nystrom_gram"])
@pytest.mark.parametrize("lam", [5.0, 0.05, 1e-4])
def test_loo_span_equals_brute_force_lssvm_loo(factor, lam):
    """(20): the predicted leave-one-out margins are the exact LOO of the LS-SVM on E."""
    X, y = _data(45, seed=1)
    if factor.startswith("full"):
        P, _ = _full_factor(X)
    else:
        P = nystrom(X, "rbf", 20, gamma=0.5, random_state=1).P
    gram = P @ P.T if factor.endswith("gram") else None      # m_E-space solves
    res = _path(P, y, criterion=None, lambda_min=lam, gram=gram)  # last step is at lam
    assert res.info["best_lambda"] == pytest.approx(lam)
    E = np.flatnonzero(np.asarray(res.info["active"]))
    Hl = np.outer(y, y) * (P @ P.T) + 0.5 * (lam - EPS) * np.eye(len(y))  # R Rᵀ + c I
    brute = []
    for i in E:
        J = E[E != i]
        A = np.zeros((len(J) + 1, len(J) + 1))
        A[0, 1:], A[1:, 0], A[1:, 1:] = y[J], y[J], Hl[np.ix_(J, J)]
        sol = np.linalg.solve(A, np.r_[0.0, np.ones(len(J))])   # LS-SVM (7) on E \ {i}
        brute.append(Hl[i, J] @ sol[1:] + y[i] * sol[0])          # y_i h^i(x_i)
    loo = np.asarray(res.info["loo_margins"])
    assert_allclose(loo[E], brute, rtol=1e-6, atol=1e-6)
    n_err = np.sum(np.asarray(brute) <= 0)
    assert res.info["loo_error"][-1] == pytest.approx(n_err / len(y))


@pytest.mark.parametrize("factor", ["full", "nystrom"])
def test_gram_solves_follow_the_same_path(factor):
    """The m_E × m_E solves from the Gram matrix and the r × r solves of Proposition 3 are
    the same systems: the same breakpoints, partitions, criteria and solutions."""
    X, y = _data(70, seed=4)
    P = _full_factor(X)[0] if factor == "full" else nystrom(X, "rbf", 25, gamma=0.5,
                                                            random_state=2).P
    # (down to λ = 1e-4: below, cond(H) ~ ‖K‖/λ makes both forms differ at 1e-7 and more)
    a = _path(P, y, store_alphas=True, lambda_min=1e-4)
    b = _path(P, y, store_alphas=True, lambda_min=1e-4, gram=P @ P.T)
    assert a.n_iter == b.n_iter
    for key in ("lambdas", "n_active", "loo_error"):
        assert_allclose(b.info[key], a.info[key], rtol=1e-9)
    assert_allclose(b.info["intercepts"], a.info["intercepts"], rtol=1e-6, atol=1e-9)
    assert_allclose(b.info["alphas"], a.info["alphas"], rtol=1e-5, atol=1e-9)
    assert_allclose(b.info["loo_margins"], a.info["loo_margins"], rtol=1e-6,
                               atol=1e-8)
    with pytest.raises(ValueError, match="gram must have shape"):
        _path(P, y, gram=np.eye(3))


def test_starting_point_matches_14():
    X, y = _data(60, seed=2, imbalance=0.8)
    m, m_pos = len(y), int(np.sum(y > 0))
    m_neg = m - m_pos
    assert m_pos != m_neg
    P, _ = _full_factor(X)
    res = _path(P, y, criterion=None, store_alphas=True, lambda_min=1e3)
    lam = res.info["lambdas"][0]
    assert lam == 1e7 and res.info["n_active"][0] == m
    a = np.asarray(res.info["alphas"])[0]
    expected = np.where(y > 0, 4 * m_neg / (m * lam), 4 * m_pos / (m * lam))      # (14)
    assert_allclose(a, expected, rtol=1e-4)
    assert res.info["intercepts"][0] == pytest.approx((m_pos - m_neg) / m, abs=1e-5)  # b_∞


def test_path_monotone_and_breakpoints_consistent():
    X, y = _data(70, seed=3)
    P, K = _full_factor(X)
    tol = 1e-6
    res = _path(P, y, criterion=None, store_alphas=True, tol=tol)
    lams = np.array(res.info["lambdas"])
    assert res.converged and lams[0] == 1e7 and lams[-1] == pytest.approx(1e-6)
    assert np.all(np.diff(lams) < 0)
    assert np.all(lams[1:] / lams[:-1] >= 0.5 - 1e-12)       # the ½ λ cap
    alphas = np.asarray(res.info["alphas"])
    H = np.outer(y, y) * K
    n_changes = 0
    prev = None
    for j in range(len(lams)):
        a, b = alphas[j], res.info["intercepts"][j]
        E = a != 0                                             # α is exactly 0 on I
        margins = H @ a + y * b
        assert np.all(margins[~E] >= 1 - tol)                  # I consistent
        assert np.all(margins[E] <= 1 + tol)                   # E consistent (α >= 0)
        assert res.info["kkt_violation"][j] <= tol
        # the recorded feature-space weights reproduce the same function
        W = np.asarray(res.info["W"])[j]
        assert_allclose((P * y[:, None]) @ W + y * b, margins + 0.5 * EPS * a,
                                   atol=1e-6 * max(1.0, np.abs(margins).max()))
        if prev is not None and np.any(prev != E):
            n_changes += 1
        prev = E
    assert n_changes >= 10                                     # the partition does change
    assert min(res.info["n_active"]) < len(y)
    # 2 % rule: steps that are not capped move at least one predicted breakpoint
    assert len(lams) < 400


def test_low_rank_path_uses_incremental_updates():
    X, y = _data(300, seed=4)
    P = nystrom(X, "rbf", 30, gamma=0.5, random_state=0).P
    res = _path(P, y, criterion=None)
    assert res.converged
    assert res.info["n_gram_updates"] > res.info["n_regram"]
    assert max(res.info["kkt_violation"]) <= 1e-6


def _scipy_radius2(K):
    """max_{β ∈ simplex} Σ βᵢ Kᵢᵢ − βᵀKβ (smallest enclosing ball, dual) by SLSQP."""
    n, d = len(K), np.diag(K)
    return scipy.optimize.minimize(
        lambda b: -(b @ d - b @ K @ b), np.full(n, 1 / n), jac=lambda b: -(d - 2 * K @ b),
        method="SLSQP", bounds=[(0, None)] * n,
        constraints=[{"type": "eq", "fun": lambda b: b.sum() - 1, "jac": lambda b: np.ones(n)}],
        options={"ftol": 1e-15, "maxiter": 1000})


def test_radius_matches_scipy_qp():
    rng = np.random.default_rng(5)
    import array_api_compat.numpy as xp

    P = rng.normal(size=(30, 4))
    rad = EnclosingBall(P, xp=xp, tol=1e-9)
    for c in [1e3, 1.0, 1e-3, 1e-6]:
        K = P @ P.T + c * np.eye(30)
        res = _scipy_radius2(K)
        assert rad(c) == pytest.approx(-res.fun, rel=1e-6)


def test_radius_margin_bound_along_the_path():
    X, y = _data(40, seed=6)
    P = nystrom(X, "rbf", 12, gamma=0.5, random_state=0).P
    res = _path(P, y, criterion="radius_margin", store_alphas=True)
    info = res.info
    alphas = np.asarray(info["alphas"])
    for j in (0, len(alphas) // 2, len(alphas) - 1):
        c = 0.5 * (info["lambdas"][j] - EPS)
        R2 = -_scipy_radius2(P @ P.T + c * np.eye(len(y))).fun
        assert info["radius2"][j] == pytest.approx(R2, rel=1e-3)
        assert info["sum_alpha"][j] == pytest.approx(alphas[j].sum(), rel=1e-10)
        assert info["radius_margin"][j] == pytest.approx(
            4 * info["radius2"][j] * alphas[j].sum() / len(y), rel=1e-12)
    assert info["best"] == int(np.argmin(info["radius_margin"]))


def test_radius_margin_criterion_selects_its_minimum():
    X, y = make_classification(80, 4, random_state=0)
    clf = L2SVMPath(device="cpu", rank=25, random_state=0, criterion="radius_margin").fit(X, y)
    rm = clf.radius_margin_
    assert rm is not None and rm.shape == clf.lambdas_.shape and np.all(rm > 0)
    j = int(np.argmin(rm))
    assert clf.best_lambda_ == pytest.approx(clf.lambdas_[j])
    assert L2SVMPath(device="cpu", rank=25, random_state=0).fit(X, y).radius_margin_ is None


def test_estimator_selects_loo_minimum_and_c_mapping():
    X, y = make_classification(150, 5, random_state=1)
    clf = L2SVMPath(device="cpu", gamma=0.1, rank=None).fit(X, y)
    loo = clf.loo_error_
    j = int(np.flatnonzero(loo == loo.min())[0])               # ties: the largest λ
    assert clf.best_lambda_ == pytest.approx(clf.lambdas_[j])
    assert clf.best_C_ == pytest.approx(1.0 / clf.best_lambda_)
    assert clf.intercept_.shape == (1,) and clf.n_iter_ == len(clf.lambdas_) - 1
    assert clf.converged_ and clf.n_active_[j] == len(clf.support_)
    assert clf.score(X, y) > 0.85
    d = clf.decision_function(X)
    assert_array_equal(clf.predict(X), clf.classes_[(d > 0).astype(int)])


def test_full_rank_nystrom_matches_exact_factor():
    X, y = make_classification(70, 4, random_state=6)
    exact = L2SVMPath(device="cpu", rank=None, gamma=0.2).fit(X, y)
    nys = L2SVMPath(device="cpu", rank=70, gamma=0.2, random_state=0).fit(X, y)
    assert nys.factor_.rank >= 60 and exact.factor_ is None  # numerically dependent rows dropped
    # same path up to the ε shift: the Nyström model at λ is the exact one at λ − ε
    assert_allclose(nys.lambdas_, exact.lambdas_, rtol=1e-6, atol=2 * 1e-8)
    assert_array_equal(nys.n_active_, exact.n_active_)
    assert_array_equal(nys.loo_error_, exact.loo_error_)
    assert_allclose(nys.decision_function(X), exact.decision_function(X), atol=1e-3)


def test_refit_expansion_matches_feature_form_on_active_set():
    X, y = make_classification(120, 4, random_state=2)
    kw = dict(device="cpu", rank=40, random_state=0, gamma=0.2)
    a = L2SVMPath(refit=True, **kw).fit(X, y)
    b = L2SVMPath(refit=False, **kw).fit(X, y)
    assert a.best_lambda_ == b.best_lambda_
    E = a.support_
    assert_allclose(a.decision_function(X[E]), b.decision_function(X[E]), atol=1e-4)
    assert np.mean(a.predict(X) == b.predict(X)) > 0.95


def test_multiclass_one_vs_rest_attributes():
    X, y = load_iris(return_X_y=True)
    clf = L2SVMPath(device="cpu", rank=30, random_state=0).fit(X, y)
    assert len(clf.lambdas_) == 3 and clf.best_lambda_.shape == (3,)
    assert clf.intercept_.shape == (3,) and clf.decision_function(X).shape == (150, 3)
    for k in range(3):
        assert clf.best_lambda_[k] in clf.lambdas_[k]
    assert clf.score(X, y) > 0.9


def test_pickle_roundtrip():
    X, y = make_classification(80, 4, random_state=5)
    for kw in ({"rank": None}, {"rank": 20, "random_state": 0, "refit": False}):
        clf = L2SVMPath(device="cpu", **kw).fit(X, y)
        clf2 = pickle.loads(pickle.dumps(clf))
        assert_array_equal(clf2.decision_function(X), clf.decision_function(X))


def test_float32_is_kept():
    X, y = make_classification(60, 4, random_state=3)
    clf = L2SVMPath(device="cpu", rank=None).fit(X.astype(np.float32), y)
    assert clf.fit_dtype_ == "float32" and clf.models_[0]["dual_coef"].dtype == np.float32
    assert clf.decision_function(X.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("params,X,y,match", [
    ({"lambda_min": 1.0, "lambda_max": 1.0}, None, None, "lambda_min must be smaller"),
    ({"lambda_min": 10.0, "lambda_max": 1.0}, None, None, "lambda_min must be smaller"),
    ({"eps": 1e-3}, None, None, "eps must be smaller than lambda_min"),
    ({"lambda_min": -1.0}, None, None, "'lambda_min' parameter .* range"),
    ({"criterion": "aic"}, None, None, "'criterion' parameter .* among"),
    ({"refit": "yes"}, None, None, "'refit' parameter .*'bool'"),
    ({}, np.ones((4, 2)), [1, 1, 1, 1], "one class"),
    ({"rank": 0}, None, None, "rank"),
])
def test_bad_input(params, X, y, match):
    if X is None:
        X, y = make_classification(30, 4, random_state=0)
    with pytest.raises(ValueError, match=match):
        L2SVMPath(device="cpu", **params).fit(X, y)


def test_solver_bad_labels():
    P = np.eye(4)
    with pytest.raises(ValueError, match="only the labels"):
        _path(P, np.array([0.0, 1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="one class"):
        _path(P, np.ones(4))


def test_full_kernel_memory_error():
    X, y = make_classification(200, 4, random_state=0)
    with pytest.raises(MemoryError, match="rank"):
        L2SVMPath(device="cpu", rank=None, memory_budget=1000).fit(X, y)


def test_refit_memory_error_points_to_refit_false():
    X, y = make_classification(150, 4, flip_y=0.2, random_state=0)
    kw = dict(device="cpu", rank=10, random_state=0, memory_budget=60_000)
    calls = []
    import svmgpu.estimators.path as path_module

    real = path_module.l2svm_path
    path_module.l2svm_path = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        with pytest.raises(MemoryError, match="refit=False"):
            L2SVMPath(**kw).fit(X, y)
    finally:
        path_module.l2svm_path = real
    assert not calls  # refused before following the path (was: after it, 115 s at 32k points)
    assert L2SVMPath(refit=False, **kw).fit(X, y).score(X, y) > 0.6


def test_max_iter_warns():
    X, y = make_classification(40, 4, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        clf = L2SVMPath(device="cpu", max_iter=3).fit(X, y)
    assert not clf.converged_ and clf.n_iter_ == 3


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None,
                    reason="matplotlib is installed")
def test_plot_path_without_matplotlib():
    X, y = make_classification(40, 4, random_state=0)
    clf = L2SVMPath(device="cpu", rank=10, random_state=0).fit(X, y)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        clf.plot_path()


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is not installed")
def test_plot_path_with_matplotlib():
    import matplotlib

    matplotlib.use("Agg")
    X, y = make_classification(40, 4, random_state=0)
    clf = L2SVMPath(device="cpu", rank=10, random_state=0, criterion="radius_margin").fit(X, y)
    ax = clf.plot_path()
    assert len(ax.get_lines()) == 4 and ax.get_xscale() == "log"


@parametrize_with_checks(
    [L2SVMPath(device="cpu", rank=30, random_state=0)],
    # The check fits class_weight={0: 1000, 1: 1e-4} on noisy blobs and expects a fixed-C SVM
    # to predict class 0 almost everywhere. L2SVMPath picks λ (C) itself, by the weighted
    # leave-one-out error: scaling every weight is a shift along the path, so only the ratio
    # counts, and among the λ without class-0 errors the criterion still prefers the one with
    # the fewest class-1 errors (a small λ: class 1's C = 1e-4/λ is 50 there).
    expected_failed_checks=lambda est: {
        "check_class_weight_classifiers": "λ is chosen by the weighted leave-one-out error, "
                                          "not fixed: only the ratio of the weights matters"},
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("rank", [None, 20])
def test_numpy_and_cupy_agree(device, rank):
    X, y = make_classification(90, 4, random_state=4)
    cpu = L2SVMPath(device="cpu", rank=rank, random_state=0, gamma=0.3).fit(X, y)
    est = L2SVMPath(device=device, rank=rank, random_state=0, gamma=0.3)
    est.fit(to_device(X, device), y)
    assert_allclose(est.lambdas_, cpu.lambdas_, rtol=1e-6)
    assert_array_equal(est.n_active_, cpu.n_active_)
    assert_allclose(est.loo_error_, cpu.loo_error_, atol=1.5 / len(y))
    assert est.best_lambda_ == pytest.approx(cpu.best_lambda_, rel=1e-6)
    out = est.decision_function(to_device(X, device))
    assert type(out) is type(to_device(X, device))
    assert_allclose(host(out), cpu.decision_function(X), atol=1e-5)
    assert_allclose(est.decision_function(X), cpu.decision_function(X), atol=1e-5)


# ------------------------------------------------------------------------- sample weights
def _weighted_factor(X, w, gamma=0.5):
    """The exact weighted factor L Lᵀ = K + ε/2 D⁻¹ (rows of weight 0: ε/2) and K."""
    K = RBF(gamma=gamma).block(X, X)
    dinv = 1.0 / np.where(w > 0, w, 1.0)
    return np.linalg.cholesky(K + 0.5 * EPS * np.diag(dinv)), K


@pytest.mark.parametrize("gram", [False, True], ids=["smw", "gram"])
@pytest.mark.parametrize("criterion", [None, "loo_span", "radius_margin"])
def test_integer_weights_follow_the_path_of_repeated_rows(gram, criterion):
    """An integer weight k is k copies of the row at every step: the same breakpoints (the 2 %
    rule counts weight), leave-one-out errors (one copy left out at a time), radius-margin
    bound, selected λ and classifier, to rounding; a weight 0 is a removed row."""
    X, y = _data(40, seed=11)
    w = np.random.default_rng(11).integers(0, 4, size=len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    L, K = _weighted_factor(X, w)
    Lr = np.linalg.cholesky(K[np.ix_(rep, rep)] + 0.5 * EPS * np.eye(len(rep)))
    kw = dict(criterion=criterion, lambda_min=1e-3, store_alphas=True)
    a = _path(L, y, sample_weight=w, gram=L @ L.T if gram else None, **kw)
    b = _path(Lr, y[rep], gram=Lr @ Lr.T if gram else None, **kw)
    assert_allclose(a.info["lambdas"], b.info["lambdas"], rtol=1e-10)
    assert_array_equal(a.info["loo_error"], b.info["loo_error"])  # the same counts
    assert_allclose(a.info["intercepts"], b.info["intercepts"], rtol=1e-8, atol=1e-10)
    assert_allclose(a.objective_history, b.objective_history, rtol=1e-9)
    if criterion == "radius_margin":
        assert_allclose(a.info["radius_margin"], b.info["radius_margin"], rtol=1e-6)
    assert a.info["best"] == b.info["best"]
    # the multipliers of the copies add up to the weighted row's (α = s ξ / c)
    A_rep = np.zeros((len(a.info["lambdas"]), len(y)))
    np.add.at(A_rep.T, rep, np.asarray(b.info["alphas"]).T)
    assert_allclose(np.asarray(a.info["alphas"]), A_rep, rtol=1e-7, atol=1e-9)
    assert not np.any(np.asarray(a.info["alphas"])[:, w == 0])
    assert not np.any(np.asarray(a.info["active"])[w == 0])
    Xt = np.random.default_rng(12).normal(size=(30, 2))
    f = lambda Z, yy, res: RBF(0.5).block(Xt, Z) @ (np.asarray(res.coef) * yy) \
        + res.info["intercept"]  # noqa: E731
    assert_allclose(f(X, y, a), f(X[rep], y[rep], b), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("factor", ["full", "nystrom"])
def test_weighted_solution_matches_scipy_and_kkt(factor):
    """Fractional weights at fixed λ: the path's α solves the weighted Problem 2,
    ``max −½ αᵀ(YKY + c D⁻¹)α + 1ᵀα`` s.t. α >= 0, yᵀα = 0 (SLSQP), and its KKT conditions,
    ``y h(x) + c α / s = 1`` on E (1) and ``y h(x) >= 1`` on I, hold."""
    X, y = _data(36, seed=13)
    w = np.random.default_rng(13).uniform(0.2, 3.0, size=len(y))
    if factor == "full":  # L Lᵀ = K + ε/2 D⁻¹: the systems are YKY + λ/2 D⁻¹ exactly
        P, K = _weighted_factor(X, w)
        Kr, shift = K, 0.0
    else:  # the ε term is not representable: the model at λ is that of P Pᵀ at λ − ε
        P = nystrom(X, "rbf", 15, gamma=0.5, random_state=0).P
        Kr, shift = P @ P.T, EPS
    for lam in (1.0, 0.03):
        res = _path(P, y, sample_weight=w, criterion=None, lambda_min=lam)
        c = 0.5 * (lam - shift)
        Hl = np.outer(y, y) * Kr + c * np.diag(1.0 / w)
        ref = _scipy_dual(Hl, y)
        a, b = np.asarray(res.coef), res.info["intercept"]
        assert _dual(a, Hl) >= _dual(ref, Hl) - 1e-9 * abs(_dual(ref, Hl))
        assert_allclose(a, ref, rtol=1e-4, atol=1e-5 * a.max())
        E = np.asarray(res.info["active"])
        margins = np.outer(y, y) * Kr @ a + y * b
        assert_allclose((margins + c * a / w)[E], 1.0, atol=1e-7)
        assert np.all(margins[~E] >= 1.0 - 1e-6) and abs(y @ a) <= 1e-8 * a.sum()


@pytest.mark.parametrize("gram", [False, True], ids=["smw", "gram"])
def test_weighted_loo_equals_brute_force_unit_removal(gram):
    """(20) with weights: the predicted leave-one-out margin of i is that of the LS-SVM on E
    with one unit of i's weight removed (all of it when sᵢ <= 1), solved directly."""
    X, y = _data(40, seed=14)
    w = np.random.default_rng(14).choice([0.3, 0.8, 1.0, 1.6, 2.0, 3.5], size=len(y))
    P = nystrom(X, "rbf", 18, gamma=0.5, random_state=3).P
    lam = 0.05
    res = _path(P, y, sample_weight=w, criterion=None, lambda_min=lam,
                gram=P @ P.T if gram else None)
    c = 0.5 * (lam - EPS)
    E = np.flatnonzero(np.asarray(res.info["active"]))
    H = np.outer(y, y) * (P @ P.T)
    brute, errors = [], 0.0
    for i in E:
        s = w[E].copy()
        k = int(np.flatnonzero(E == i)[0])
        s[k] -= min(s[k], 1.0)
        J = E[s > 0]
        sJ = s[s > 0]
        A = np.zeros((len(J) + 1, len(J) + 1))
        A[0, 1:], A[1:, 0] = y[J], y[J]
        A[1:, 1:] = H[np.ix_(J, J)] + c * np.diag(1.0 / sJ)
        sol = np.linalg.solve(A, np.r_[0.0, np.ones(len(J))])   # the LS-SVM (7) without it
        brute.append(H[i, J] @ sol[1:] + y[i] * sol[0])           # y_i h^i(x_i) (21)
        errors += w[i] * (brute[-1] <= 0)
    assert_allclose(np.asarray(res.info["loo_margins"])[E], brute, rtol=1e-6, atol=1e-6)
    assert res.info["loo_error"][-1] == pytest.approx(errors / w.sum())


def test_weighted_radius_matches_scipy_qp():
    """The ball of the weighted points: ``max Σ βᵢ(‖pᵢ‖² + c) − ‖Pᵀβ‖² − c Σ βᵢ²/sᵢ``."""
    import array_api_compat.numpy as xp

    rng = np.random.default_rng(15)
    P = rng.normal(size=(30, 4))
    s = rng.uniform(0.2, 4.0, size=30)
    rad = EnclosingBall(P, xp=xp, weights=s, tol=1e-9)
    for c in [1e3, 1.0, 1e-3, 1e-6]:
        K = P @ P.T + c * np.diag(1.0 / s)
        d = np.diag(P @ P.T) + c
        res = scipy.optimize.minimize(
            lambda b, d=d, K=K: -(b @ d - b @ K @ b), np.full(30, 1 / 30),
            jac=lambda b, d=d, K=K: -(d - 2 * K @ b), method="SLSQP", bounds=[(0, None)] * 30,
            constraints=[{"type": "eq", "fun": lambda b: b.sum() - 1,
                          "jac": lambda b: np.ones(30)}],
            options={"ftol": 1e-15, "maxiter": 1000})
        assert rad(c) == pytest.approx(-res.fun, rel=1e-6)


@pytest.mark.parametrize("w,match", [
    (-np.ones(4), "non-negative"),
    (np.array([1.0, np.nan, 1.0, 1.0]), "NaN"),
    (np.ones(3), "shape"),
    (np.array([1.0, 0.0, 1.0, 0.0]), "one class"),
])
def test_solver_bad_weights(w, match):
    with pytest.raises(ValueError, match=match):
        _path(np.eye(4), np.array([1.0, -1.0, 1.0, -1.0]), sample_weight=w)


@pytest.mark.parametrize("kw", [{"rank": None}, {"rank": 200, "random_state": 0},
                                {"rank": 200, "random_state": 0, "refit": False},
                                {"rank": None, "criterion": "radius_margin"}],
                         ids=["exact", "nystrom-refit", "nystrom-features", "radius"])
def test_estimator_integer_weights_equal_repeated_rows(kw):
    """Weighted and repeated fits follow the same path and select the same λ: the decision
    values agree to rounding (the Nyström factor of either is K itself at rank >= m)."""
    X, y = make_classification(80, 5, random_state=1)
    w = np.random.default_rng(0).integers(0, 4, size=len(y))
    rep = np.repeat(np.arange(len(y)), w)
    a = L2SVMPath(device="cpu", **kw).fit(X, y, sample_weight=w)
    b = L2SVMPath(device="cpu", **kw).fit(X[rep], y[rep])
    assert a.kernel_.gamma == pytest.approx(b.kernel_.gamma, rel=1e-12)
    assert_allclose(a.lambdas_, b.lambdas_, rtol=1e-9)
    assert_array_equal(a.loo_error_, b.loo_error_)
    assert a.best_lambda_ == pytest.approx(b.best_lambda_, rel=1e-9)
    assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-9, atol=1e-9)
    assert_array_equal(a.support_, np.unique(rep[b.support_]))
    assert_array_equal(a.n_support_, [np.sum(y[a.support_] == k) for k in (0, 1)])


@pytest.mark.parametrize("rank", [None, 30])
def test_estimator_zero_weights_equal_dropped_rows(rank):
    X, y = make_classification(90, 4, random_state=7)
    w = np.random.default_rng(7).uniform(0.3, 2.0, size=len(y))
    w[::4] = 0.0
    keep = w > 0
    a = L2SVMPath(device="cpu", rank=rank, random_state=0).fit(X, y, sample_weight=w)
    b = L2SVMPath(device="cpu", rank=rank, random_state=0).fit(X[keep], y[keep],
                                                               sample_weight=w[keep])
    assert_allclose(a.lambdas_, b.lambdas_, rtol=1e-9)
    assert_array_equal(a.loo_error_, b.loo_error_)
    # The kernel blocks of 90 and 68 rows round differently (BLAS blocking), and the path's
    # solves amplify that by ‖K‖/λ: 1e-7 relative at the chosen λ.
    assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-6, atol=1e-6)
    assert_array_equal(a.support_, np.flatnonzero(keep)[b.support_])


def test_class_weight_balanced_equals_explicit_weights():
    X, y = make_classification(120, 4, weights=[0.8], random_state=8)
    sw = np.random.default_rng(8).uniform(0.5, 1.5, size=len(y))
    per_class = len(y) / (2 * np.bincount(y))
    a = L2SVMPath(device="cpu", rank=None, class_weight="balanced").fit(X, y, sample_weight=sw)
    b = L2SVMPath(device="cpu", rank=None).fit(X, y, sample_weight=sw * per_class[y])
    assert_allclose(a.class_weight_, per_class)
    assert a.best_lambda_ == b.best_lambda_
    assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-12, atol=1e-12)
    plain = L2SVMPath(device="cpu", rank=None).fit(X, y, sample_weight=sw)
    assert not np.allclose(plain.decision_function(X), a.decision_function(X), atol=1e-3)


def test_multiclass_n_support_and_weighted_probability():
    X, y = load_iris(return_X_y=True)
    w = np.random.default_rng(9).uniform(0.2, 2.0, size=len(y))
    w[:10] = 0.0
    clf = L2SVMPath(device="cpu", rank=30, random_state=0, probability=True)
    clf.fit(X, y, sample_weight=w)
    union = np.unique(np.concatenate(clf.support_))
    assert not set(union.tolist()) & set(range(10))
    assert_array_equal(clf.n_support_, [np.sum(y[union] == k) for k in range(3)])
    P = clf.predict_proba(X)
    assert P.shape == (150, 3) and np.allclose(P.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize("w,match", [
    (-np.ones(30), "non-negative"),
    (np.r_[np.nan, np.ones(29)], "NaN|infinity"),
    (np.ones(29), "shape"),
])
def test_estimator_bad_weights(w, match):
    X, y = make_classification(30, 4, random_state=0)
    with pytest.raises(ValueError, match=match):
        L2SVMPath(device="cpu").fit(X, y, sample_weight=w)
