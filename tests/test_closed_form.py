"""Closed-form least-squares SVMs: LSSVC, PSVC, WPSVC and their one least-squares core."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from svmgpu.backend import get_device, to_device
from svmgpu.estimators.closed_form import LSSVC, PSVC, WPSVC
from svmgpu.estimators.reduced import ReducedSVC
from svmgpu.solvers.closed_form import center_distance_weights, least_squares
from svmgpu.solvers.reduced import newton_reduced
from svmgpu.testing import assert_allclose, assert_array_equal, host

NXP = get_device("cpu").xp


def _binary(m=150, d=4, seed=0):
    X, y = make_classification(m, d, n_informative=3, n_redundant=0, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


def _two_blobs(n, seed, outliers=False):
    """The WPSVM paper's 2-D example: two classes, plus noise far from one of them."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal([2, 2], 1.0, (n, 2)), rng.normal([-2, -2], 1.0, (n, 2))])
    y = np.r_[np.ones(n), -np.ones(n)]
    if outliers:  # the noise points of the paper's Fig. 2, labelled as the far class
        X = np.vstack([X, [[-20, -20], [-18, -10], [-19, -20]]])
        y = np.r_[y, np.ones(3)]
    return X, y


def _psvm_dense(A, y, nu, s=None):
    """PSVM / WPSVM by the m × m formulas: u = (S⁻²/ν + HHᵀ)⁻¹ e, w = AᵀDu, r = −eᵀDu
    ((7), (8), (6); with S: (18)/(19) with the inverse)."""
    m = A.shape[0]
    H = y[:, None] * np.hstack([A, -np.ones((m, 1))])
    Sinv2 = np.eye(m) if s is None else np.diag(1.0 / s**2)
    u = np.linalg.solve(Sinv2 / nu + H @ H.T, np.ones(m))
    return A.T @ (y * u), -np.sum(y * u)


# ----------------------------------------------------------------------------- the core
def test_psvc_linear_equals_dense_closed_form_7():
    X, y = _binary()
    C = 2.5
    clf = PSVC(C=C, device="cpu").fit(X, y)
    w, r = _psvm_dense(X, y, nu=2 * C)
    assert_allclose(clf.coef_[0], w, rtol=1e-10, atol=1e-12)
    assert_allclose(clf.intercept_[0], -r, rtol=1e-10, atol=1e-12)
    assert_allclose(clf.decision_function(X), X @ w - r, rtol=1e-9, atol=1e-10)
    assert clf.support_vectors_ is None and clf.n_iter_[0] == 1


def test_psvc_nonlinear_equals_reduced_kernel_13_16():
    X, y = _binary(seed=1)
    C, gamma = 1.5, 0.2
    clf = PSVC(C=C, kernel="rbf", gamma=gamma, rank=40, random_state=0, device="cpu").fit(X, y)
    Kbar = rbf_kernel(X, X[clf.support_], gamma=gamma)  # K(A, Ā)
    G = y[:, None] * np.hstack([Kbar, -np.ones((len(y), 1))])  # (14)
    z = np.linalg.solve(np.eye(len(y)) / (2 * C) + G @ G.T, np.ones(len(y)))  # (13)
    u, r = Kbar.T @ (y * z), -np.sum(y * z)
    Xt = X[:20] + 0.1
    assert_allclose(clf.decision_function(Xt),
                               rbf_kernel(Xt, X[clf.support_], gamma=gamma) @ u - r, atol=1e-8)


def test_wpsvc_linear_equals_dense_weighted_formulas_and_weights_22():
    X, y = _binary(seed=2)
    C, q = 0.7, 0.5
    clf = WPSVC(C=C, q=q, device="cpu").fit(X, y)
    s = np.empty(len(y))
    for c in (-1, 1):
        idx = y == c
        d = np.linalg.norm(X[idx] - X[idx].mean(axis=0), axis=1)
        s[idx] = 1 - d / (d.max() + q)                                        # (22)
    assert_allclose(clf.sample_weights_, s, rtol=1e-12)
    assert np.all((s > 0) & (s <= 1))
    w, r = _psvm_dense(X, y, nu=2 * C, s=s)
    assert_allclose(clf.coef_[0], w, rtol=1e-9, atol=1e-11)
    assert_allclose(clf.intercept_[0], -r, rtol=1e-9, atol=1e-11)
    # user weights multiply sᵢ²; an all-ones weight changes nothing
    same = WPSVC(C=C, q=q, device="cpu").fit(X, y, sample_weight=np.ones(len(y)))
    assert_allclose(same.coef_, clf.coef_, rtol=1e-12)


def test_wpsvc_beats_psvc_on_the_noisy_2d_example():
    Xt, yt = _two_blobs(2000, seed=100)
    for seed in range(3):
        X, y = _two_blobs(40, seed)
        Xn, yn = _two_blobs(40, seed, outliers=True)
        clean = PSVC(C=1.0, device="cpu").fit(X, y).score(Xt, yt)
        psvc = PSVC(C=1.0, device="cpu").fit(Xn, yn).score(Xt, yt)
        wpsvc = WPSVC(C=1.0, q=1.0, device="cpu").fit(Xn, yn)
        assert clean > 0.99 and psvc < 0.96          # three outliers tilt PSVM's plane ...
        assert wpsvc.score(Xt, yt) > 0.99            # ... but not WPSVM's
        assert wpsvc.score(Xt, yt) - psvc > 0.03
        assert np.all(wpsvc.sample_weights_[-3:] < 0.3)  # the outliers weigh little


def test_lssvc_dual_equals_kernel_ridge_and_weights():
    X, y = _binary(seed=3)
    C, gamma = 4.0, 0.3
    sw = np.random.default_rng(0).uniform(0.2, 2.0, len(y))
    clf = LSSVC(C=C, gamma=gamma, device="cpu").fit(X, y, sample_weight=sw)
    kr = KernelRidge(alpha=1 / (2 * C), kernel="rbf", gamma=gamma).fit(X, y, sample_weight=sw)
    assert clf.solver_ == "dual"
    assert_allclose(clf.decision_function(X), kr.predict(X), rtol=1e-8, atol=1e-9)
    # the offset regularized by ½b² is the kernel k + 1
    clf = LSSVC(C=C, gamma=gamma, fit_intercept=True, device="cpu").fit(X, y)
    kr = KernelRidge(alpha=1 / (2 * C), kernel=lambda a, b: np.exp(-gamma * np.sum((a - b) ** 2))
                     + 1.0).fit(X, y)
    assert_allclose(clf.decision_function(X[:30]), kr.predict(X[:30]), atol=1e-8)
    assert clf.intercept_[0] == pytest.approx(np.sum(clf.coef_[0]))


def test_lssvc_reduced_equals_newton_least_squares_rkhs():
    X, y = _binary(seed=4)
    kw = dict(C=3.0, gamma=0.3, rank=40, random_state=0, device="cpu")
    a = LSSVC(**kw).fit(X, y)
    b = ReducedSVC(loss="least_squares", regularizer="rkhs", **kw).fit(X, y)
    assert a.solver_ == "reduced"
    assert_array_equal(a.support_, b.support_)
    assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-7)
    # with J = all points and a well-conditioned kernel the reduced (21) is the dual (8)/(9)
    full = LSSVC(C=3.0, gamma=5.0, device="cpu").fit(X, y)
    red = LSSVC(C=3.0, gamma=5.0, rank=len(y), device="cpu").fit(X, y)
    assert_allclose(red.decision_function(X), full.decision_function(X), atol=1e-5)


def test_core_primal_matches_newton_and_reuses_the_factor():
    X, y = _binary(seed=5)
    F = rbf_kernel(X, X[:30], gamma=0.5)
    s = np.random.default_rng(1).uniform(0.5, 1.5, len(y))
    a = least_squares(y, C=2.0, P=F, sample_weight=s, xp=NXP)
    b = newton_reduced(F, y, loss="least_squares", C=2.0, sample_weight=s, xp=NXP)
    assert_allclose(a.coef, b.coef, rtol=1e-9, atol=1e-10)
    y2 = -y
    c = least_squares(y2, C=2.0, P=F, sample_weight=s, factor=a.info["factor"], xp=NXP)
    d = least_squares(y2, C=2.0, P=F, sample_weight=s, xp=NXP)
    assert_allclose(c.coef, d.coef, rtol=1e-12)
    with pytest.raises(ValueError, match="exactly one"):
        least_squares(y, C=1.0, xp=NXP)


def test_center_distance_weights_sample_weight_and_errors():
    X, y = _binary(seed=6)
    sw = np.ones(len(y))
    sw[:10] = 0
    s = center_distance_weights(X, y, q=1.0, sample_weight=sw, xp=NXP)
    keep = sw > 0
    s_keep = center_distance_weights(X[keep], y[keep], q=1.0, xp=NXP)
    assert_allclose(s[keep], s_keep, rtol=1e-12)
    assert np.all(s >= 0)
    with pytest.raises(ValueError, match="q must"):
        center_distance_weights(X, y, q=0.0, xp=NXP)
    with pytest.raises(ValueError, match="class"):
        center_distance_weights(X, np.ones(len(y)), q=1.0, xp=NXP)


def test_multiclass():
    X, y = load_iris(return_X_y=True)
    for est in (LSSVC(device="cpu"), LSSVC(rank=60, multi_class="ovo", random_state=0,
                                           device="cpu"),
                PSVC(kernel="rbf", random_state=0, device="cpu"),
                WPSVC(kernel="rbf", multi_class="ovo", random_state=0, device="cpu")):
        est.fit(X, y)
        assert est.score(X, y) > 0.94 and est.coef_.shape[0] == 3
    assert len(est.sample_weights_) == 3 and est.sample_weights_[0].shape == (100,)


# ------------------------------------------------------------------------- errors, checks
@pytest.mark.parametrize("est,match", [
    (WPSVC(q=0.0), "'q' parameter of WPSVC must be a float in the range"),
    (WPSVC(q=-1.0), "'q' parameter of WPSVC must be a float in the range"),
    (LSSVC(reduced_set="greedy"), "reduced_set"),
    (LSSVC(fit_intercept=1), "fit_intercept"),
    (PSVC(C=0.0), "'C' parameter of PSVC must be a float in the range"),
])
def test_bad_input(est, match):
    X, y = _binary()
    with pytest.raises(ValueError, match=match):
        est.set_params(device="cpu").fit(X, y)


def test_lssvc_full_kernel_over_budget_says_what_to_do():
    X, y = _binary()
    with pytest.raises(MemoryError, match="rank="):
        LSSVC(rank=None, memory_budget=10_000, device="cpu").fit(X, y)


def _xfail(est):
    out = {}
    if not (est.kernel == "linear" or (isinstance(est, LSSVC) and est.rank in (None, "auto"))):
        for data in ("dense", "sparse"):  # the exact dual passes
            out[f"check_sample_weight_equivalence_on_{data}_data"] = (
                "the reduced set is drawn among the rows and repeated rows repeat columns of "
                "K(X, X_J), to which GSVM's ½‖u‖² and the RKHS ridge are not invariant")
    if est.kernel == "rbf" and est.gamma == 0.5:
        out["check_class_weight_classifiers"] = (
            "gamma=0.5 on the check's unscaled blobs (std 20): the RBF kernel matrix is nearly "
            "the identity, so the least-squares model interpolates the training points and is "
            "~0 at the test points, whatever the class weights")
    return out


@parametrize_with_checks(
    [LSSVC(device="cpu", gamma=0.5), LSSVC(rank=4, fit_intercept=True, device="cpu"),
     PSVC(device="cpu"), PSVC(kernel="rbf", multi_class="ovo", device="cpu"),
     WPSVC(device="cpu")],
    expected_failed_checks=lambda est: _xfail(est))
def test_sklearn_compatible(estimator, check):
    check(estimator)




@pytest.mark.parametrize("cls,kw", [
    (LSSVC, dict(gamma=0.3)), (LSSVC, dict(gamma=0.3, rank=30, random_state=0)),
    (PSVC, {}), (WPSVC, dict(kernel="rbf", gamma=0.3, rank=30, random_state=0)),
])
def test_numpy_and_device_agree(device, cls, kw):
    X, y = _binary(seed=7)
    ref = cls(device="cpu", **kw).fit(X, y)
    clf = cls(device=device, **kw).fit(to_device(X, device), y)
    out = clf.decision_function(to_device(X, device))
    assert_allclose(out, ref.decision_function(X), device=device, dtype="float64", rtol=1e-7,
                    atol=1e-7)
    assert_allclose(host(clf.coef_), ref.coef_, rtol=1e-7, atol=1e-7)


def test_n_support_counts_the_expansion_points_per_class():
    """Issue 13, item 3: ``n_support_`` wherever the model has support vectors: the dual
    LS-SVM's every row, a reduced set J (LSSVC, PSVC, ReducedSVC) counted per class; the
    linear PSVM has none (``support_`` and ``n_support_`` are not set)."""
    from svmgpu.datasets import make_checkerboard

    X, y = make_checkerboard(800, random_state=0)
    for est in (LSSVC(C=10.0, gamma=16.0, rank=None), LSSVC(C=10.0, gamma=16.0, rank=60,
                                                             random_state=0),
                PSVC(C=10.0, kernel="rbf", gamma=16.0, rank=60, random_state=0),
                ReducedSVC(C=10.0, gamma=16.0, rank=60, random_state=0)):
        est.fit(X, y)
        sup = np.asarray(est.support_)
        assert_array_equal(est.n_support_, [np.sum(y[sup] == -1), np.sum(y[sup] == 1)])
        assert est.n_support_.sum() == (800 if est.rank is None else 60)
    lin = PSVC(C=10.0).fit(X, y)
    assert lin.support_ is None and not hasattr(lin, "n_support_")
