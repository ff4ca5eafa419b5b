"""Never silently wrong (issue 12): non-finite fits and decisions raise with the cause."""

import numpy as np
import pytest

from svmgpu import LSSVC, ReducedSVC, UniSVC, UniSVR
from svmgpu.backend import to_device
from svmgpu.datasets import make_checkerboard
from svmgpu.testing import assert_allclose, host


def test_nan_coefficients_raise_at_fit(device):
    """LSSVC with a degree-7 polynomial kernel on float32 inputs of size 1e3: the kernel
    overflows float32 and every decision value would be NaN (predict: one class)."""
    X, y = make_checkerboard(300, random_state=0)
    Xd = to_device((X * 1e3).astype(np.float32), device)
    with pytest.raises(FloatingPointError, match="NaN or infinite.*StandardScaler"):
        LSSVC(kernel="poly", degree=7, gamma=1.0).fit(Xd, to_device(y, device))
    # the same data, scaled: a finite model
    LSSVC(kernel="poly", degree=7, gamma=1.0).fit(to_device(X.astype(np.float32), device),
                                                  to_device(y, device))


@pytest.mark.parametrize("make", [
    lambda: LSSVC(kernel="poly", degree=7, gamma=1.0, dtype="float32"),
    lambda: UniSVC(kernel="poly", degree=7, gamma=1.0, rank=40, random_state=0,
                   dtype="float32"),
    lambda: ReducedSVC(kernel="poly", degree=7, gamma=1.0, rank=40, random_state=0,
                       dtype="float32"),
])
def test_non_finite_decisions_raise_instead_of_predicting(make, device):
    X, y = make_checkerboard(300, random_state=1)
    clf = make().fit(to_device(X.astype(np.float32), device), to_device(y, device))
    huge = to_device((X[:20] * 1e7).astype(np.float32), device)
    for call in (clf.predict, clf.decision_function):
        with pytest.raises(FloatingPointError, match="decision values are NaN or infinite"):
            call(huge)
    clf.predict(to_device(X[:20].astype(np.float32), device))  # finite inputs still predict


def test_regressor_non_finite_predictions_raise():
    x = np.linspace(-1, 1, 200)[:, None]
    reg = UniSVR(kernel="poly", degree=7, gamma=1.0, rank=30, random_state=0,
                 dtype="float32").fit(x.astype(np.float32), np.sin(3 * x[:, 0]))
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        reg.predict((x * 1e7).astype(np.float32))


def test_overflowing_features_raise_for_every_feature_builder(device):
    """Nyström, pivoted-Cholesky and reduced-kernel features check their values once."""
    from svmgpu.kernels import Polynomial, kernel_columns
    from svmgpu.lowrank import nystrom, pivoted_cholesky

    X, _ = make_checkerboard(200, random_state=2)
    big = to_device((X * 1e3).astype(np.float32), device)
    kern = Polynomial(gamma=1.0, degree=7, coef0=0.0)
    for build in (lambda: nystrom(big, kern, 20, random_state=0),
                  lambda: pivoted_cholesky(big, kern, 20),
                  lambda: kernel_columns(kern, big, big[:10, ...])):
        with pytest.raises(FloatingPointError, match="kernel values are NaN or infinite"):
            build()


def test_degenerate_kernels_raise_clearly_and_zero_rows_are_never_landmarks():
    y = np.tile([0, 1], 25)
    for lowrank in ("nystrom", "pivoted_cholesky"):
        with pytest.raises(ValueError, match="kernel matrix is zero"):
            UniSVC(kernel="linear", rank=10, lowrank=lowrank).fit(np.zeros((50, 3)), y)
    rng = np.random.default_rng(0)
    for seed in range(10):  # 98 % all-zero rows: the landmarks are drawn among the others
        X = np.zeros((200, 3))
        X[:4] = rng.normal(size=(4, 3))
        clf = UniSVC(kernel="linear", rank=10, random_state=seed).fit(X, np.tile([0, 1], 100))
        assert 1 <= clf.factor_.rank <= 3
        assert np.all(np.asarray(clf.landmarks_) < 4)


def test_zero_weight_rows_are_not_landmarks_so_zero_weight_equals_dropping(device):
    X, y = make_checkerboard(800, random_state=3)
    w = np.ones(800)
    w[::4] = 0.0
    keep = w > 0
    kw = dict(rank=60, gamma=4.0, C=10.0, random_state=0)
    a = UniSVC(**kw).fit(to_device(X, device), to_device(y, device),
                         sample_weight=to_device(w, device))
    b = UniSVC(**kw).fit(to_device(X[keep], device), to_device(y[keep], device))
    assert np.all(w[host(a.landmarks_)] > 0)
    Xd = to_device(X, device)
    assert_allclose(a.decision_function(Xd), host(b.decision_function(Xd)), rtol=1e-8,
                    atol=1e-8)


_PEAK_SCRIPT = r"""
import json, sys
import numpy as np
from svmgpu import ReducedSVC, UniSVC
from svmgpu.datasets import make_checkerboard
m, budget, which = int(sys.argv[1]), sys.argv[2], sys.argv[3]
X, y = make_checkerboard(m, random_state=0)
UniSVC(rank=20, random_state=0).fit(X[:2000], y[:2000])  # imports and BLAS set up first
def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))
with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
    fh.write("5")
base = status("VmRSS:")
Est = UniSVC if which == "UniSVC" else ReducedSVC
est = Est(C=10.0, gamma=16.0, rank=100, random_state=0, memory_budget=budget).fit(X, y)
peak = status("VmHWM:") - base
ref = Est(C=10.0, gamma=16.0, rank=100, random_state=0).fit(X, y)  # features in memory
diff = float(np.max(np.abs(est.decision_function(X[:2000]) - ref.decision_function(X[:2000]))))
print(json.dumps({"peak": peak, "diff": diff}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("which", ["UniSVC", "ReducedSVC"])
def test_memory_budget_bounds_the_fit_features_included(which, tmp_path):
    """The memory budget covers what the fit allocates beyond its input, the m × r features
    included: 100k × 100 features (80 MB) do not fit 30 MB, so their rows are recomputed per
    block. Measured: the peak resident memory above the post-data baseline stays under the
    budget, and the model equals the one fitted with the features in memory."""
    import json
    import subprocess
    import sys

    script = tmp_path / "peak.py"
    script.write_text(_PEAK_SCRIPT)
    out = subprocess.run([sys.executable, str(script), "100000", "30MB", which],
                         capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["peak"] <= 30e6, res
    assert res["diff"] < 1e-6, res


def test_budget_too_small_for_the_per_sample_vectors_refuses_up_front():
    import time

    X, y = make_checkerboard(1_000_000, random_state=0)
    t = time.perf_counter()
    with pytest.raises(MemoryError, match=r"1,000,000 samples.*about 1\d\d MB.*\(50\.0 MB\)"):
        UniSVC(rank=300, memory_budget="50MB").fit(X, y)
    assert time.perf_counter() - t < 2.0  # before any kernel evaluation
    with pytest.raises(MemoryError, match="lowrank='nystrom'"):  # built column by column
        UniSVC(rank=100, lowrank="pivoted_cholesky", memory_budget="30MB").fit(X[:100_000],
                                                                               y[:100_000])
    from svmgpu.backend import format_bytes

    assert format_bytes(1_000_000) == "1.00 MB" and format_bytes(3) == "3 bytes"


def test_spd_systems_rounding_to_indefinite_are_jittered_with_a_warning_or_refused():
    """SPD in exact arithmetic, indefinite in floating point: the closed forms factor with the
    smallest diagonal shift that works and say so; the Newton Hessian at C = 1e300 is refused
    with the fix (was: a raw LinAlgError)."""
    from svmgpu import PSVC, WPSVC

    X, y = make_checkerboard(500, random_state=0)
    for est in (PSVC(), WPSVC()):
        with pytest.warns(RuntimeWarning, match="not numerically positive definite.*added to "
                                                "its diagonal.*StandardScaler"):
            est.fit(X + 1e8, y)
        assert np.all(np.isfinite(est.decision_function(X + 1e8)))
    with pytest.warns(RuntimeWarning, match="dual system"):  # (C · m within the estimators'
        clf = LSSVC(C=1e160, gamma=16.0).fit(X, y)  # limit, 1e170: 1/C below rounding)
    assert clf.score(X, y) > 0.95  # interpolation, with a shift of ~1e-14


@pytest.mark.parametrize("smw", [False, True])
def test_newton_hessian_that_cannot_be_factored_is_refused_on_every_backend(smw, device):
    """At C = 1e300 the Newton system is refused with the fix (was: a raw LinAlgError). Off
    NumPy the factor's check is deferred to the iteration's second read (one device sync
    less): a failed factor must still be caught there, solved again checked and refused,
    through the Cholesky Hessian and through SMW (28) (was: a raw LinAlgError from SMW)."""
    from svmgpu.losses import get_loss
    from svmgpu.solvers.unisvm import unisvm_newton

    X, y = make_checkerboard(500, random_state=0)
    Xd, yd = to_device(X, device), to_device(y, device)
    xp = device.xp
    if not smw:  # refused up front by the estimator, and by the solver itself
        with pytest.raises(ValueError, match="lower C"):
            ReducedSVC(C=1e300, rank=50, random_state=0).fit(Xd, yd)
        from svmgpu.kernels import RBF, kernel_columns
        from svmgpu.solvers.reduced import newton_reduced

        F = kernel_columns(RBF(gamma=1.0), Xd, Xd[:50, :])
        labels = 2.0 * xp.astype(yd == yd[0], xp.float64) - 1.0
        with pytest.raises(FloatingPointError, match="lower C"):
            newton_reduced(F, labels, C=1e300, xp=xp)
        return
    # SMW: fewer active rows than features; a Gram matrix U Uᵀ of duplicated rows whose
    # λΛ⁻¹ shift is below its rounding
    P = xp.asarray(to_device(np.repeat(X[:3] * 1e3, 2, axis=0), device))
    yy = xp.asarray(to_device(np.array([1.0, 1.0, -1.0, -1.0, 1.0, 1.0]), device))
    P = xp.concat([P, xp.zeros((6, 8), dtype=P.dtype, device=P.device)], axis=1)
    with pytest.raises(FloatingPointError, match="lower C"):
        unisvm_newton(yy, get_loss("squared_hinge"), C=1e300, P=P, presolve=False, xp=xp)


def test_rank_above_the_samples_means_all_of_them_everywhere():
    """One rule for every estimator: an int rank above the number of (positive-weight)
    samples is capped there (rank_ says so); was: clamped by some, rejected by others."""
    from svmgpu import PSVC, WPSVC, L2SVMPath

    X, y = make_checkerboard(120, random_state=5)
    assert UniSVC(rank=500, random_state=0).fit(X, y).rank_ == 120
    assert UniSVR(rank=500, random_state=0).fit(X, y.astype(float)).rank_ == 120
    assert L2SVMPath(rank=500, random_state=0).fit(X, y).rank_ == 120
    for est in (ReducedSVC(rank=500, random_state=0), LSSVC(rank=500, random_state=0),
                PSVC(kernel="rbf", rank=500, random_state=0),
                WPSVC(kernel="rbf", rank=500, random_state=0)):
        assert est.fit(X, y).rank_ == 120 and est.support_vectors_.shape[0] == 120
    w = np.ones(120)
    w[:20] = 0.0
    assert ReducedSVC(rank=500, random_state=0).fit(X, y, sample_weight=w).rank_ == 100


def test_unscaled_features_warn_with_gamma_scale():
    X, y = make_checkerboard(1000, random_state=6)
    X[:, 0] *= 1e6
    with pytest.warns(UserWarning, match="StandardScaler"):
        UniSVC(rank=50, random_state=0).fit(X, y)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        UniSVC(rank=50, random_state=0, gamma=1.0).fit(X, y)  # an explicit gamma: no warning
        UniSVC(rank=50, random_state=0).fit(X / [1e6, 1.0], y)


@pytest.mark.parametrize("make", [
    lambda cw: ReducedSVC(C=1.0, gamma=4.0, rank=80, random_state=0, class_weight=cw),
    lambda cw: LSSVC(C=1.0, gamma=4.0, rank=80, random_state=0, class_weight=cw),
    lambda cw: UniSVC(C=1.0, gamma=4.0, rank=80, random_state=0, class_weight=cw),
])
def test_class_weight_balanced_finds_a_one_percent_minority(make, device):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4000, 2))
    y = np.zeros(4000, dtype=int)
    minority = rng.choice(4000, 40, replace=False)
    X[minority] = rng.normal(loc=(1.8, 1.8), scale=0.4, size=(40, 2))
    y[minority] = 1
    Xd, yd = to_device(X, device), to_device(y, device)
    plain = make(None).fit(Xd, yd)
    bal = make("balanced").fit(Xd, yd)
    recall = {name: float(np.mean(host(est.predict(Xd))[minority] == 1))
              for name, est in (("plain", plain), ("balanced", bal))}
    assert recall["balanced"] > 0.8 and recall["balanced"] > recall["plain"], recall
    assert_allclose(bal.class_weight_, [4000 / (2 * 3960), 4000 / (2 * 40)], rtol=1e-12)
    # a dict: the same weights by label
    d = make({0: 4000 / 7920, 1: 50.0}).fit(Xd, yd)
    assert_allclose(d.decision_function(Xd), host(bal.decision_function(Xd)), rtol=1e-6,
                    atol=1e-6)


def test_class_weight_for_psvc_wpsvc_and_bad_values():
    from svmgpu import PSVC, WPSVC

    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 2))
    y = np.zeros(3000, dtype=int)
    minority = rng.choice(3000, 30, replace=False)
    X[minority] += 2.0
    y[minority] = 1
    for Est in (PSVC, WPSVC):
        assert np.mean(Est(kernel="rbf", gamma=2.0, rank=60, random_state=0,
                           class_weight="balanced").fit(X, y).predict(X)[minority] == 1) > 0.8
    for cw, match in (({2: 1.0}, "not in y"), ({1: -1.0}, "non-negative"), ("even", "balanced")):
        with pytest.raises(ValueError, match=match):
            PSVC(class_weight=cw).fit(X, y)


class _PoolPeak:
    """A CuPy memory hook recording the peak of the bytes in use (allocations minus frees)."""

    def __init__(self, cupy):
        hook = self

        class Hook(cupy.cuda.MemoryHook):
            name = "svmgpu-peak"

            def malloc_postprocess(self, **kw):  # a chunk handed out by the pool
                hook.live[kw["mem_ptr"]] = kw["mem_size"]
                hook.now += kw["mem_size"]
                hook.peak = max(hook.peak, hook.now)

            def free_postprocess(self, **kw):  # a chunk returned to the pool
                hook.now -= hook.live.pop(kw["mem_ptr"], 0)

        self.live, self.now, self.peak = {}, 0, 0
        self.hook = Hook()


@pytest.mark.gpu
def test_memory_budget_bounds_the_fit_on_the_gpu():
    """CuPy: the pool's peak of live device memory during a fit whose 100k x 100 features do
    not fit 30 MB (rows recomputed per block) stays under the budget."""
    import cupy

    X, y = make_checkerboard(100_000, random_state=0)
    Xd, yd = to_device(X, "cuda"), to_device(y, "cuda")
    UniSVC(rank=20, random_state=0, device="cuda").fit(Xd[:2000], yd[:2000])  # warm-up
    for Est in (UniSVC, ReducedSVC):
        peak = _PoolPeak(cupy)
        with peak.hook:
            est = Est(C=10.0, gamma=16.0, rank=100, random_state=0, device="cuda",
                      memory_budget="30MB").fit(Xd, yd)
        assert peak.peak <= 30e6, (Est.__name__, peak.peak)
        ref = Est(C=10.0, gamma=16.0, rank=100, random_state=0, device="cuda").fit(Xd, yd)
        assert_allclose(est.decision_function(Xd[:2000]),
                        host(ref.decision_function(Xd[:2000])), atol=1e-6)


def test_gsvm_zero_weight_equals_removing_the_row(device):
    """GSVM's ½‖z‖² is not invariant to repeated reduced-set columns, so a weight of 2 is not
    a duplicated row there (scikit-learn's check is an xfail); the weaker statement holds
    exactly: a zero weight removes the row (the reduced set is drawn among positive-weight rows
    and gamma='scale' takes the weighted variance)."""
    X, y = make_checkerboard(600, random_state=9)
    w = np.ones(600)
    w[1::3] = 0.0
    keep = w > 0
    kw = dict(rank=80, C=10.0, random_state=0)
    a = ReducedSVC(**kw).fit(to_device(X, device), to_device(y, device),
                             sample_weight=to_device(w, device))
    b = ReducedSVC(**kw).fit(to_device(X[keep], device), to_device(y[keep], device))
    Xd = to_device(X, device)
    assert_allclose(a.decision_function(Xd), host(b.decision_function(Xd)), rtol=1e-8,
                    atol=1e-8)


#: One fit's peak resident memory above the post-data baseline, in a fresh process:
#: ``python script.py CASE`` prints ``{"peak": bytes, "diff": max |decision - reference|}``.
_CASE_PEAK_SCRIPT = """
import json, sys
import numpy as np
from svmgpu import UniSVC, WPSVC
case = sys.argv[1]
d = 60 if case == "wpsvc" else 20
X = np.random.default_rng(0).standard_normal((200_000 if case == "wpsvc" else 100_000, d))
y = X[:, 0] > 0
(WPSVC() if case == "wpsvc" else UniSVC(rank=20)).fit(X[:2000], y[:2000])  # imports, BLAS
def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS:")
if case == "wpsvc":
    est, ref = WPSVC(memory_budget="100MB").fit(X, y), WPSVC()
else:
    est, ref = UniSVC(probability=True, memory_budget="60MB").fit(X, y), None
peak = status("VmHWM:") - base
diff = 0.0 if ref is None else float(np.max(np.abs(
    est.decision_function(X[:2000]) - ref.fit(X, y).decision_function(X[:2000]))))
print(json.dumps({"peak": peak, "diff": diff}))
"""


def _case_peak(tmp_path, case):
    import json
    import subprocess
    import sys

    script = tmp_path / "peak.py"
    script.write_text(_CASE_PEAK_SCRIPT)
    out = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_memory_budget_bounds_wpsvm_weights_and_the_pivoted_reduced_set(tmp_path):
    """Issue 26 item 3: WPSVC's class-centre distances made m x n float64 temporaries (+290 MB
    over a 100 MB budget on 200k x 60); ReducedSVC's pivoted-Cholesky reduced set built its
    m x r factor without a check (+500 MB over 80 MB). Now the distances go a block of rows
    at a time (the same weights), and the factor is refused up front when it cannot fit."""
    res = _case_peak(tmp_path, "wpsvc")
    assert res["peak"] <= 100e6 and res["diff"] < 1e-9, res
    X = np.random.default_rng(0).standard_normal((200_000, 20))
    with pytest.raises(MemoryError, match=r"pivoted-Cholesky reduced set \(200,000 x 300 "
                                          r"factor\).*reduced_set='random'"):
        ReducedSVC(reduced_set="pivoted_cholesky", memory_budget="80MB").fit(X, X[:, 0] > 0)


def test_blocked_class_centre_weights_equal_the_whole_ones():
    from svmgpu.solvers.closed_form import center_distance_weights

    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, 7))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    w = rng.uniform(0, 2, 1000)
    whole = center_distance_weights(X, y, q=1.0, sample_weight=w, xp=np_xp())
    blocked = center_distance_weights(X, y, q=1.0, sample_weight=w, xp=np_xp(),
                                      memory_budget=3 * 8 * 7 * 64)  # blocks of 32 rows
    np.testing.assert_allclose(blocked, whole, rtol=1e-13, atol=1e-15)


def np_xp():
    import array_api_compat.numpy as xp

    return xp


@pytest.mark.slow
def test_memory_budget_bounds_probability_and_prediction(tmp_path):
    """Issue 26 item 3: UniSVC(probability=True, memory_budget="80MB") on 200k x 20 peaked
    +170 MB: each fold predicted its held-out rows through their n x r Nystrom features. Now
    prediction is K(x, landmarks)(L^-T beta) in kernel blocks (O(n r d), bounded), and the
    folds' copies of X come out of the budget before the folds' fits get the rest. Run at
    half the scale since session 28 (100k x 20 within 60 MB: 33 s instead of 73 s; peak 47 MB;
    a fold's held-out features alone, 20,000 x 300 float64, would be 48 MB beside its fit)."""
    assert _case_peak(tmp_path, "probability")["peak"] <= 60e6
    # the blocked prediction is the features' prediction, to rounding
    X, y = make_checkerboard(3000, random_state=0)
    clf = UniSVC(C=10.0, gamma=16.0, rank=100, random_state=0, memory_budget="3MB").fit(X, y)
    feats = clf.factor_.transform(X[:500])
    np.testing.assert_allclose(clf.decision_function(X[:500]), feats @ clf.coef_,
                               rtol=1e-9, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SVC", "SVR", "UniSVC", "UniSVR", "ReducedSVC", "GreedySVC",
                                  "L2SVMPath", "LSSVC", "PSVC", "WPSVC"])
def test_memory_budget_matrix(name):
    """Issue 26 item 3: every estimator x option (float32, weights, sparse, three classes,
    probability=True, pivoted Cholesky, SVC's exact path) with memory_budget="12MB" on 20,000
    x 20 rows (features of rank 200 would take 32 MB): the peak resident memory above the
    case's baseline stays within the budget, whether the case fits or is refused up front
    with a MemoryError. Measured before: GreedySVC 11 MB at a 6 MB budget (its copies of X
    were outside it), WPSVC's sparse rows 15 MB, GreedySVC(probability=True) 13 MB.
    GreedySVC at half the scale, 6 MB on 10,000 rows (its copies of X scale with the rows; its
    six cases took 52 s at 20,000 rows, 21 s at 10,000; peaks 4.8 MB at most)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from svmgpu.estimators import REGISTRY

    assert set(REGISTRY) == {"SVC", "SVR", "UniSVC", "UniSVR", "ReducedSVC", "GreedySVC",
                             "L2SVMPath", "LSSVC", "PSVC", "WPSVC"}  # (the matrix's rows)
    script = Path(__file__).with_name("budget_matrix_case.py")
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    mb, m = (6, 10_000) if name == "GreedySVC" else (12, 20_000)
    out = subprocess.run([sys.executable, str(script), name, f"{mb}MB", str(m)],
                         capture_output=True, text=True, check=True, env=env)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert {r["case"] for r in rows} >= {"default", "float32", "weights", "sparse"}
    for r in rows:
        assert r["outcome"] == "fitted" or r["outcome"].startswith("MemoryError"), r
        assert r["peak"] <= mb * 1e6, r
