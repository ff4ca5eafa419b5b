"""Sparse input (issue 13, item 1): SciPy CSR X trains and predicts without being densified
(kernel blocks from sparse · dense products and row norms; the rows a model keeps sparse where
they have few nonzeros, else dense),
giving the same model as the dense X to rounding; the CLI keeps LIBSVM files sparse."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from svmgpu import LSSVC, PSVC, WPSVC, GreedySVC, L2SVMPath, ReducedSVC, UniSVC, UniSVR
from svmgpu.kernels import RBF, Laplacian, Linear, Polynomial
from svmgpu.lowrank import nystrom, pivoted_cholesky
from svmgpu.testing import assert_allclose


def _data(n=600, d=30, n_classes=2, seed=0):
    X, y = make_classification(n, d, n_informative=10, n_classes=n_classes, random_state=seed)
    X[np.abs(X) < 1.0] = 0.0  # about 45 % nonzero
    return X, y


@pytest.mark.parametrize("kernel", [RBF(0.05), Polynomial(2, 0.02, 1.0), Linear()])
def test_sparse_kernel_blocks_and_factors_equal_the_dense_ones(kernel):
    X, _ = _data()
    Xs = sp.csr_matrix(X)
    assert_allclose(kernel.block(Xs, X[:40]), kernel.block(X, X[:40]), rtol=1e-12, atol=1e-13)
    assert_allclose(kernel.block(Xs, Xs[:40]), kernel.block(X, X[:40]), rtol=1e-12, atol=1e-13)
    assert_allclose(kernel.diag(Xs), kernel.diag(X), rtol=1e-13)
    for build in (lambda A: nystrom(A, kernel, 60, random_state=0),
                  lambda A: pivoted_cholesky(A, kernel, 40)):
        fs, fd = build(Xs), build(X)
        assert fs.rank == fd.rank
        assert_allclose(fs.P, fd.P, atol=1e-10)
        assert_allclose(fs.transform(Xs[:50]), fd.transform(X[:50]), atol=1e-10)
    with pytest.raises(TypeError, match="'laplacian' kernel does not take sparse input"):
        Laplacian(0.1).block(Xs, X[:3])


MODELS = [
    lambda: UniSVC(C=10.0, rank=100, random_state=0),
    lambda: UniSVC(C=10.0, random_state=0),  # rank="auto": the full kernel at 600 points
    # DCA: stops within its tol (rounding moves the iterates apart by ~1e-8 of the scale)
    pytest.param(lambda: UniSVC(C=10.0, random_state=0, loss="truncated_squared_hinge",
                                solver="dca", rank=None, tol=1e-8), id="dca"),
    lambda: UniSVC(C=10.0, rank=80, random_state=0, lowrank="pivoted_cholesky"),
    lambda: UniSVC(C=10.0, rank=60, random_state=0, multi_class="ovo", class_weight="balanced"),
    lambda: ReducedSVC(C=10.0, rank=100, random_state=0),
    lambda: ReducedSVC(C=10.0, rank=80, random_state=0, regularizer="rkhs", fit_intercept=True),
    lambda: ReducedSVC(C=10.0, rank=80, random_state=0, reduced_set="pivoted_cholesky"),
    lambda: LSSVC(C=10.0),  # the dual with the full kernel
    lambda: LSSVC(C=10.0, rank=100, random_state=0, fit_intercept=True),
    lambda: PSVC(kernel="rbf", rank=100, random_state=0),
    lambda: PSVC(C=10.0),  # linear: X's rows densified a block at a time
    lambda: WPSVC(C=10.0),  # class centres and distances from the sparse rows
    lambda: WPSVC(C=10.0, kernel="rbf", rank=100, random_state=0),
]


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_sparse_and_dense_input_give_the_same_model(make, n_classes):
    X, y = _data(n_classes=n_classes)
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    sparse = make().fit(sp.csr_matrix(X), y, sample_weight=w)
    dense = make().fit(X, y, sample_weight=w)
    # gamma="scale" from sparse moments (E[x²] − E[x]²): equal to rounding
    assert getattr(sparse.kernel_, "gamma", 0) == pytest.approx(
        getattr(dense.kernel_, "gamma", 0), rel=1e-12)
    coef = [np.asarray(sparse.coef_), np.asarray(dense.coef_)]
    # Newton's finite termination lands on the same point (to ~1e-13); DCA within its tol
    tol = 1e-6 if getattr(sparse, "solver_", None) == "dca" else 1e-10
    assert_allclose(coef[0], coef[1], rtol=tol, atol=tol)
    Xt = X[:100]
    assert_allclose(sparse.decision_function(sp.csr_matrix(Xt)), dense.decision_function(Xt),
                    rtol=tol, atol=tol)
    assert_allclose(sparse.decision_function(Xt), dense.decision_function(Xt), rtol=tol,
                    atol=tol)  # a model fitted on sparse X predicts dense X too
    np.testing.assert_array_equal(sparse.predict(sp.csc_matrix(Xt)), dense.predict(Xt))


@pytest.mark.parametrize("params", [{}, {"multi_class": "ovr", "batch": 4},
                                    {"kernel": "poly", "degree": 2, "gamma": 0.02}],
                         ids=["rbf-ovo", "rbf-ovr-batch", "poly"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_greedy_svc_sparse_and_dense_give_the_same_model(params, n_classes):
    """GS-SVM on sparse X: kernel columns from sparse · dense products against the selected
    rows (no k-d tree pruning, which needs dense coordinates), the same selections as dense X."""
    X, y = _data(n_classes=n_classes)
    w = np.random.default_rng(2).uniform(0.0, 2.5, X.shape[0])
    sparse = GreedySVC(**params).fit(sp.csr_matrix(X), y, sample_weight=w)
    dense = GreedySVC(**params).fit(X, y, sample_weight=w)
    assert getattr(sparse.kernel_, "gamma", 0.0) == \
        pytest.approx(getattr(dense.kernel_, "gamma", 0.0), rel=1e-12)
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_array_equal(sparse.n_support_, dense.n_support_)
    assert isinstance(sparse.support_vectors_, np.ndarray)  # (45 % nonzero: dense)
    assert_allclose(sparse.dual_coef_, dense.dual_coef_, rtol=1e-10, atol=1e-10)
    Xt = X[:100]
    for Xin in (sp.csr_matrix(Xt), Xt):
        assert_allclose(sparse.decision_function(Xin), dense.decision_function(Xt), rtol=1e-10,
                        atol=1e-10)
    np.testing.assert_array_equal(dense.predict(sp.csr_matrix(Xt)), dense.predict(Xt))


def _dense_rows_seen(monkeypatch, *modules):
    """The row counts of every ``dense_rows`` call the ``modules`` make (a list, appended to)."""
    from svmgpu.backend import dense_rows

    seen = []

    def spy(X, rows, *, xp):
        out = dense_rows(X, rows, xp=xp)
        seen.append(out.shape[0])
        return out

    for mod in modules:
        monkeypatch.setattr(mod, "dense_rows", spy)
    return seen


def test_greedy_svc_on_sparse_x_never_densifies_it(monkeypatch):
    """Only the selected rows are taken dense: each dense_rows call sees at most max_support
    rows, never X whole."""
    import svmgpu.solvers.stagewise as stagewise_mod

    X, y = _data(400)
    seen = _dense_rows_seen(monkeypatch, stagewise_mod)
    with pytest.warns(ConvergenceWarning, match="max_support"):
        clf = GreedySVC(max_support=50).fit(sp.csr_matrix(X), y)
    assert seen and max(seen) <= 50 and clf.support_vectors_.shape == (50, X.shape[1])


@pytest.mark.parametrize("params", [{"rank": None}, {"rank": 100, "random_state": 0},
                                    {"rank": 100, "random_state": 0, "refit": False}],
                         ids=["exact", "nystrom-refit", "nystrom-features"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_l2svm_path_sparse_and_dense_give_the_same_model(params, n_classes):
    """The path on sparse X: Nyström features (or, for rank=None, the kernel columns block by
    block) from sparse · dense products; the same path and classifier as dense X. lambda_min
    = 1e-2 keeps the systems' condition number (about ‖K‖/λ) small enough that the rounding of
    the uncentred sparse kernel expansion stays below 1e-10 in the decision values."""
    X, y = _data(300, n_classes=n_classes)
    w = np.random.default_rng(3).uniform(0.0, 2.0, X.shape[0])
    w[::7] = 0.0
    kw = dict(gamma=0.02, lambda_min=1e-2, **params)
    sparse = L2SVMPath(**kw).fit(sp.csr_matrix(X), y, sample_weight=w)
    dense = L2SVMPath(**kw).fit(X, y, sample_weight=w)
    paths = [[sparse.lambdas_], [dense.lambdas_]] if n_classes == 2 else \
        [sparse.lambdas_, dense.lambdas_]
    for a, b in zip(*paths):  # one path per binary problem
        assert_allclose(a, b, rtol=1e-10)
    assert_allclose(sparse.best_lambda_, dense.best_lambda_, rtol=1e-10)
    np.testing.assert_array_equal(sparse.n_support_, dense.n_support_)
    Xt = X[:100]
    for Xin in (sp.csr_matrix(Xt), Xt):
        assert_allclose(sparse.decision_function(Xin), dense.decision_function(Xt), rtol=1e-10,
                        atol=1e-10)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(Xt)), dense.predict(Xt))


def test_sparse_regression_and_float32():
    X, y = _data()
    t = X[:, 0] * 2.0 + np.sin(X[:, 1])
    for loss, tol in (("huber", 1e-9), ("smooth_epsilon_insensitive", 1e-3)):  # Newton; DCA
        a = UniSVR(loss, C=10.0, rank=100, random_state=0).fit(sp.csr_matrix(X), t)
        b = UniSVR(loss, C=10.0, rank=100, random_state=0).fit(X, t)
        assert_allclose(a.predict(sp.csr_matrix(X[:50])), b.predict(X[:50]), rtol=tol,
                        atol=tol)
    c = UniSVC(rank=100, random_state=0, dtype="float32").fit(sp.csr_matrix(X), X[:, 0] > 0)
    assert c.factor_.landmark_X.dtype == np.float32 and c.score(X, X[:, 0] > 0) > 0.9


def test_estimators_without_sparse_support_say_so_and_bad_sparse_input_is_refused():
    X, y = _data(200)
    Xs = sp.csr_matrix(X)
    bad = Xs.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        UniSVC(rank=20, random_state=0).fit(bad, y)
    wide = sp.random(200, 100_000, density=1e-4, random_state=0, format="csr")
    with pytest.raises(MemoryError, match="holds dense"):  # 160 MB of dense rows; K: 1 MB
        UniSVC(rank=None, memory_budget="50MB").fit(wide, y)
    for est in (PSVC(), WPSVC()):  # linear: an (n + 1)² system, checked before any work
        with pytest.raises(MemoryError, match="100,000 features.*kernel='rbf', rank=300"):
            est.set_params(memory_budget="1GB").fit(wide, y)
    clf = UniSVC(rank=20, random_state=0).fit(Xs, y)
    with pytest.raises(ValueError, match="30 features"):
        clf.predict(sp.csr_matrix(np.zeros((2, 31))))


def test_a_million_feature_sparse_file_trains_from_the_cli(tmp_path):
    """A LIBSVM file with feature indices up to 10⁶ (361 KB here): the CLI kept it sparse
    (was: densified, "Unable to allocate 14.9 GiB"). The landmark rows are dense: rank 10 of
    10⁶ features is 80 MB."""
    from svmgpu import cli, load_model

    rng = np.random.default_rng(0)
    lines = []
    for i in range(2000):
        label = 1 if i % 2 else -1
        cols = np.sort(rng.choice(1_000_000, size=8, replace=False) + 1)
        cols[0] = 1 + (i % 2)  # feature 1 or 2 carries the class
        cols = np.unique(cols)
        lines.append(f"{label} " + " ".join(f"{c}:1" for c in cols))
    lines[-1] += " 1000000:0.5"  # the largest index
    path = tmp_path / "wide.libsvm"
    path.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.npz"
    assert cli.main(["train", str(path), str(model), "-e", "uni", "--rank", "10", "--gamma",
                     "0.5", "--device", "cpu"]) == 0
    est = load_model(model)
    assert est.n_features_in_ == 1_000_000 and est.factor_.landmark_X.shape == (10, 1_000_000)
    assert cli.main(["predict", str(path), str(model)]) == 0
    # the default estimator, SVC, on the same file: its landmarks dense, X sparse
    assert cli.main(["train", str(path), str(model), "--rank", "10", "--gamma", "0.5",
                     "--device", "cpu"]) == 0
    est = load_model(model)
    assert type(est).__name__ == "SVC" and est.support_vectors_.shape == (10, 1_000_000)
    assert cli.main(["predict", str(path), str(model)]) == 0


class _NoDeviceCSR(sp.csr_matrix):
    """A CSR matrix whose ``.device`` raises, as CuPy's sparse matrices do (the GPU run of
    2026-11-23 failed there: ``getattr(X, "device", None)`` does not catch it)."""

    __module__ = "scipy.sparse._fake"  # counts as sparse

    @property
    def device(self):
        raise NotImplementedError


@pytest.mark.parametrize("make", [
    lambda: UniSVC(C=10.0, rank=100, random_state=0),
    lambda: ReducedSVC(C=10.0, rank=100, random_state=0),
    lambda: LSSVC(C=10.0),
])
def test_sparse_paths_never_ask_a_sparse_matrix_for_its_device(make):
    X, y = _data()
    clf = make().fit(_NoDeviceCSR(X), y)
    assert_allclose(clf.decision_function(_NoDeviceCSR(X[:40])), make().fit(X, y)
                    .decision_function(X[:40]), rtol=1e-10, atol=1e-10)


@pytest.mark.gpu
@pytest.mark.parametrize("make", [
    lambda: UniSVC(C=10.0, rank=100, random_state=0, multi_class="ovo"),
    lambda: ReducedSVC(C=10.0, rank=100, random_state=0),
    lambda: LSSVC(C=10.0),
    lambda: WPSVC(C=10.0),  # linear: the class centres of cupyx sparse rows
])
def test_sparse_input_on_the_gpu(make):
    """CuPy's sparse CSR (cupyx.scipy.sparse), and SciPy CSR sent to device='cuda', give the
    CPU's model; prediction of sparse rows returns a CuPy array."""
    import cupy
    import cupyx.scipy.sparse as csp

    from svmgpu.testing import host

    X, y = _data(n_classes=3)
    ref = make().set_params(device="cpu").fit(X, y)
    for Xin in (csp.csr_matrix(sp.csr_matrix(X)), sp.csr_matrix(X)):
        clf = make().set_params(device="cuda").fit(Xin, y)
        assert_allclose(host(clf.coef_), np.asarray(ref.coef_), rtol=1e-8, atol=1e-10)
        D = clf.decision_function(csp.csr_matrix(sp.csr_matrix(X[:60])))
        assert isinstance(D, cupy.ndarray)
        assert_allclose(host(D), ref.decision_function(X[:60]), rtol=1e-8, atol=1e-10)


def test_gamma_scale_of_float32_sparse_input_with_an_offset():
    """(Red team, session 16.) ``gamma="scale"``'s sparse moments ``E[x²] − E[x]²`` are
    summed in float64 for float32 X too: with features offset by 10³ (stored nonzero),
    float32 sums gave γ 0.145 for 0.117; now scikit-learn's value and the dense one."""
    from sklearn.svm import SVC as SklearnSVC

    from svmgpu import SVC

    X, y = _data()
    Xo = (X + 1e3).astype(np.float32)
    want = 1.0 / (X.shape[1] * Xo.astype(np.float64).var())
    for A in (sp.csr_matrix(Xo), Xo):
        assert SVC(solver="lowrank", rank=20).fit(A, y).kernel_.gamma == pytest.approx(
            want, rel=1e-5)
    assert SklearnSVC().fit(sp.csr_matrix(Xo), y)._gamma == pytest.approx(want, rel=1e-5)


def _model_rows_seen(monkeypatch, module):
    """``(rows, sparse)`` of every ``model_rows`` call ``module`` makes (a list, appended to)."""
    from svmgpu.backend import model_rows

    seen = []

    def spy(X, rows, *, xp):
        out = model_rows(X, rows, xp=xp)
        seen.append((out.shape[0], sp.issparse(out)))
        return out

    monkeypatch.setattr(module, "model_rows", spy)
    return seen


@pytest.mark.parametrize("n_classes", [2, 3])
def test_svc_exact_path_keeps_sparse_rows_sparse(monkeypatch, n_classes):
    """svmgpu.SVC's exact path on sparse rows takes its kernel rows from sparse products
    (:class:`~svmgpu.kernels.KernelRows` above PRESOLVE_MIN_ROWS rows, one-vs-one pairs' rows
    stacked sparse) at a density up to SPARSE_SIDE_DENSITY, and keeps its support vectors
    sparse: no row is taken dense (2,000 rows of 100,000 features, 50 nonzeros each, had been
    densified to 1.6 GB: 24–35 s of a fit scikit-learn makes in 2.3 s). scikit-learn's
    predictions."""
    from sklearn.svm import SVC as SkSVC

    import svmgpu
    import svmgpu.estimators.svc as svc_mod

    rng = np.random.default_rng(3)
    X = sp.random(2400, 3000, density=0.01, format="csr", random_state=3)
    w = rng.standard_normal((3000, n_classes))
    y = np.argmax(X @ w + 0.05 * rng.standard_normal((2400, n_classes)), axis=1)
    seen = _dense_rows_seen(monkeypatch, svc_mod)
    kept = _model_rows_seen(monkeypatch, svc_mod)
    clf = svmgpu.SVC(kernel="linear").fit(X, y)  # (text-like rows: fewer SVs than rows)
    assert clf.solver_ == "exact" and not seen and all(sparse for _, sparse in kept)
    assert sp.issparse(clf.support_vectors_) and clf.support_vectors_.shape[0] < 2400
    ref = SkSVC(kernel="linear").fit(X, y)
    assert np.mean(clf.predict(X) == ref.predict(X)) >= 0.995
    # denser rows (SPARSE_SIDE_DENSITY) are taken dense, where BLAS is faster (the fuzz
    # sweeps' sparse sets, density 0.5: 0.90 s dense against 3.89 s sparse)
    kept.clear()
    dense_ish = sp.csr_matrix(np.where(rng.random((600, 20)) < 0.5, rng.standard_normal((600, 20)), 0))
    clf = svmgpu.SVC().fit(dense_ish, np.arange(600) % n_classes)
    assert (600, False) in kept and isinstance(clf.support_vectors_, np.ndarray)


def _text_like(m=1500, d=20_000, nnz=25, seed=0):
    """m rows of d features with nnz nonzeros each (text-like: density nnz / d) and labels of a
    noisy linear rule on them."""
    rng = np.random.default_rng(seed)
    cols = np.sort(np.stack([rng.choice(d, nnz, replace=False) for _ in range(m)]), axis=1)
    X = sp.csr_matrix((rng.random(m * nnz), cols.ravel(), np.arange(0, m * nnz + 1, nnz)),
                      shape=(m, d))
    f = X @ rng.standard_normal(d)
    return X, (f + 0.2 * rng.standard_normal(m) > 0).astype(int), f


@pytest.mark.parametrize("params", [{}, {"solver": "lowrank", "rank": 150},
                                    {"solver": "lowrank", "rank": "auto"}, {"svr": True}],
                         ids=["exact", "lowrank", "auto", "svr"])
def test_a_sparse_fit_keeps_its_support_vectors_sparse(tmp_path, params):
    """A fit of sparse rows with few nonzeros keeps its support vectors (or landmarks) sparse,
    as scikit-learn does (taken dense, 2,000 text rows of 100,000 features made a 1.6 GB
    attribute): the same decision values as the dense fit's, for sparse and dense rows to
    predict, after a pickle and a model file too; denser rows keep dense ones."""
    import pickle

    import svmgpu
    from svmgpu.io import load_model, save_model

    params = dict(params)
    svr = params.pop("svr", False)
    X, y, f = _text_like()
    est = (lambda: svmgpu.SVR(**params)) if svr else (lambda: svmgpu.SVC(**params))
    target = f if svr else y
    sparse_fit, dense_fit = est().fit(X, target), est().fit(X.toarray(), target)
    Z = sparse_fit.support_vectors_
    assert sp.issparse(Z) and Z.format == "csr" and Z.shape[1] == X.shape[1]
    assert isinstance(dense_fit.support_vectors_, np.ndarray)
    assert_allclose(Z.toarray(), dense_fit.support_vectors_)
    rows = X[:300]
    scores = (lambda m, A: m.predict(A)) if svr else (lambda m, A: m.decision_function(A))
    want = scores(dense_fit, rows.toarray())
    assert_allclose(scores(sparse_fit, rows), want, atol=1e-5)
    assert_allclose(scores(sparse_fit, rows.toarray()), want, atol=1e-5)
    save_model(sparse_fit, tmp_path / "m.npz")
    for copy in (pickle.loads(pickle.dumps(sparse_fit)), load_model(tmp_path / "m.npz"),
                 pickle.loads(pickle.dumps(sparse_fit)).to_device("cpu")):
        assert sp.issparse(copy.support_vectors_)
        assert_allclose(scores(copy, rows), scores(sparse_fit, rows), rtol=0, atol=0)
    # rows of more than SPARSE_SIDE_DENSITY nonzeros: dense support vectors
    Xd, yd = _data(300)
    assert isinstance(est().fit(sp.csr_matrix(Xd), Xd[:, 0] if svr else yd).support_vectors_,
                      np.ndarray)


def test_the_refinement_of_sparse_rows_keeps_them_sparse(monkeypatch):
    """The low-rank path's refinement solves its candidates' exact problem on their sparse
    rows (few nonzeros: SPARSE_SIDE_DENSITY), not on them taken dense: the linear kernel on
    12,000 text-like rows of 3,000 features (bench/bench_sparse.py) took 11 s dense, 5.4–6.2 s
    sparse (scikit-learn 8.8 s). No row is taken dense; the model is the exact path's."""
    import svmgpu
    import svmgpu.estimators.svc as svc_mod

    monkeypatch.setattr(svc_mod, "REFINE_MIN_RANK", 150)
    X, y, _ = _text_like(1200, 3000, 20, seed=1)
    seen = _dense_rows_seen(monkeypatch, svc_mod)
    fit = svmgpu.SVC(kernel="linear", solver="lowrank", tol=1e-6).fit(X, y)
    assert "refined" in fit.rank_path_[-1] and not seen  # (the landmarks too: model_rows)
    assert sp.issparse(fit.support_vectors_)
    exact = svmgpu.SVC(kernel="linear", rank=None, tol=1e-6).fit(X, y)
    assert np.mean(fit.predict(X) == exact.predict(X)) >= 0.998
    assert_allclose(fit.decision_function(X), exact.decision_function(X), atol=0.02)


@pytest.mark.parametrize("make", [
    lambda: UniSVC(C=10.0, random_state=0),  # the full form: every row a landmark
    lambda: UniSVC(C=10.0, rank=100, random_state=0),
    lambda: UniSVR(C=10.0, rank=100, random_state=0),
    lambda: ReducedSVC(C=10.0, rank=100, random_state=0),
    lambda: LSSVC(C=10.0),
    lambda: GreedySVC(max_support=60),
    lambda: L2SVMPath(rank=None),  # (its kernel form over the active rows)
    lambda: L2SVMPath(rank=100, random_state=0),  # (refit: the same, expanded)
], ids=["unisvc-full", "unisvc", "unisvr", "reduced", "lssvc", "greedy", "path-exact",
        "path-refit"])
def test_the_paper_estimators_keep_sparse_rows_sparse(tmp_path, make):
    """The paper estimators hold the rows their models keep (landmarks, reduced sets, the full
    form's rows, support vectors) sparse where X's are sparse with few nonzeros (model_rows):
    UniSVC's full form on 2,000 text rows of 100,000 features held 1.6 GB of dense rows and
    took 38 s (7.7 GB at its peak), 1.6 s now. The same predictions as the dense fit's, after
    a model file too."""
    import warnings

    from svmgpu.io import load_model, save_model

    X, y, f = _text_like(500, 4000, 20, seed=2)
    target = f if isinstance(make(), UniSVR) else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # (GreedySVC's max_support)
        sparse_fit, dense_fit = make().fit(X, target), make().fit(X.toarray(), target)
    held = [v for v in (getattr(sparse_fit, "X_fit_", None),
                        getattr(sparse_fit, "support_vectors_", None),
                        getattr(getattr(sparse_fit, "factor_", None), "landmark_X", None),
                        *(mod.get("X_support") for mod in getattr(sparse_fit, "models_", [])
                          if isinstance(mod, dict)))
            if v is not None]
    assert held and all(sp.issparse(v) for v in held)
    scores = getattr(sparse_fit, "decision_function", sparse_fit.predict)
    want = getattr(dense_fit, "decision_function", dense_fit.predict)(X.toarray())
    assert_allclose(scores(X), want, atol=1e-6)
    save_model(sparse_fit, tmp_path / "m.npz")
    again = load_model(tmp_path / "m.npz")
    assert_allclose(getattr(again, "decision_function", again.predict)(X), scores(X), atol=0)


def test_a_memory_budget_counts_sparse_rows_as_sparse():
    """The memory budget charges sparse rows of few nonzeros by their stored entries: the
    exact path's rows (:meth:`SVC._exact_bytes`) and the landmarks' side of the blocked kernel
    loop. 600 text rows of 50,000 features within 40 MB: the exact path (charged as dense
    rows, 480 MB, it had gone to the low-rank path, whose dense landmarks' 100 MB then
    failed the budget), and the low-rank path at 20 MB."""
    import svmgpu

    X, y, _ = _text_like(600, 50_000, 20, seed=3)
    exact = svmgpu.SVC(memory_budget="40MB").fit(X, y)
    assert exact.solver_ == "exact" and sp.issparse(exact.support_vectors_)
    ref = svmgpu.SVC().fit(X, y)
    assert_allclose(exact.decision_function(X), ref.decision_function(X), atol=1e-12)
    low = svmgpu.SVC(solver="lowrank", rank=100, memory_budget="20MB").fit(X, y)
    assert low.solver_ == "lowrank" and sp.issparse(low.support_vectors_)
    free = svmgpu.SVC(solver="lowrank", rank=100).fit(X, y)  # (the same model unbounded)
    assert_allclose(low.decision_function(X), free.decision_function(X), atol=1e-8)


def test_model_rows_keep_sparse_rows_of_few_nonzeros_sparse():
    """backend.model_rows: rows of a sparse X stay CSR where at most SPARSE_SIDE_DENSITY of
    their entries are nonzero (judged on the rows taken), else dense; a dense X's rows are
    dense; the same rows either way. keeps_sparse says the same of X whole. An index out of
    range raises."""
    from svmgpu.backend import keeps_sparse, model_rows
    from svmgpu.backend._sparse import SPARSE_SIDE_DENSITY

    rng = np.random.default_rng(0)
    A = np.zeros((40, 100))
    A[:20, :2] = rng.standard_normal((20, 2))  # rows 0-19: 2 % nonzero
    A[20:, :30] = rng.standard_normal((20, 30))  # rows 20-39: 30 % nonzero
    X = sp.csr_matrix(A)
    few, many = np.arange(0, 20, 3), np.arange(20, 40, 3)
    assert sp.issparse(model_rows(X, few, xp=np)) and 0.02 <= SPARSE_SIDE_DENSITY
    assert isinstance(model_rows(X, many, xp=np), np.ndarray)
    assert isinstance(model_rows(A, few, xp=np), np.ndarray)
    for rows in (few, many, slice(3, 9)):
        got = model_rows(X, rows, xp=np)
        np.testing.assert_array_equal(got.toarray() if sp.issparse(got) else got, A[rows])
    assert keeps_sparse(X[:20]) and not keeps_sparse(X) and not keeps_sparse(A)
    assert not keeps_sparse(sp.csr_matrix((0, 5)))
    with pytest.raises(IndexError):
        model_rows(X, np.array([40]), xp=np)


def test_a_model_file_with_a_damaged_sparse_matrix_is_refused(tmp_path):
    """A sparse support-vector matrix whose column indices leave its shape is refused on
    load (ModelFormatError), not read out of bounds at the first prediction."""
    import json
    import zipfile

    import svmgpu
    from svmgpu.io import ModelFormatError, load_model, save_model

    X, y, _ = _text_like(400, 3000)
    save_model(svmgpu.SVC().fit(X, y), tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays["__svmgpu_meta__"]).decode())
    name = next(k for k, v in meta["arrays"].items() if v["path"].endswith(".indices"))
    arrays[name] = arrays[name].copy()
    arrays[name][0] = 10 ** 6
    np.savez(tmp_path / "bad.npz", **arrays)
    assert zipfile.is_zipfile(tmp_path / "bad.npz")
    with pytest.raises(ModelFormatError, match="sparse matrix of the model file is damaged"):
        load_model(tmp_path / "bad.npz")


@pytest.mark.parametrize("kernel", [RBF(gamma=0.5), Polynomial(gamma=0.5, degree=2), Linear()])
def test_sparse_rows_against_sparse_enough_dense_rows_go_through_csr(monkeypatch, kernel):
    """Dense rows Z multiplied by sparse rows (the support vectors or landmarks of a sparse fit)
    are taken to CSR once where at most SPARSE_SIDE_DENSITY of their entries are nonzero
    (SciPy copied a dense Zᵀ C-contiguous at every block's product: a sparse SVC's predictions
    took 8.3 s against 0.7 s); denser Z, and dense X, are left as they are. The values are the
    dense ones."""
    from svmgpu.backend import sparse_side
    from svmgpu.kernels import kernel_matvec

    rng = np.random.default_rng(0)
    X = sp.random(300, 400, density=0.02, format="csr", random_state=1)
    Z = sp.random(50, 400, density=0.02, format="csr", random_state=2).toarray()
    v = rng.standard_normal((50, 2))
    assert sp.issparse(sparse_side(Z, X)) and sparse_side(Z, X.toarray()) is Z
    half = np.where(rng.random((50, 400)) < 0.5, 1.0, 0.0)
    assert sparse_side(half, X) is half
    ref = kernel.block(X.toarray(), Z) @ v
    assert_allclose(kernel_matvec(kernel, X, Z, v), ref, atol=1e-10)
    # dense rows against sparse Z (a sparse fit's support vectors), in one thread and in one
    # per core (THREADED_MATVEC_VALUES), and within a budget far below Z taken dense
    import svmgpu.kernels._blocked as blocked

    Zs = sp.csr_matrix(Z)
    assert_allclose(kernel_matvec(kernel, X.toarray(), Zs, v), ref, atol=1e-10)
    assert_allclose(kernel.block(X.toarray(), Zs), kernel.block(X.toarray(), Z), atol=1e-12)
    monkeypatch.setattr(blocked, "THREADED_MATVEC_VALUES", 1)
    assert_allclose(kernel_matvec(kernel, X.toarray(), Zs, v), ref, atol=1e-10)
    wide = sp.random(400, 200_000, density=2e-4, format="csr", random_state=4)
    u = rng.standard_normal(400)
    assert_allclose(kernel_matvec(kernel, wide[:50].toarray(), wide, u, memory_budget="50MB"),
                    kernel.block(wide[:50], wide) @ u, atol=1e-10)
    assert_allclose(kernel_matvec(kernel, X, half, v), kernel.block(X.toarray(), half) @ v,
                    atol=1e-10)
