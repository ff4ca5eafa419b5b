"""predict_proba (issue 13): Platt's sigmoid on held-out decision values, pairwise coupling for
one-vs-one, normalised one-vs-rest; compared with scikit-learn's SVC(probability=True) and
CalibratedClassifierCV, with scipy.optimize on Platt's objective, and with the exact answer of
the coupling on consistent pairwise probabilities."""

import warnings

import numpy as np
import pytest
import scipy.optimize
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_iris, make_classification
from sklearn.metrics import log_loss
from sklearn.svm import SVC

from svmgpu import LSSVC, PSVC, WPSVC, GreedySVC, L2SVMPath, ReducedSVC, UniSVC
from svmgpu.backend import to_device
from svmgpu.estimators._probability import _couple, class_probabilities, fit_sigmoid
from svmgpu.testing import assert_allclose, host

NXP = np  # host reference namespace


def _binary_data():
    X, y = make_classification(900, 8, n_informative=5, flip_y=0.1, random_state=0)
    return X[:600], y[:600], X[600:], y[600:]


def _svc_proba(X, y, Xt, **kw):
    with warnings.catch_warnings():  # scikit-learn >= 1.9 deprecates probability=True
        warnings.simplefilter("ignore", FutureWarning)
        return SVC(probability=True, random_state=0, **kw).fit(X, y).predict_proba(Xt)


CLASSIFIERS = [
    lambda: UniSVC(C=1.0, gamma=0.1, rank=None, random_state=0, probability=True),
    lambda: ReducedSVC(C=1.0, gamma=0.1, rank=150, random_state=0, probability=True),
    lambda: LSSVC(gamma=0.1, probability=True),
    lambda: PSVC(kernel="rbf", gamma=0.1, probability=True),
    lambda: WPSVC(kernel="rbf", gamma=0.1, probability=True),
    lambda: GreedySVC(gamma=0.1, probability=True),
    lambda: L2SVMPath(gamma=0.1, rank=80, random_state=0, probability=True),
]


@pytest.mark.parametrize("make", CLASSIFIERS)
def test_binary_probabilities_are_as_good_as_svc_and_calibrated_cv(make):
    X, y, Xt, yt = _binary_data()
    ref = log_loss(yt, _svc_proba(X, y, Xt, gamma=0.1))
    clf = make().fit(X, y)
    P = clf.predict_proba(Xt)
    assert P.shape == (300, 2) and np.all(P >= 0)
    assert_allclose(P.sum(axis=1), np.ones(300), rtol=1e-12)
    assert_allclose(clf.predict_log_proba(Xt), np.log(P), rtol=1e-12)
    # the second column is classes_[1], the model's positive class
    assert np.mean((P[:, 1] > 0.5) == (clf.decision_function(Xt) > 0)) >= 0.97
    ours = log_loss(yt, P)
    assert ours <= ref + 0.03, (ours, ref)  # SVC: 0.358; ours 0.348-0.364 on this split
    base = clf.set_params(probability=False)
    cal = CalibratedClassifierCV(base, method="sigmoid", cv=5).fit(X, y)
    assert abs(ours - log_loss(yt, cal.predict_proba(Xt))) < 0.03


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_multiclass_probabilities_sum_to_one_and_match_svc(multi_class):
    X, y = load_iris(return_X_y=True)
    perm = np.random.default_rng(0).permutation(150)
    X, y = X[perm], np.array(["setosa", "versicolor", "virginica"])[y[perm]]
    clf = UniSVC(gamma=0.5, rank=None, multi_class=multi_class, random_state=0,
                 probability=True).fit(X[:100], y[:100])
    P = clf.predict_proba(X[100:])
    assert P.shape == (50, 3) and np.all(P >= 0)
    assert_allclose(P.sum(axis=1), np.ones(50), rtol=1e-12)
    assert list(clf.classes_) == ["setosa", "versicolor", "virginica"]
    assert np.mean(clf.classes_[P.argmax(axis=1)] == clf.predict(X[100:])) >= 0.96
    ref = log_loss(y[100:], _svc_proba(X[:100], y[:100], X[100:], gamma=0.5))
    assert log_loss(y[100:], P, labels=clf.classes_) <= ref + 0.03  # SVC 0.115; ours 0.095 / 0.115


def test_platt_sigmoid_minimizes_its_objective():
    """Lin, Lin and Weng's Newton method against scipy.optimize on the same objective (the
    negative log-likelihood of the regularized targets), weighted, with a zero-weight row."""
    rng = np.random.default_rng(3)
    f = rng.normal(size=400) * 2.0
    pos = rng.random(400) < 1.0 / (1.0 + np.exp(-1.7 * f + 0.3))
    w = rng.uniform(0.5, 2.0, 400)
    w[0] = 0.0
    A, B = fit_sigmoid(f, pos, w, xp=NXP, eps=1e-10)
    n1, n0 = w[pos].sum(), w[~pos].sum()
    T = np.where(pos, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))

    def nll(ab):
        z = f * ab[0] + ab[1]
        return np.sum(w * (np.logaddexp(0, z) + (T - 1) * z))

    ref = scipy.optimize.minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    assert_allclose(np.array([A, B]), ref, rtol=1e-5, atol=1e-6)
    assert A < 0  # larger decision values: more likely positive
    with pytest.raises(ValueError, match="both classes"):
        fit_sigmoid(f, np.zeros(400, dtype=bool), xp=NXP)


def test_pairwise_coupling_recovers_consistent_probabilities():
    """When r_ij = p_i / (p_i + p_j) for some p, Wu, Lin and Weng's method 2 returns p exactly
    (their (18) has p as its solution); inconsistent r give the minimizer of their (21) over
    the simplex, checked against scipy's SLSQP."""
    rng = np.random.default_rng(4)
    k, n = 4, 5
    p = rng.dirichlet(np.ones(k), size=n)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    r = [p[:, i] / (p[:, i] + p[:, j]) for i, j in pairs]
    assert_allclose(_couple(r, pairs, k, xp=NXP), p, rtol=1e-9)
    noisy = [np.clip(v + rng.normal(scale=0.1, size=n), 0.05, 0.95) for v in r]
    got = _couple(noisy, pairs, k, xp=NXP)
    for s in range(n):
        R = np.zeros((k, k))
        for (i, j), v in zip(pairs, noisy):
            R[i, j], R[j, i] = v[s], 1 - v[s]

        def obj(q, R=R):
            return sum((R[j, i] * q[i] - R[i, j] * q[j]) ** 2
                       for i in range(k) for j in range(k) if i != j)

        ref = scipy.optimize.minimize(obj, np.full(k, 1 / k), method="SLSQP",
                                      constraints={"type": "eq", "fun": lambda q: q.sum() - 1},
                                      options={"ftol": 1e-14}).x
        assert_allclose(got[s], ref, atol=1e-6)
    # one-vs-rest: the sigmoids normalised; two classes: [1 - p, p]
    f = [np.array([0.3, -2.0]), np.array([1.0, 0.5]), np.array([-1.0, 0.0])]
    P = class_probabilities(f, [-1.0] * 3, [0.0] * 3, pairs=None, n_classes=3, xp=NXP)
    s = 1 / (1 + np.exp(-np.stack(f, axis=1)))
    assert_allclose(P, s / s.sum(axis=1, keepdims=True), rtol=1e-12)


def test_probabilities_stay_on_the_device(device):
    """The folds, the sigmoid fits and the coupling run where the data lives: the same
    probabilities on NumPy and on the array-api-strict device (host reads would raise)."""
    X, y = make_classification(240, 6, n_informative=4, n_classes=3, n_clusters_per_class=1,
                               random_state=1)
    for multi_class in ("ovr", "ovo"):
        def make(multi_class=multi_class):
            return ReducedSVC(gamma=0.2, rank=60, random_state=0, multi_class=multi_class,
                              probability=True)

        ref = make().fit(X, y)
        clf = make().fit(to_device(X, device), to_device(y, device))
        P = clf.predict_proba(to_device(X[:50], device))
        assert_allclose(clf.probA_, ref.probA_, rtol=1e-7)
        assert_allclose(host(P), ref.predict_proba(X[:50]), rtol=1e-7, atol=1e-10)


def test_probability_errors_are_clear():
    X, y, _, _ = _binary_data()
    clf = UniSVC(rank=50, random_state=0).fit(X, y)
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba") as err:
        clf.predict_proba(X)
    assert "not available when probability=False" in str(err.value.__cause__)
    y1 = y.copy()
    y1[:] = 0
    y1[0] = 1  # one sample of class 1: no held-out fold can have it
    with pytest.raises(ValueError, match="at least 2 samples of each class.*probability=False"):
        UniSVC(rank=50, random_state=0, probability=True).fit(X, y1)
    import svmgpu.estimators._base as base_module

    real = base_module.nystrom
    base_module.nystrom = None  # refused before any kernel work (was: after the whole fit)
    try:
        with pytest.raises(ValueError, match="'probability' parameter .*'bool'"):
            UniSVC(rank=50, random_state=0, probability="yes").fit(X, y)
    finally:
        base_module.nystrom = real


def test_probabilities_survive_save_and_load(tmp_path):
    from svmgpu import load_model, save_model

    X, y, Xt, _ = _binary_data()
    clf = UniSVC(gamma=0.1, rank=100, random_state=0, probability=True).fit(X, y)
    save_model(clf, tmp_path / "m.npz")
    again = load_model(tmp_path / "m.npz")
    assert_allclose(again.predict_proba(Xt), clf.predict_proba(Xt), rtol=1e-12)


def test_a_one_sample_class_is_refused_before_the_fit_and_far_points_have_finite_logs():
    """Issue 26 item 6: probability=True with a class of one sample failed only after the
    main fit; predict_log_proba gave -inf (with a RuntimeWarning) for far points."""
    from svmgpu import UniSVC

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = (X[:, 0] > 0).astype(int)
    y[0] = 2  # class 2 has one sample
    est = UniSVC(rank=10, probability=True)
    est._prepare_fit = lambda *a, **k: pytest.fail("the main fit ran before the check")
    with pytest.raises(ValueError, match="class 2 has 1: use probability=False"):
        est.fit(X, y)
    clf = UniSVC(rank=10, probability=True, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    far = np.array([[1e3, 0.0], [-1e3, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero in log
        logp = clf.predict_log_proba(far)
    assert np.all(np.isfinite(logp)) and np.all(logp >= np.log(1e-7) - 1e-9)
