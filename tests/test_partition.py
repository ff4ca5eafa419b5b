"""The partitioned path of svmgpu.SVC / SVR (solver="partition") and its regions
(svmgpu.solvers.partition): k-means, bounded regions, and the per-region exact models."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmgpu import SVC, SVR
from svmgpu.estimators import svc as svc_module
from svmgpu.io import load_model, save_model
from svmgpu.solvers.partition import assign, bounded_regions, kmeans
from svmgpu.testing import assert_allclose


def _blobs(n_per, centres, rng, *, spread=0.3, labels=None):
    """Gaussian blobs around ``centres``, each with a nonlinear two-class label (or the one
    class ``labels[c]``)."""
    X, y = [], []
    for c, mu in enumerate(centres):
        P = mu + spread * rng.standard_normal((n_per, len(mu)))
        lab = np.where(np.sin(4 * (P[:, 0] - mu[0])) + (P[:, 1] - mu[1]) > 0, 1, -1)
        if labels is not None and labels[c] is not None:
            lab = np.full(n_per, labels[c])
        X.append(P)
        y.append(lab)
    return np.vstack(X), np.concatenate(y)


FAR = np.array([[0.0, 0.0], [50.0, 0.0], [0.0, 50.0]])


def test_kmeans_and_assign():
    """assign is the nearest centre (brute force); kmeans finds well-separated blobs, is
    deterministic for a seed, and its labels are assign's."""
    rng = np.random.default_rng(0)
    X, _ = _blobs(200, FAR, rng)
    C = rng.standard_normal((7, 2)) * 20
    brute = np.argmin(((X[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)
    assert np.array_equal(assign(X, C, xp=np), brute)
    centres, labels = kmeans(X, 3, xp=np, random_state=1)
    assert np.array_equal(labels, assign(X, centres, xp=np))
    for b in range(3):  # each blob is one cluster
        assert len(np.unique(labels[b * 200:(b + 1) * 200])) == 1
    assert len(np.unique(labels)) == 3
    c2, l2 = kmeans(X, 3, xp=np, random_state=1)
    assert np.array_equal(l2, labels) and np.array_equal(c2, centres)


def test_kmeans_and_assign_of_offset_features():
    """Features offset by 10⁸ (float64's expanded distances then round by ~10, more than
    the blobs' spread): assign is still the brute-force nearest centre (computed on the
    unshifted rows) and kmeans finds the same clusters as without the offset."""
    rng = np.random.default_rng(0)
    X, _ = _blobs(200, FAR / 25.0, rng)  # (centres 2 apart, spread 0.3)
    C = rng.standard_normal((7, 2))
    brute = np.argmin(((X[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)
    assert np.array_equal(assign(X + 1e8, C + 1e8, xp=np), brute)
    near, second, gap = assign(X + 1e8, C + 1e8, xp=np, second=True)
    _, s0, g0 = assign(X, C, xp=np, second=True)
    assert np.array_equal(near, brute) and np.array_equal(second, s0)
    assert_allclose(gap, g0, rtol=0, atol=1e-6)
    centres, labels = kmeans(X + 1e8, 3, xp=np, random_state=1)
    c0, l0 = kmeans(X, 3, xp=np, random_state=1)
    assert np.array_equal(labels, l0)
    assert_allclose(centres - 1e8, c0, rtol=0, atol=1e-6)


def test_bounded_regions_cover_every_row_within_the_bound():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((900, 3)), 40 + rng.standard_normal((100, 3))])
    centres, labels = bounded_regions(X, 2, 150, xp=np, random_state=0)
    g = centres.shape[0]
    counts = np.bincount(labels, minlength=g)
    assert counts.min() >= 1 and counts.max() <= 150 and counts.sum() == 1000
    assert g >= 1000 // 150
    # second=True: the nearest, second-nearest centre and gap of the returned centres, with
    # and without splits, and the same regions
    for bound in (150, 2000):
        c2, l2, near = bounded_regions(X, 2, bound, xp=np, random_state=0, second=True)
        c1, l1 = bounded_regions(X, 2, bound, xp=np, random_state=0)
        assert np.array_equal(c2, c1) and np.array_equal(l2, l1)
        for got, want in zip(near, assign(X, c2, xp=np, second=True)):
            assert np.array_equal(got, want)
    # identical rows cannot be split by 2-means: they are halved in order
    same = np.ones((50, 2))
    c, lab = bounded_regions(same, 1, 20, xp=np)
    assert np.bincount(lab).max() <= 20 and np.bincount(lab).sum() == 50


def test_one_region_is_the_exact_path():
    """With every row in one region the partitioned path is the exact path: the same decision
    values (two and three classes, class and sample weights) and regression values."""
    rng = np.random.default_rng(2)
    X, y = _blobs(150, FAR[:1], rng)
    y3 = np.where(X[:, 0] < -0.2, 0, np.where(X[:, 0] < 0.2, 1, 2))
    w = rng.uniform(0.5, 2.0, X.shape[0])
    for labels, kw in ((y, {}), (y3, {}), (y, {"class_weight": "balanced"})):
        common = dict(C=5.0, gamma=2.0, tol=1e-10, **kw)
        ref = SVC(solver="exact", **common).fit(X, labels, sample_weight=w)
        got = SVC(solver="partition", region_rows=1000, dtype="float64", **common).fit(
            X, labels, sample_weight=w)
        assert got.solver_ == "partition" and got.region_centers_.shape == (1, 2)
        assert_allclose(got.decision_function(X), ref.decision_function(X), rtol=1e-8,
                        atol=1e-8)
        assert np.array_equal(got.predict(X), ref.predict(X))
        assert np.array_equal(np.sort(got.support_), np.sort(ref.support_))
        assert not hasattr(got, "dual_coef_") and not hasattr(got, "intercept_")
    t = np.sin(3 * X[:, 0]) + X[:, 1] + 5.0
    ref = SVR(solver="exact", C=5.0, gamma=2.0, tol=1e-10).fit(X, t)
    got = SVR(solver="partition", region_rows=1000, C=5.0, gamma=2.0, tol=1e-10,
              dtype="float64").fit(X, t)
    assert_allclose(got.predict(X), ref.predict(X), rtol=1e-8, atol=1e-8)
    # dtype=None: the region's kernel matrix in float32, the model within float32's rounding
    f32 = SVR(solver="partition", region_rows=1000, C=5.0, gamma=2.0, tol=1e-10).fit(X, t)
    assert_allclose(f32.predict(X), ref.predict(X), rtol=1e-4, atol=1e-4)
    assert np.max(np.abs(f32.predict(X) - ref.predict(X))) > 0  # (it did run in float32)


def test_far_apart_regions_are_each_regions_own_svm():
    """Blobs far apart (kernel values between them below rounding) are the regions, and each
    point's decision value is that of an exact SVC fitted on its blob alone; a blob of one
    class predicts that class (decision ±1, no support vectors there)."""
    rng = np.random.default_rng(3)
    X, y = _blobs(120, FAR, rng, labels=[None, None, 1])
    Xt, _ = _blobs(40, FAR, np.random.default_rng(4))
    clf = SVC(C=3.0, gamma=4.0, solver="partition", region_rows=120, tol=1e-10,
              dtype="float64").fit(X, y)
    assert clf.region_centers_.shape[0] == 3
    f = clf.decision_function(Xt)
    for b in range(2):
        own = SVC(C=3.0, gamma=4.0, solver="exact", tol=1e-10).fit(
            X[b * 120:(b + 1) * 120], y[b * 120:(b + 1) * 120])
        assert_allclose(f[b * 40:(b + 1) * 40],
                        own.decision_function(Xt[b * 40:(b + 1) * 40]), rtol=1e-8, atol=1e-8)
    assert np.all(f[80:] == 1.0) and np.all(clf.predict(Xt[80:]) == 1)
    assert np.all(clf.support_ < 240)  # the one-class blob holds no support vector
    starts = np.asarray(clf.region_starts_)
    assert starts[0] == 0 and starts[-1] == clf.support_.shape[0]


def test_model_file_sparse_input_and_multiclass_predict(tmp_path):
    """A partitioned model survives a model file; sparse input gives the dense input's model
    (the rows are made dense, as on the exact path); three classes predict by the votes of
    each region's pairs."""
    rng = np.random.default_rng(5)
    X, y = _blobs(100, FAR, rng)
    y3 = np.where(y > 0, 1, 0) + 2 * (X[:, 0] > 25)
    clf = SVC(C=3.0, gamma=4.0, solver="partition", region_rows=100).fit(X, y3)
    path = tmp_path / "m.npz"
    save_model(clf, path)
    back = load_model(path)
    assert np.array_equal(back.predict(X), clf.predict(X))
    assert_allclose(back.decision_function(X), clf.decision_function(X), rtol=1e-12)
    assert np.mean(clf.predict(X) == y3) > 0.9
    S = SVC(C=3.0, gamma=4.0, solver="partition", region_rows=100).fit(sp.csr_matrix(X), y3)
    assert_allclose(S.decision_function(sp.csr_matrix(X)), clf.decision_function(X),
                    rtol=1e-10, atol=1e-10)


def test_auto_takes_the_partition_for_a_local_kernel_only(monkeypatch):
    """Above EXACT_MAX_ROWS, solver="auto" takes the partitioned path when the median kernel
    value between random rows is below LOCAL_KERNEL_LEVEL (SVC's above LOCAL_REFINE_MAX_ROWS
    only: below, the low-rank path, refined into the exact SVM's answer, which the regions'
    intercepts change), the low-rank path otherwise."""
    from sklearn.svm import SVC as SklearnSVC

    monkeypatch.setattr(svc_module, "EXACT_MAX_ROWS", 100)
    rng = np.random.default_rng(6)
    X, y = _blobs(100, FAR, rng)  # (300 rows)
    monkeypatch.setattr(svc_module, "LOCAL_REFINE_MAX_ROWS", 300)
    below = SVC(gamma=4.0, region_rows=100).fit(X, y)
    assert below.solver_ == "lowrank"
    Xt, _ = _blobs(50, FAR, np.random.default_rng(16))
    agree = np.mean(below.predict(Xt) == SklearnSVC(gamma=4.0).fit(X, y).predict(Xt))
    assert agree >= 0.99
    monkeypatch.setattr(svc_module, "SVR_EXACT_MAX_ROWS", 100)  # (SVR has no refinement)
    assert SVR(gamma=4.0).fit(X, y.astype(float)).solver_ == "partition"
    monkeypatch.setattr(svc_module, "LOCAL_REFINE_MAX_ROWS", 299)
    local = SVC(gamma=4.0, region_rows=100).fit(X, y)
    assert local.solver_ == "partition"
    smooth = SVC(gamma=1e-4, rank=50).fit(X, y)  # an explicit rank: the landmarks
    assert smooth.solver_ == "lowrank"
    wide = SVC(gamma=1e-4).fit(X, y)  # every kernel value near 1: not local
    assert wide.solver_ == "lowrank"
    assert wide.rank_path_[0]["rank"] == min(svc_module.AUTO_RANK_START, 300)
    assert SVC(gamma=4.0, kernel="poly").fit(X, y).solver_ == "lowrank"  # no decay


def test_region_rows_is_validated_and_the_budget_checked_first():
    X, y = _blobs(50, FAR[:2], np.random.default_rng(7))
    with pytest.raises(ValueError, match="region_rows"):
        SVC(solver="partition", region_rows=1).fit(X, y)
    with pytest.raises(MemoryError, match="lower region_rows"):  # a region's kernel: 160 kB
        SVC(solver="partition", region_rows=100, memory_budget="100kB").fit(X, y)
    # a budget that holds regions of 40 rows but not all 100: k-means regions are split
    clf = SVC(solver="partition", region_rows=40, memory_budget="60kB", gamma=1.0,
              dtype="float64").fit(X, y)
    assert np.diff(np.asarray(clf.region_starts_)).size == clf.region_centers_.shape[0]


def test_regions_solved_in_threads_give_the_sequential_model(monkeypatch):
    rng = np.random.default_rng(8)
    X, y = _blobs(80, FAR, rng)
    y3 = np.where(y > 0, 1, 0) + 2 * (X[:, 1] > 25)
    fits = []
    for threads in (1, 2):
        monkeypatch.setattr(svc_module, "PARTITION_THREADS", threads)
        fits.append(SVC(C=3.0, gamma=4.0, solver="partition", region_rows=40).fit(X, y3))
    a, b = fits
    assert np.array_equal(a.support_, b.support_)
    assert np.array_equal(a.pair_coef_, b.pair_coef_)
    assert np.array_equal(a.region_intercept_, b.region_intercept_)


def test_probability_and_ovo_shapes_on_the_partitioned_path():
    """Platt's cross-validation refits the partitioned model on its folds; the probabilities
    sum to 1 and agree with the labels; "ovo" gives the pairwise values."""
    rng = np.random.default_rng(9)
    X, y = _blobs(120, FAR, rng)
    y3 = np.where(y > 0, 1, 0) + 2 * (X[:, 0] > 25)
    clf = SVC(C=3.0, gamma=4.0, solver="partition", region_rows=120, probability=True,
              random_state=0).fit(X, y3)
    P = clf.predict_proba(X)
    assert P.shape == (360, 4) and np.allclose(P.sum(axis=1), 1.0)
    assert np.mean(clf.classes_[P.argmax(axis=1)] == y3) > 0.9
    ovo = SVC(C=3.0, gamma=4.0, solver="partition", region_rows=120,
              decision_function_shape="ovo").fit(X, y3)
    assert ovo.decision_function(X).shape == (360, 6)


def test_assign_second_nearest_and_gap_brute_force():
    rng = np.random.default_rng(10)
    X = rng.standard_normal((500, 3))
    C = rng.standard_normal((6, 3))
    D = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    order = np.argsort(D, axis=1)
    first, second, gap = assign(X, C, xp=np, second=True)
    assert np.array_equal(first, order[:, 0]) and np.array_equal(second, order[:, 1])
    rows = np.arange(500)
    assert_allclose(gap, D[rows, order[:, 1]] - D[rows, order[:, 0]], rtol=1e-10, atol=1e-12)
    one = assign(X, C[:1], xp=np, second=True)
    assert np.array_equal(one[1], one[0]) and np.all(one[2] == 0)


def test_overlap_band_rows_join_both_regions_and_predictions_blend():
    """With region_overlap=ρ (RBF: a band of squared distance ρ/γ), a row also joins the region
    of its second-nearest centre when its squared distance to it is within the band, and a
    point of the band is predicted by both regions' exact SVMs, the second weighted
    ½ − gap/(2·band): the decision values of exact SVCs fitted on those memberships."""
    rng = np.random.default_rng(11)
    X, y = _blobs(150, np.array([[0.0, 0.0], [2.0, 0.0]]), rng, spread=0.6)
    Xt, _ = _blobs(60, np.array([[0.0, 0.0], [2.0, 0.0]]), np.random.default_rng(12),
                   spread=0.6)
    common = dict(C=3.0, gamma=1.0, tol=1e-10)
    common["dtype"] = "float64"
    clf = SVC(solver="partition", region_rows=150, region_overlap=1.0, **common).fit(X, y)
    band = clf.region_overlap_
    assert band == pytest.approx(1.0)  # ρ / γ
    C = np.asarray(clf.region_centers_)
    assert C.shape[0] == 2

    def nearest(P):
        D = ((P[:, None, :] - C[None, :, :]) ** 2).sum(-1)
        near = D.argmin(axis=1)
        return near, np.abs(D[:, 1] - D[:, 0])

    near, gap = nearest(X)
    members = [np.flatnonzero((near == j) | (gap < band)) for j in range(2)]
    assert 0 < np.sum(gap < band) < len(X)  # the band holds some rows, not all
    own = [SVC(solver="exact", **common).fit(X[r], y[r]) for r in members]
    near_t, gap_t = nearest(Xt)
    f_near = np.where(near_t == 0, own[0].decision_function(Xt), own[1].decision_function(Xt))
    f_other = np.where(near_t == 0, own[1].decision_function(Xt), own[0].decision_function(Xt))
    w = np.maximum(0.5 - gap_t / (2 * band), 0.0)
    assert np.sum(w > 0) > 0
    assert_allclose(clf.decision_function(Xt), (1 - w) * f_near + w * f_other, rtol=1e-7,
                    atol=1e-7)
    # region_overlap=0: disjoint regions, each point by its nearest region's model
    plain = SVC(solver="partition", region_rows=150, region_overlap=0, **common).fit(X, y)
    assert plain.region_overlap_ == 0.0
    alone = [SVC(solver="exact", **common).fit(X[near == j], y[near == j]) for j in range(2)]
    assert_allclose(plain.decision_function(Xt),
                    np.where(near_t == 0, alone[0].decision_function(Xt),
                             alone[1].decision_function(Xt)), rtol=1e-7, atol=1e-7)
    with pytest.raises(ValueError, match="region_overlap"):
        SVC(solver="partition", region_overlap=-1.0).fit(X, y)


def test_overlap_never_takes_a_region_past_its_bound(monkeypatch):
    """The band's extra rows are dropped from a region they would take past the exact solve's
    row bound (here set by the memory budget); without a tight bound they stay."""
    X, y = _blobs(50, FAR[:2], np.random.default_rng(7))
    seen = []
    real = svc_module.SVC._overlap_rows

    def spy(self, near, regions, max_rows):
        extra = real(self, near, regions, max_rows)
        e, g = np.asarray(extra), self.region_centers_.shape[0]
        sizes = np.bincount(np.asarray(regions), minlength=g) + np.bincount(e[e >= 0],
                                                                            minlength=g)
        seen.append((max_rows, sizes.max(), int(np.sum(e >= 0))))
        return extra

    monkeypatch.setattr(svc_module.SVC, "_overlap_rows", spy)
    kw = dict(solver="partition", region_rows=40, gamma=1.0, region_overlap=5.0, dtype="float64")
    SVC(memory_budget="60kB", **kw).fit(X, y)
    SVC(**kw).fit(X, y)
    (bound, largest, _), (_, _, n_extra) = seen
    assert largest <= bound == 40
    assert n_extra > 0


def test_dask_input_without_a_cluster_and_its_refusals(monkeypatch):
    """Dask input (no cluster: Dask's local scheduler) gives the in-memory model; a region that
    the in-memory fit would split by 2-means is refused, naming the fix."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(12)
    X, y = _blobs(150, np.array([[0.0, 0.0], [2.0, 0.0]]), rng, spread=0.6)
    Xd, yd = da.from_array(X, chunks=110), da.from_array(y, chunks=110)
    kw = dict(C=3.0, gamma=1.0, solver="partition", region_rows=100)
    a, b = SVC(**kw).fit(X, y), SVC(**kw).fit(Xd, yd)
    assert_allclose(b.decision_function(X), a.decision_function(X), rtol=0, atol=1e-10)
    monkeypatch.setattr(svc_module, "REGION_MAX_ROWS", 60)
    with pytest.raises(ValueError, match="a Dask fit does not yet.*lower region_rows"):
        SVC(**kw).fit(Xd, yd)


def test_a_region_without_positive_weight_is_not_solved():
    """SVR: a region whose rows all have weight 0 has nothing to fit (its LS-SVM start divided
    by zero): it predicts 0, with no support vectors; the other regions are their own SVRs."""
    rng = np.random.default_rng(13)
    X, _ = _blobs(60, FAR[:2], rng)
    t = np.sin(X[:, 0]) + X[:, 1] + 3.0
    w = np.ones(len(t))
    w[60:] = 0.0  # the second blob: no weight
    got = SVR(C=3.0, gamma=4.0, solver="partition", region_rows=60, dtype="float64",
              tol=1e-10).fit(X, t, sample_weight=w)
    assert got.region_centers_.shape[0] == 2
    assert np.all(got.support_ < 60) and np.all(got.predict(X[60:]) == 0.0)
    own = SVR(C=3.0, gamma=4.0, solver="exact", tol=1e-10).fit(X[:60], t[:60])
    assert_allclose(got.predict(X[:60]), own.predict(X[:60]), rtol=1e-8, atol=1e-8)
