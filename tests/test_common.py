"""What every public estimator owes, checked over the one registry
(:data:`svmgpu.estimators.REGISTRY`): the registry is the list the package, the model files and
the command line read; a fit that fails leaves the estimator as it was; an unfitted estimator
says so; a bad parameter is named with the accepted values; a parameter the configuration
ignores is not taken silently; capabilities are scikit-learn tags."""

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils._param_validation import InvalidParameterError

import svmgpu
from svmgpu import cli
from svmgpu.estimators import REGISTRY, estimator_classes
from svmgpu.estimators._tags import SVMTags

CLASSES = estimator_classes()

#: Small, fast configurations (the defaults where they are fast already).
FAST = {"SVC": {}, "SVR": {}, "UniSVC": {}, "UniSVR": {}, "ReducedSVC": {"rank": 30}, "GreedySVC": {},
        "L2SVMPath": {"rank": 30}, "LSSVC": {"rank": 30}, "PSVC": {}, "WPSVC": {}}


def _data(n=300):
    """The audit's data: standard normal X of shape (n, 3), y = X[:, 0] > 0."""
    X = np.random.default_rng(0).standard_normal((n, 3))
    return X, X[:, 0] > 0


def _make(name, **params):
    return CLASSES[name](**{**FAST[name], **params})


def _target(est, y):
    return y if is_classifier(est) else y.astype(float)


def test_registry_is_the_one_list():
    assert set(FAST) == set(REGISTRY)
    assert list(svmgpu.__all__[:len(REGISTRY)]) == list(REGISTRY)
    for name, cls in CLASSES.items():
        assert getattr(svmgpu, name) is cls
        assert getattr(svmgpu.estimators, name) is cls
        assert cls.__module__ == REGISTRY[name].module
    assert {e.name for e in cli.ESTIMATORS.values()} == set(REGISTRY)
    assert cli.estimator_class("uni") is CLASSES["UniSVC"]


@pytest.mark.parametrize("name", REGISTRY)
def test_a_failed_refit_leaves_the_estimator_as_it_was(name):
    X, y = _data()
    est = _make(name).fit(X, _target(_make(name), y))
    before, pred = dict(vars(est)), est.predict(X)
    # a new X with 5 features and string labels, refused at the weights: without an atomic
    # fit, n_features_in_ (and for classifiers classes_) would already be the new ones
    X5 = np.hstack([X, X[:, :2]])
    y_new = np.where(y, "cat", "dog") if is_classifier(est) else y + 10.0
    with pytest.raises(ValueError, match="sample_weight"):
        est.fit(X5, y_new, sample_weight=-np.ones(X.shape[0]))
    assert set(vars(est)) == set(before)
    assert all(vars(est)[k] is before[k] for k in before)
    np.testing.assert_array_equal(est.predict(X), pred)


@pytest.mark.parametrize("name", REGISTRY)
def test_a_refit_keeps_no_attribute_of_the_previous_fit(name):
    """A refit's fitted attributes are exactly a fresh fit's: one that only the previous
    configuration set (here planted) is gone, not left stale beside the new model."""
    X, y = _data()
    est = _make(name)
    fresh = set(vars(_make(name).fit(X, _target(est, y))))
    est.fit(X, _target(est, y))
    est.from_an_earlier_configuration_ = np.zeros(3)
    est.fit(X, _target(est, y))
    assert set(vars(est)) == fresh


def test_the_audit_reproduction_of_a_mixed_model():
    """UniSVC().fit(X, y), then a refit with C=1e300 and new labels that raises: predict
    answered with the new classes_ and the old coefficients."""
    X, y = _data()
    m = svmgpu.UniSVC().fit(X, y)
    pred = m.predict(X)
    with pytest.raises((FloatingPointError, ValueError, ArithmeticError)):
        m.set_params(C=1e300).fit(X, np.where(y, "cat", "dog"))
    np.testing.assert_array_equal(m.classes_, [False, True])
    np.testing.assert_array_equal(m.predict(X), pred)


@pytest.mark.parametrize("name", REGISTRY)
def test_predict_after_a_failed_first_fit_is_not_fitted(name):
    X, y = _data()
    est = _make(name)
    with pytest.raises(ValueError, match="sample_weight"):
        est.fit(X, _target(est, y), sample_weight=-np.ones(X.shape[0]))
    assert not [k for k in vars(est) if k.endswith("_")]
    for method in ("predict", "decision_function", "score"):
        if hasattr(est, method):
            args = (X, _target(est, y)) if method == "score" else (X,)
            with pytest.raises(NotFittedError):
                getattr(est, method)(*args)


def test_predict_after_a_first_fit_that_overflows_is_not_fitted():
    X, y = _data()
    est = svmgpu.UniSVC(C=1e300)
    with pytest.raises((FloatingPointError, ValueError, ArithmeticError)):
        est.fit(X, y)
    with pytest.raises(NotFittedError):
        est.predict(X)


#: The audit's invalid values (kernel="linear" where it asked for it).
INVALID = [("gamma", -1, {"kernel": "linear"}), ("gamma", "bogus", {"kernel": "linear"}),
           ("degree", 2.5, {}), ("coef0", float("nan"), {}), ("lowrank_tol", -1, {}),
           ("accelerate", "yes", {}), ("random_state", "x", {}), ("verbose", "x", {}),
           ("loss_params", "a=2", {}), ("C", 0.0, {}), ("C", float("inf"), {}),
           ("tol", -1.0, {}), ("max_iter", -2, {}), ("rank", 0, {}), ("probability", "yes", {}),
           ("class_weight", "some", {}), ("multi_class", "ova", {}), ("dtype", "float16", {}),
           ("kernel", "sigmoid", {}), ("memory_budget", -5, {})]


@pytest.mark.parametrize("name", REGISTRY)
@pytest.mark.parametrize("param,value,extra", INVALID, ids=lambda v: repr(v)[:20])
def test_an_invalid_parameter_is_named_with_what_is_accepted(name, param, value, extra):
    est = _make(name)
    params = est.get_params()
    if param not in params or any(k not in params for k in extra):
        pytest.skip(f"{name} has no parameter {param}")  # (the registry's other estimators do)
    X, y = _data(60)
    est.set_params(**{param: value, **extra})
    with pytest.raises(InvalidParameterError, match=f"The '{param}' parameter of {name} must be "
                                                    r".* Got .* instead"):
        est.fit(X, _target(est, y))


@pytest.mark.parametrize("params,ignored", [
    ({"kernel": "linear", "gamma": 0.5}, "gamma=0.5 is ignored: kernel='linear'"),
    ({"kernel": "rbf", "degree": 2}, "degree=2 is ignored: kernel='rbf'"),
    ({"kernel": "rbf", "coef0": 1.0}, "coef0=1.0 is ignored: kernel='rbf'"),
    ({"rank": 20, "lowrank_tol": 0.1}, "lowrank_tol=0.1 is ignored: only lowrank='pivoted_chol"),
])
def test_a_parameter_the_configuration_ignores_warns(params, ignored):
    X, y = _data(100)
    with pytest.warns(UserWarning, match=ignored) as record:
        svmgpu.UniSVC(**params).fit(X, y)
    assert record[0].filename == __file__  # pointing at the caller's fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the used ones and the defaults: no warning
        svmgpu.UniSVC(kernel="poly", degree=2, coef0=1.0, gamma=0.5, rank=20,
                      lowrank="pivoted_cholesky", lowrank_tol=0.1).fit(X, y)


@pytest.mark.parametrize("name", REGISTRY)
def test_capabilities_are_tags(name):
    tags = get_tags(_make(name))
    assert isinstance(tags, SVMTags)
    assert tags.input_tags.sparse  # every estimator takes CSR input
    dask = name not in ("GreedySVC", "L2SVMPath")  # (SVC, SVR: on the partitioned path)
    assert tags.svm.dask is dask
    if not dask:
        assert tags.svm.dask_refusal and name not in tags.svm.dask_refusal
    full = name in ("SVC", "SVR", "UniSVC", "UniSVR", "LSSVC", "L2SVMPath")
    assert tags.svm.full_kernel_form is full


def test_one_instance_fitted_from_two_threads_is_refused_not_mixed():
    """Different instances fit in parallel threads freely; a fit of an instance that another
    thread is fitting raises instead of mixing the two fits (issue 26, item 8)."""
    import threading

    X, y = _data(200)
    est = svmgpu.UniSVC(rank=20, random_state=0)
    entered, release = threading.Event(), threading.Event()
    prepare = est._prepare_fit

    def slow_prepare(*args, **kwargs):
        entered.set()
        assert release.wait(30)
        return prepare(*args, **kwargs)

    est._prepare_fit = slow_prepare  # (an instance attribute: not a parameter)
    errors = []
    worker = threading.Thread(target=lambda: errors.append(None) if est.fit(X, y) else None)
    worker.start()
    assert entered.wait(30)
    try:
        with pytest.raises(RuntimeError, match="being fitted by another thread"):
            est.fit(X[:100], y[:100])
    finally:
        release.set()
        worker.join(60)
    del est._prepare_fit
    assert est.n_features_in_ == 3 and "_fit_owner" not in vars(est)
    ref = svmgpu.UniSVC(rank=20, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                               rtol=1e-9, atol=1e-12)
    # threads fitting their own instances: the same models as one thread
    models = [svmgpu.UniSVC(rank=20, random_state=k) for k in range(4)]
    threads = [threading.Thread(target=m.fit, args=(X, y)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for k, m in enumerate(models):  # (to rounding: BLAS may block a concurrent call otherwise)
        one = svmgpu.UniSVC(rank=20, random_state=k).fit(X, y)
        np.testing.assert_allclose(m.decision_function(X), one.decision_function(X),
                                   rtol=1e-9, atol=1e-12)


KERNEL_ESTIMATORS = [n for n in REGISTRY if "kernel" in CLASSES[n]().get_params()]


@pytest.mark.parametrize("name", KERNEL_ESTIMATORS)
@pytest.mark.parametrize("scale,dtype,cause", [(1e300, "float64", "overflow float64"),
                                               (1e-25, "float32", "underflow to 0 in float32"),
                                               (1e-21, "float32", "underflow to 0 in float32")])
def test_features_at_the_edge_of_the_dtype_are_named_not_a_constant_model(name, scale, dtype,
                                                                          cause):
    """Issue 26 items 1-2: float32 features ~1e-25 gave a constant model (gamma='scale''s
    variance underflowed), ~1e-21 an overflow error, and X·1e300 blamed gamma=0.0."""
    X, y = _data(120)
    est = _make(name, kernel="rbf")
    with pytest.raises(ValueError, match=f"X's largest absolute value is .*{cause}.*scale "
                                         "the features"):
        est.fit((X * scale).astype(dtype), _target(est, y))
    assert not [k for k in vars(est) if k.endswith("_")]


@pytest.mark.parametrize("name", [n for n in REGISTRY if "C" in CLASSES[n]().get_params()])
def test_a_loss_weight_that_overflows_names_c_and_the_weights(name):
    """Issue 26 item 2: C=1e300 reported a continuation stage's C and 'use dtype=float64' (it
    was float64); sample_weight=1e300 blamed C."""
    X, y = _data(120)
    est = _make(name)
    with pytest.raises(ValueError, match=r"C × the total sample weight is .* \(C=1e\+300\)"):
        est.set_params(C=1e300).fit(X, _target(est, y))
    with pytest.raises(ValueError, match=r"C=1\.0, the largest sample weight .* 1e\+300"):
        est.set_params(C=1.0).fit(X, _target(est, y), sample_weight=np.full(120, 1e300))
