"""The estimator base and multi-class wrappers, on a toy binary solver."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from svmgpu.backend import cho_factor, cho_solve, get_namespace, to_device, to_numpy
from svmgpu.estimators import SVCBase, SVRBase
from svmgpu.estimators._params import constraints
from svmgpu.testing import assert_allclose, assert_array_equal


def _ridge_on_features(F, y, C, xp, sw=None):
    """min ½‖w‖² + C Σ sᵢ (yᵢ − Fᵢ w − b)² with the offset as an extra feature."""
    ones = xp.ones((F.shape[0], 1), dtype=F.dtype, device=getattr(F, "device", None))
    Fa = xp.concat([F, ones], axis=1)
    Fw = Fa if sw is None else Fa * sw[:, None]
    G = xp.matmul(xp.matrix_transpose(Fw), Fa) + xp.eye(Fa.shape[1], dtype=F.dtype) / (2 * C)
    return cho_solve(cho_factor(G, xp=xp), xp.matmul(xp.matrix_transpose(Fw), y), xp=xp)


class ToyLSClassifier(SVCBase):
    """Least squares on Nyström features: exercises every hook of the base."""

    _parameter_constraints = constraints(
        "kernel", "gamma", "degree", "coef0", "C", "rank", "lowrank", "tol", "max_iter",
        "device", "dtype", "memory_budget", "random_state", "verbose", "multi_class",
        "class_weight", "probability")

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=0.0, C=10.0, rank=40,
                 lowrank="nystrom", tol=1e-3, max_iter=100, device="cpu", dtype=None,
                 memory_budget=None, random_state=0, verbose=0, multi_class="ovr",
                 class_weight=None, probability=False):
        self.class_weight = class_weight
        self.probability = probability
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.C = C
        self.rank = rank
        self.lowrank = lowrank
        self.tol = tol
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.verbose = verbose
        self.multi_class = multi_class

    def _prepare_fit(self, X, *, ctx, sample_weight):
        self.factor_, _ = self._lowrank_factor(X, self._make_kernel(X), ctx)
        return self.factor_

    def _fit_binary(self, factor, rows, y, sample_weight):
        xp = get_namespace(factor.P)
        F = factor.P if rows is None else xp.take(factor.P, rows, axis=0)
        return {"w": _ridge_on_features(F, y, self.C, xp, sample_weight)}

    def _prepare_predict(self, X, *, ctx):
        return self.factor_.transform(X)

    def _after_fit(self, shared):
        self.n_iter_ = 1

    def _decision_binary(self, model, F, *, xp):
        w = model["w"]
        return xp.matmul(F, w[:-1]) + w[-1]


class ToyLSRegressor(SVRBase):
    _parameter_constraints = constraints(
        "kernel", "gamma", "degree", "coef0", "C", "rank", "lowrank", "device", "dtype",
        "memory_budget", "random_state", "verbose")

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=0.0, C=10.0, rank=40,
                 lowrank="nystrom", device="cpu", dtype=None, memory_budget=None, random_state=0,
                 verbose=0):
        self.verbose = verbose
        self.degree = degree
        self.coef0 = coef0
        self.kernel = kernel
        self.gamma = gamma
        self.C = C
        self.rank = rank
        self.lowrank = lowrank
        self.device = device
        self.dtype = dtype
        self.memory_budget = memory_budget
        self.random_state = random_state

    _prepare_fit = ToyLSClassifier._prepare_fit
    _fit_binary = ToyLSClassifier._fit_binary
    _prepare_predict = ToyLSClassifier._prepare_predict
    _decision_binary = ToyLSClassifier._decision_binary


# Nyström draws its landmarks among the rows: repeating rows changes the draw, so a weighted
# fit cannot equal a fit on repeated rows (the weighted solve itself is exact).
_NYSTROM_XFAIL = {f"check_sample_weight_equivalence_on_{data}_data":
                  "Nyström landmarks are drawn among the rows; repeated rows change the draw"
                  for data in ("dense", "sparse")}


@parametrize_with_checks([ToyLSClassifier(), ToyLSClassifier(multi_class="ovo"),
                          ToyLSRegressor()], expected_failed_checks=lambda est: _NYSTROM_XFAIL)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _manual_binary(X, y, est):
    return clone(est).fit(X, y).decision_function(X)


def test_ovr_and_ovo_match_manual_binary_problems():
    X, y = load_iris(return_X_y=True)
    y = np.array(["setosa", "versicolor", "virginica"])[y]
    ovr = ToyLSClassifier(multi_class="ovr").fit(X, y)
    D = ovr.decision_function(X)
    assert D.shape == (150, 3)
    for k, c in enumerate(ovr.classes_):
        yk = np.where(y == c, "pos", "aneg")  # "pos" sorts after "aneg": positive class
        assert_allclose(D[:, k], _manual_binary(X, yk, ovr), atol=1e-8)
    assert_array_equal(ovr.predict(X), ovr.classes_[np.argmax(D, axis=1)])
    assert ovr.score(X, y) > 0.9

    ovo = ToyLSClassifier(multi_class="ovo").fit(X, y)
    D = ovo.decision_function(X)
    assert D.shape == (150, 3) and ovo.pairs_ == [(0, 1), (0, 2), (1, 2)]
    assert_array_equal(ovo.predict(X), ovo.classes_[np.argmax(D, axis=1)])
    scores, _ = ovo._raw_decision(X)
    votes = np.zeros((150, 3))
    for p, (i, j) in enumerate(ovo.pairs_):
        votes[:, i] += scores[p] > 0
        votes[:, j] += scores[p] <= 0
    assert_array_equal(np.round(D), votes)
    for p, (i, j) in enumerate(ovo.pairs_):
        mask = (y == ovo.classes_[i]) | (y == ovo.classes_[j])
        yij = np.where(y[mask] == ovo.classes_[i], "b", "a")  # first class positive
        # the shared factor is built on all rows; compare against it on the pair's rows
        est = ToyLSClassifier().fit(X, y)
        ref = est._fit_binary(est.factor_, np.flatnonzero(mask), np.where(yij == "b", 1.0, -1.0),
                              None)
        assert_allclose(scores[p], est._decision_binary(ref, est.factor_.transform(X),
                                                                 xp=np), atol=1e-8)
    assert ovo.score(X, y) > 0.9


def test_binary_decision_sign_and_labels():
    X, y = make_classification(200, 5, random_state=0)
    clf = ToyLSClassifier().fit(X, y * 2 + 3)  # labels 3 and 5
    d = clf.decision_function(X)
    assert d.shape == (200,)
    assert_array_equal(clf.predict(X), np.where(d > 0, 5, 3))


def test_pickle_roundtrip_and_to_device():
    X, y = load_iris(return_X_y=True)
    clf = ToyLSClassifier().fit(X, y)
    clf2 = pickle.loads(pickle.dumps(clf))
    assert_array_equal(clf2.predict(X), clf.predict(X))
    assert clf2.device_ == "cpu"
    assert clf2.to_device("cpu") is clf2


def test_float32_kept_and_dtype_param():
    X, y = make_classification(100, 4, random_state=1)
    clf = ToyLSClassifier().fit(X.astype(np.float32), y)
    assert clf.factor_.P.dtype == np.float32 and clf.fit_dtype_ == "float32"
    clf = ToyLSClassifier(dtype="float64").fit(X.astype(np.float32), y)
    assert clf.factor_.P.dtype == np.float64
    assert clf.decision_function(X.astype(np.float32)).dtype == np.float64


def test_grid_search_and_clone():
    X, y = make_classification(120, 4, random_state=2)
    gs = GridSearchCV(ToyLSClassifier(), {"C": [0.1, 10.0]}, cv=3).fit(X, y)
    assert gs.best_params_["C"] in (0.1, 10.0)
    assert clone(ToyLSClassifier(C=3.0)).get_params()["C"] == 3.0


def test_regressor_fits_a_smooth_function():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (300, 1))
    y = np.sin(X[:, 0])
    reg = ToyLSRegressor(gamma=1.0, C=1e4).fit(X, y)
    assert np.sqrt(np.mean((reg.predict(X) - y) ** 2)) < 1e-2


@pytest.mark.parametrize("params,X,y,exc,match", [
    ({}, np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1], ValueError, "NaN"),
    ({}, np.array([[0.0, np.inf], [1.0, 2.0]]), [0, 1], ValueError, "infinity"),
    ({}, np.ones((4, 2)), [1, 1, 1, 1], ValueError, "one class"),
    ({}, np.ones((4, 2)), [0, 1, 0], ValueError, "samples"),
    ({}, np.ones((4, 2)), [0.0, 1.5, 0.0, 1.0], ValueError, "Unknown label type: continuous"),
    ({}, np.ones((4, 2)), [0.0, np.nan, 0.0, 1.0], ValueError, "y contains NaN"),
    ({}, np.ones((4, 2)), np.array([0, 1, 0, 1j]), ValueError, "Complex data"),
    ({}, np.ones((4, 2)), np.array([[0, 1], [1, 0], [0, 1], [1, 0]]), ValueError, "1d"),
    ({}, np.ones(4), [0, 1, 0, 1], ValueError, "2D"),
    ({"device": "tpu"}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "device"),
    ({"C": -1.0}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "'C' parameter .* range"),
    ({"rank": 0}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "rank"),
    ({"lowrank": "svd"}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "lowrank"),
    ({"kernel": "sigmoid"}, np.ones((4, 2)), [0, 1, 0, 1], ValueError,
     "'kernel' parameter .* among .*'linear'.* Got 'sigmoid'"),
    ({"dtype": "float16"}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "dtype"),
    ({"multi_class": "crammer"}, np.eye(3), [0, 1, 2], ValueError, "multi_class"),
    ({"memory_budget": 0}, np.ones((4, 2)), [0, 1, 0, 1], ValueError, "memory_budget"),
])
def test_bad_input(params, X, y, exc, match):
    with pytest.raises(exc, match=match):
        ToyLSClassifier(**params).fit(X, y)


def test_predict_wrong_features():
    X, y = make_classification(50, 4, random_state=3)
    clf = ToyLSClassifier().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])


@pytest.mark.gpu
def test_cupy_in_cupy_out_and_numpy_in_numpy_out():
    import cupy

    X, y = load_iris(return_X_y=True)
    clf = ToyLSClassifier(device="cuda").fit(X, y)
    assert clf.device_ == "cuda:0"
    out = clf.predict(cupy.asarray(X))
    assert isinstance(out, cupy.ndarray)
    assert_array_equal(to_numpy(out), clf.predict(X))
    cpu = ToyLSClassifier(device="cpu").fit(X, y)
    assert_allclose(clf.decision_function(X), cpu.decision_function(X), atol=1e-6)
    clf_cuda_input = ToyLSClassifier(device="cuda").fit(to_device(X, "cuda"), cupy.asarray(y))
    assert_allclose(clf_cuda_input.decision_function(X), cpu.decision_function(X),
                               atol=1e-6)
    loaded = pickle.loads(pickle.dumps(clf))
    assert loaded.device_ == "cpu"
    assert_array_equal(loaded.predict(X), cpu.predict(X))


def test_rank_has_one_meaning_in_every_estimator():
    """rank="auto" (the default): the full kernel for small problems that fit the budget, else
    300; None: the full kernel (reduced-set models: every point); an int: that rank."""
    from svmgpu import LSSVC, PSVC, ReducedSVC, UniSVC
    from svmgpu.datasets import make_checkerboard

    X, y = make_checkerboard(400, random_state=0)
    assert UniSVC(device="cpu").rank == LSSVC().rank == ReducedSVC().rank == PSVC().rank == "auto"
    assert UniSVC(device="cpu").fit(X, y).rank_ is None  # small: the full kernel
    Xm, ym = make_checkerboard(700, random_state=0)  # 3·700²·8 > 8 MB: rank 300
    assert UniSVC(device="cpu", memory_budget="8MB").fit(Xm, ym).rank_ == 300
    assert LSSVC(device="cpu").fit(X, y).solver_ == "dual"
    assert LSSVC(device="cpu", memory_budget="8MB").fit(Xm, ym).rank_ == 300
    assert ReducedSVC(device="cpu").fit(X, y).rank_ == 300  # reduced-set models: 300
    assert ReducedSVC(device="cpu", rank=None).fit(X, y).support_vectors_.shape[0] == 400
    assert PSVC(kernel="rbf", rank=None, device="cpu").fit(X, y).support_vectors_.shape[0] == 400
    assert UniSVC(device="cpu", rank=50, random_state=0).fit(X, y).rank_ == 50
    Xb, yb = make_checkerboard(3001, random_state=0)
    assert UniSVC(device="cpu", random_state=0, max_iter=5).fit(Xb, yb).rank_ == 300
    with pytest.raises(ValueError, match="'auto'"):
        UniSVC(rank="full").fit(X, y)
