"""Property tests (hypothesis): random shapes, dtypes and label sets never give NaN predictions,
a model that disagrees with its own decision_function, or an unexpected exception type; the
LIBSVM parser answers any bytes with arrays or a ValueError naming the line."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svmgpu import LSSVC, PSVC, WPSVC, GreedySVC, L2SVMPath, ReducedSVC, UniSVC, UniSVR
from svmgpu.datasets._svmlight import load_svmlight_bytes

CLASSIFIERS = [
    lambda: UniSVC(rank=10, random_state=0),
    lambda: UniSVC(loss="truncated_squared_hinge", rank=None),
    lambda: UniSVC(loss="smooth_ramp", rank=8, random_state=0, max_iter=50),
    lambda: ReducedSVC(rank=10, random_state=0),
    lambda: ReducedSVC(loss="logistic", regularizer="rkhs", rank=8, random_state=0),
    lambda: LSSVC(),
    lambda: PSVC(),
    lambda: WPSVC(kernel="rbf", rank=8, random_state=0),
    lambda: GreedySVC(max_support=20),
    lambda: L2SVMPath(rank=8, random_state=0, max_iter=30),
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(CLASSIFIERS) - 1), m=st.integers(12, 80),
       d=st.integers(1, 4), k=st.integers(2, 4), dtype=st.sampled_from(["float32", "float64"]),
       labels=st.sampled_from(["int", "str", "float"]), scale=st.sampled_from([1e-3, 1.0, 1e3]),
       seed=st.integers(0, 2**16), ovo=st.booleans())
def test_classifiers_predict_their_own_decisions(which, m, d, k, dtype, labels, scale, seed,
                                                 ovo):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(m, d)) * scale).astype(dtype)
    y_idx = np.arange(m) % k  # every class present, at least 3 rows each
    rng.shuffle(y_idx)
    names = {"int": np.array([-3, 5, 7, 11]), "str": np.array(["a", "b", "c", "d"]),
             "float": np.array([-1.0, 1.0, 2.0, 4.0])}[labels]
    y = names[y_idx]
    est = CLASSIFIERS[which]()
    if "multi_class" in est.get_params() and ovo:
        est.set_params(multi_class="ovo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence / scaling warnings are allowed
        try:
            est.fit(X, y)
        except (FloatingPointError, MemoryError):
            return  # named refusals (overflow at scale 1e3 in float32, budgets) are fine
        pred = est.predict(X)
        dec = np.asarray(est.decision_function(X))
    assert set(np.unique(pred)) <= set(names[:k])
    assert np.all(np.isfinite(dec))
    if dec.ndim == 1:
        expect = np.where(dec > 0, est.classes_[1], est.classes_[0])
    else:
        expect = est.classes_[np.argmax(dec, axis=1)]
    np.testing.assert_array_equal(pred, expect)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(10, 60), d=st.integers(1, 3), seed=st.integers(0, 2**16),
       dtype=st.sampled_from(["float32", "float64"]), full=st.booleans())
def test_regressor_predictions_are_finite(m, d, seed, dtype, full):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(dtype)
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=m)
    est = UniSVR(rank=None if full else 8, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = est.fit(X, y).predict(X)
    assert pred.shape == (m,) and np.all(np.isfinite(pred))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_parser_answers_any_bytes_with_arrays_or_a_line_numbered_value_error(data):
    try:
        X, y = load_svmlight_bytes(data, "fuzz", None, True, np.float64, "auto")
    except ValueError as exc:
        assert "fuzz" in str(exc)
        return
    assert X.shape[0] == y.shape[0]


@settings(max_examples=60, deadline=None)
@given(index=st.integers(1, 10**15), rows=st.integers(1, 400), value=st.floats(-1e3, 1e3))
def test_one_huge_index_never_allocates_a_huge_dense_matrix(index, rows, value):
    text = "".join(f"{1 if i % 2 else -1} 1:{value!r}\n" for i in range(rows))
    text += f"1 {index}:1\n"
    try:
        X, _ = load_svmlight_bytes(text.encode(), "big", None, True, np.float64, "auto")
    except ValueError as exc:
        assert "big line" in str(exc)  # too large an index, or the dense matrix refused
        return
    assert X.nbytes <= 256 * 10**6


def test_parser_names_the_line_of_a_huge_index():
    text = "1 1:0.5\n" * 300 + "1 450000:1\n"
    with pytest.raises(ValueError, match=r"big line 301: feature index 450000.*dense=False"):
        load_svmlight_bytes(text.encode(), "big", None, True, np.float64, "auto")
    X, _ = load_svmlight_bytes(text.encode(), "big", None, False, np.float64, "auto")
    assert X.shape == (301, 450000) and X.nnz == 301


def _fit_both_on_one_kernel(ours, theirs, X, y, s, kw):
    """``(svmgpu's fit, scikit-learn's fit, the kernel's block function)``, svmgpu's without a
    ConvergenceWarning, scikit-learn's on svmgpu's γ (gamma="scale" counts weights as
    repetitions, scikit-learn's ignores them: one kernel for both)."""
    from sklearn.metrics.pairwise import pairwise_kernels

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no ConvergenceWarning)
        got = ours(**kw).fit(X, y, sample_weight=s)
    kernel = kw["kernel"]
    gamma = got.kernel_.gamma if kernel != "linear" else "scale"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = theirs(**kw, gamma=gamma).fit(X, y, sample_weight=s)
    params = {"rbf": {"gamma": gamma}, "linear": {},
              "poly": {"gamma": gamma, "degree": 3, "coef0": 0.0}}[kernel]
    return got, ref, lambda A, B: pairwise_kernels(A, B, metric=kernel, **params)


def _rkhs_term(model, block):
    """``½ aᵀ K_SV a`` of a fitted binary SVC or SVR (its support vectors and dual
    coefficients)."""
    a = np.asarray(model.dual_coef_)[0]
    sv = np.asarray(model.support_vectors_)
    return 0.5 * a @ block(sv, sv) @ a


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.sampled_from([12, 40, 150, 300]), d=st.integers(1, 6),
       kernel=st.sampled_from(["rbf", "linear", "poly"]), C=st.sampled_from([0.01, 0.1, 1.0, 10.0]),
       positive=st.sampled_from([0.05, 0.2, 0.5]), signal=st.booleans(),
       duplicates=st.booleans(), weights=st.sampled_from([None, "random", "balanced"]),
       seed=st.integers(0, 2**16))
def test_svc_reaches_the_hinge_minimum_scikit_learn_reaches(m, d, kernel, C, positive, signal,
                                                             duplicates, weights, seed):
    """(Session 31, a differential fuzz against scikit-learn.) On random binary problems
    (labels with or without signal, imbalanced, duplicated rows with conflicting labels,
    weights) SVC converges, and its objective in the hinge loss (on its kernel) is within the Huber hinge's
    bound of LIBSVM's: ψ ≤ hinge ≤ ψ + δ/2 row by row (δ = HINGE_SMOOTHING), so the Huber
    minimum costs at most ``C Σ s δ / 2`` more hinge objective than the hinge minimum. A
    solve that crawled to max_iter (random labels, 5 % positive, C = 0.1) ended above it."""
    from sklearn.svm import SVC as SklearnSVC
    from sklearn.utils.class_weight import compute_sample_weight

    from svmgpu import SVC
    from svmgpu.estimators.svc import HINGE_SMOOTHING

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    if duplicates:
        X[m // 2:] = X[: m - m // 2]
    score = X[:, 0] if signal else rng.standard_normal(m)
    y = (score > np.quantile(score, 1.0 - positive)).astype(int)
    y[:2] = [0, 1]
    s = None if weights != "random" else rng.uniform(0.2, 3.0, m)
    kw = dict(C=C, kernel=kernel, class_weight="balanced" if weights == "balanced" else None)
    got, ref, block = _fit_both_on_one_kernel(SVC, SklearnSVC, X, y, s, kw)
    w = (np.ones(m) if s is None else s) * (compute_sample_weight("balanced", y)
                                            if weights == "balanced" else 1.0)
    y_pm = 2.0 * y - 1.0

    def objective(model):
        f = np.asarray(model.decision_function(X))
        return _rkhs_term(model, block) + C * np.sum(w * np.maximum(0.0, 1.0 - y_pm * f))

    ours, theirs = objective(got), objective(ref)
    assert ours <= theirs + C * np.sum(w) * HINGE_SMOOTHING / 2 + 1e-6 * abs(theirs)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.sampled_from([12, 40, 150, 300]), d=st.integers(1, 6),
       kernel=st.sampled_from(["rbf", "linear", "poly"]), C=st.sampled_from([0.1, 1.0, 10.0]),
       epsilon=st.sampled_from([0.0, 0.1, 0.5]), offset=st.sampled_from([0.0, 50.0]),
       weighted=st.booleans(), seed=st.integers(0, 2**16))
def test_svr_reaches_the_epsilon_insensitive_minimum_scikit_learn_reaches(m, d, kernel, C,
                                                                          epsilon, offset,
                                                                          weighted, seed):
    """SVR's counterpart of the test above: its loss lies within δ/2 of LIBSVM's (Huber
    corners of half-width δ ≤ HINGE_SMOOTHING above ``(|u| − ε)₊`` by at most δ/4; the Huber
    loss of ε = 0 below ``|u|`` by at most δ/2), so its ε-insensitive objective is within
    ``C Σ s δ / 2`` of LIBSVM's on the same kernel, targets offset or not."""
    from sklearn.svm import SVR as SklearnSVR

    from svmgpu import SVR
    from svmgpu.estimators.svc import HINGE_SMOOTHING

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.sin(2.0 * X[:, 0]) + 0.3 * rng.standard_normal(m) + offset
    s = rng.uniform(0.2, 3.0, m) if weighted else None
    kw = dict(C=C, kernel=kernel, epsilon=epsilon)
    got, ref, block = _fit_both_on_one_kernel(SVR, SklearnSVR, X, y, s, kw)
    w = np.ones(m) if s is None else s

    def objective(model):
        u = y - np.asarray(model.predict(X))
        return _rkhs_term(model, block) + C * np.sum(w * np.maximum(0.0, np.abs(u) - epsilon))

    ours, theirs = objective(got), objective(ref)
    assert ours <= theirs + C * np.sum(w) * HINGE_SMOOTHING / 2 + 1e-6 * abs(theirs)
