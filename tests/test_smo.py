"""SMO on the exact path's dual (svmgpu.solvers.smo): the exact Newton iteration's minimum for
the same Huber loss, LIBSVM's model as the corners vanish, and the crawl it takes over."""

import logging
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.svm import SVC as SklearnSVC
from sklearn.svm import SVR as SklearnSVR

from svmgpu import SVR
from svmgpu.backend import to_device
from svmgpu.estimators import svc
from svmgpu.kernels import RBF, KernelRows
from svmgpu.losses import get_loss
from svmgpu.solvers import smo as smo_module
from svmgpu.solvers.exact import exact_newton
from svmgpu.solvers.smo import smo
from svmgpu.testing import assert_allclose, host


def _problem(task, n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    if task == "classification":
        y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    else:
        y = np.sin(2 * X[:, 0]) + 0.2 * rng.standard_normal(n) + 3.0
    return rbf_kernel(X, gamma=0.5), y, rng.uniform(0.3, 2.0, n)


def _loss(task, delta):
    if task == "classification":
        return get_loss("huber_hinge", delta=delta)
    return get_loss("huber_epsilon_insensitive", task="regression", epsilon=0.1, delta=delta)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("C", [1.0, 30.0])
def test_smo_reaches_the_minimum_of_the_exact_newton_iteration(task, weighted, C, device):
    """The dual of the Huber hinge (Huber ε-insensitive loss) with its corners' diagonal, solved
    by SMO, is the primal problem's minimum: the exact Newton iteration's F, α and b, with and
    without sample weights; the margins returned are K α + b."""
    K, y, w = _problem(task)
    loss = _loss(task, 0.05)
    s = to_device(w, device) if weighted else None
    Kd, yd = to_device(K, device), to_device(y, device)
    dual = smo(Kd, yd, loss, C=C, xp=device.xp, task=task, sample_weight=s, tol=1e-8)
    primal = exact_newton(Kd, yd, loss, C=C, xp=device.xp, task=task, sample_weight=s,
                          tol=1e-10)
    assert dual.converged and primal.converged
    assert dual.objective_history[-1] == pytest.approx(primal.objective_history[-1], rel=1e-9)
    assert_allclose(host(dual.coef), host(primal.coef), rtol=0, atol=1e-6 * C)
    assert dual.info["intercept"] == pytest.approx(primal.info["intercept"], abs=1e-6)
    assert_allclose(host(dual.info["margins"]), K @ host(dual.coef) + dual.info["intercept"],
                    rtol=0, atol=1e-9)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_with_vanishing_corners_is_libsvm(task):
    """As the corners vanish the dual is LIBSVM's (C-SVC, ε-SVR): scikit-learn's dual
    coefficients and intercept on the precomputed kernel, with sample weights."""
    K, y, w = _problem(task, n=120, seed=3)
    C = 3.0
    res = smo(K, y, _loss(task, 1e-12), C=C, xp=np, task=task, sample_weight=w, tol=1e-6)
    ref = (SklearnSVC if task == "classification" else SklearnSVR)(
        kernel="precomputed", C=C, tol=1e-6,
        **({} if task == "classification" else {"epsilon": 0.1})).fit(K, y, sample_weight=w)
    alpha = np.zeros(len(y))
    alpha[ref.support_] = ref.dual_coef_[0]
    # (scikit-learn's binary dual coefficients are yᵢ αᵢ, its decision function positive
    # for the class +1: the signed α of f = K α + b)
    assert_allclose(host(res.coef), alpha, rtol=0, atol=1e-4 * C)
    assert res.info["intercept"] == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_smo_keeps_rows_of_zero_weight_out_and_refuses_other_losses():
    """A row of weight 0 keeps α = 0 (its bound C·0) and the others solve the problem without
    it; a loss other than the task's Huber loss, or an unknown task, is refused by name."""
    K, y, w = _problem("classification", n=60, seed=5)
    w[:10] = 0.0
    loss = _loss("classification", 0.1)
    res = smo(K, y, loss, C=2.0, xp=np, task="classification", sample_weight=w, tol=1e-8)
    assert np.all(res.coef[:10] == 0.0)
    rest = smo(K[10:, 10:], y[10:], loss, C=2.0, xp=np, task="classification",
               sample_weight=w[10:], tol=1e-8)
    assert_allclose(res.coef[10:], rest.coef, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="huber_hinge"):
        smo(K, y, get_loss("squared_hinge"), C=1.0, xp=np, task="classification")
    with pytest.raises(ValueError, match="task must be"):
        smo(K, y, loss, C=1.0, xp=np, task="ranking")


def _crawl_case(m=300):
    """A linear target under the homogeneous cubic kernel at C = 100, ε = 0.01 (mixed fuzz seed
    2121's trial 43, smaller): nearly every row on the tube's edge at the minimum."""
    X, y = make_regression(m + 200, n_features=40, n_informative=20, noise=0.0,
                           random_state=1)
    return X[:m], y[:m] + 50.0, X[m:], y[m:] + 50.0


def test_a_newton_crawl_in_the_hard_margin_regime_stalls_where_asked(device):
    """exact_newton in the hard-margin regime (C max Kᵢᵢ above 100), where ``short_steps`` is
    off: ``hard_short_steps`` short steps in a row end it as stalled and ``info["crawled"]``
    says so; without it, no limit there."""
    X, y, _, _ = _crawl_case()
    K = polynomial_kernel(X, degree=3, gamma=1 / 40, coef0=0)
    loss = get_loss("huber_epsilon_insensitive", task="regression", epsilon=0.01,
                    delta=0.002)
    kw = dict(C=100.0, xp=device.xp, task="regression", short_steps=10, max_iter=60)
    Kd, yd = to_device(K, device), to_device(y, device)
    res = exact_newton(Kd, yd, loss, hard_short_steps=10, **kw)
    assert res.info["stalled"] and res.info["crawled"] and not res.converged
    free = exact_newton(Kd, yd, loss, **kw)
    assert not free.info["crawled"] and free.n_iter > res.n_iter


def test_svr_solves_a_newton_crawl_by_smo_with_scikit_learns_model(caplog):
    """SVR's exact path hands a crawl in the hard-margin regime (SMO_MAX_ROWS rows at most)
    to SMO on its dual: scikit-learn's predictions (its corners narrowed as the exact path's,
    SVR_NARROWINGS), where the Newton iteration alone stopped at max_iter with R² 0.247
    against 0.258; above SMO_MAX_ROWS the Newton iteration goes on (on NumPy only up to
    SMO_SYSTEM_ROWS: beyond, any size goes to SMO); where SMO does not
    converge in SMO_ITERATIONS a row, Newton's method goes on from its last point."""
    X, y, Xt, yt = _crawl_case()
    kw = dict(kernel="poly", gamma="auto", C=100.0, epsilon=0.01)
    with caplog.at_level(logging.INFO, logger="svmgpu"):
        est = SVR(**kw).fit(X, y)
    assert "its dual by SMO" in caplog.text
    ref = SklearnSVR(**kw).fit(X, y)
    assert_allclose(est.predict(Xt), ref.predict(Xt), rtol=0, atol=1e-2 * np.std(yt))
    assert est.score(Xt, yt) == pytest.approx(ref.score(Xt, yt), abs=1e-4)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="svmgpu"), \
            pytest.MonkeyPatch.context() as mp, pytest.warns(ConvergenceWarning):
        mp.setattr(svc, "SMO_MAX_ROWS", 299)
        SVR(max_iter=30, **kw).fit(X, y)  # (the crawl, cut at 30 steps)
    assert "its dual by SMO" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="svmgpu"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(svc, "SMO_MAX_ROWS", 299)
        mp.setattr(svc, "SMO_SYSTEM_ROWS", 299)  # (on NumPy a crawl of any size: session 54)
        est = SVR(**kw).fit(X, y)
    assert "crawl (10 short steps in a row): its dual by SMO" in caplog.text
    assert_allclose(est.predict(Xt), ref.predict(Xt), rtol=0, atol=1e-2 * np.std(yt))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="svmgpu"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(svc, "SMO_ITERATIONS", 0.01)  # (3 iterations: SMO stops unconverged)
        est = SVR(max_iter=30, **kw).fit(X, y)
    assert "not converged (SMO_ITERATIONS): Newton's method from there" in caplog.text
    assert est.n_iter_[0] > 3 and est.converged_
    assert est.score(Xt, yt) == pytest.approx(ref.score(Xt, yt), abs=1e-3)


def test_smo_reads_a_float32_kernel_matrix_as_its_float64_values(device):
    """A float32 K is read a row at a time in float64 (no float64 copy of K): the solution of
    the float64 matrix of the same values."""
    K, y, w = _problem("regression", n=70, seed=7)
    K32 = K.astype(np.float32)
    loss = _loss("regression", 0.05)
    kw = dict(C=5.0, xp=device.xp, task="regression", tol=1e-8)
    a = smo(to_device(K32, device), to_device(y, device), loss, **kw)
    b = smo(to_device(K32.astype(np.float64), device), to_device(y, device), loss, **kw)
    assert a.n_iter == b.n_iter
    assert_allclose(host(a.coef), host(b.coef), rtol=0, atol=1e-12)
    assert a.info["intercept"] == pytest.approx(b.info["intercept"], abs=1e-12)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_reads_a_lazy_kernel_matrix_in_its_stores_order(task, device, monkeypatch):
    """A :class:`KernelRows` whose rows were computed out of order (a refinement's Newton steps
    before SMO) is read in its store, row i at its slot, never copied into K's order: the
    solution on the whole matrix in order (to the solver's tolerance: K α summed over the
    support's rows, and the diagonal by the kernel's formula, round differently)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((90, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(90) > 0, 1.0, -1.0) \
        if task == "classification" else np.sin(2 * X[:, 0]) + 3.0
    w = rng.uniform(0.3, 2.0, 90)
    Xd = to_device(X, device)
    kernel = RBF(gamma=0.5)
    dense = KernelRows(kernel, Xd).full()  # (every row, in order)
    lazy = KernelRows(kernel, Xd)
    lazy.compute(to_device(rng.permutation(90)[:60], device))  # (60 rows, shuffled)
    monkeypatch.setattr(KernelRows, "full", lambda self: pytest.fail("copied in K's order"))
    loss = _loss(task, 0.05)
    kw = dict(C=3.0, xp=device.xp, task=task, tol=1e-8, sample_weight=to_device(w, device))
    a = smo(lazy, to_device(y, device), loss, **kw)
    b = smo(dense, to_device(y, device), loss, **kw)
    assert a.converged and b.converged
    assert host(lazy._slot)[0] != 0  # (the store's rows are not in K's order)
    assert_allclose(host(a.coef), host(b.coef), rtol=0, atol=1e-6)
    assert a.info["intercept"] == pytest.approx(b.info["intercept"], abs=1e-6)
    assert_allclose(host(a.info["margins"]), host(b.info["margins"]), rtol=0, atol=1e-6)
    assert a.objective_history[-1] == pytest.approx(b.objective_history[-1], rel=1e-9)


def test_smo_computes_only_the_kernel_rows_it_reads(device, monkeypatch):
    """A lazy K's rows are computed when SMO first reads them (ROW_BATCH at a time, the most
    violating working variables' first), not all at once: on a set of 300 rows with a wide gap
    between the classes, whose support vectors are few, most rows are never computed, every
    support vector's is, and the solution is the whole matrix's."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-2.0, 2.0, (300, 2))
    X[:, 0] += np.where(X[:, 0] > 0, 1.0, -1.0)  # (no row within 1 of x₀ = 0)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    Xd, yd = to_device(X, device), to_device(y, device)
    kernel = RBF(gamma=0.5)
    dense = KernelRows(kernel, Xd).full()
    lazy = KernelRows(kernel, Xd)
    monkeypatch.setattr(smo_module, "ROW_BATCH", 8)
    kw = dict(C=10.0, xp=device.xp, task="classification", tol=1e-8)
    a = smo(lazy, yd, _loss("classification", 0.05), **kw)
    b = smo(dense, yd, _loss("classification", 0.05), **kw)
    assert a.converged and b.converged
    support = np.flatnonzero(host(a.coef))
    assert 0 < support.size and lazy.computed < 100
    assert (host(lazy._slot)[support] >= 0).all()
    assert_allclose(host(a.coef), host(b.coef), rtol=0, atol=1e-6)
    assert a.info["intercept"] == pytest.approx(b.info["intercept"], abs=1e-6)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_reads_a_lazy_kernel_matrix_of_sparse_rows_in_plain_numpy(task, monkeypatch):
    """The lazy rows with sparse rows (CSR, never densified) and NumPy itself as the namespace
    (``xp=np``, as the solvers' tests pass it): the solution of the whole matrix."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(300, 40, density=0.1, random_state=1, format="csr")
    y = np.where(rng.standard_normal(300) + 5 * X[:, 0].toarray().ravel() > 0, 1.0, -1.0) \
        if task == "classification" else 3 * X[:, 1].toarray().ravel()
    kernel = RBF(gamma=0.5)
    monkeypatch.setattr(smo_module, "ROW_BATCH", 16)
    kw = dict(C=1.0, xp=np, task=task, tol=1e-8)
    lazy = KernelRows(kernel, X)
    a = smo(lazy, y, _loss(task, 0.05), **kw)
    b = smo(KernelRows(kernel, X).full(), y, _loss(task, 0.05), **kw)
    assert a.converged and b.converged
    assert_allclose(a.coef, b.coef, rtol=0, atol=1e-6)
    assert a.objective_history[-1] == pytest.approx(b.objective_history[-1], rel=1e-9)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_from_a_wider_corners_solution_reaches_the_same_minimum(task, device):
    """``start``: the α of an SMO solution of wider corners (the same C and weights, so the
    same box and ``Σ α = 0``) starts the narrower problem; its minimum is the cold start's."""
    K, y, w = _problem(task, n=90, seed=11)
    kw = dict(C=20.0, xp=device.xp, task=task, sample_weight=to_device(w, device), tol=1e-8)
    Kd, yd = to_device(K, device), to_device(y, device)
    wide = smo(Kd, yd, _loss(task, 0.05), **kw)
    warm = smo(Kd, yd, _loss(task, 0.005), start=wide.coef, **kw)
    cold = smo(Kd, yd, _loss(task, 0.005), **kw)
    assert warm.converged and cold.converged
    assert warm.objective_history[-1] == pytest.approx(cold.objective_history[-1], rel=1e-10)
    assert_allclose(host(warm.coef), host(cold.coef), rtol=0, atol=1e-5)
    assert warm.n_iter < cold.n_iter


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_from_a_solution_on_fewer_rows_reaches_the_same_minimum(task, device):
    """``start``: the solution of the same problem on two thirds of the rows, the others at
    α = 0 (a refinement's round after its check), reaches the cold start's minimum in fewer
    iterations. A start whose sum is not 0 (a Newton solution's, to its tolerance; here
    scaled by 1.3 on one class or one sign) is balanced to the dual's equality first, and
    reaches it too."""
    K, y, w = _problem(task, n=120, seed=5)
    kw = dict(C=20.0, xp=device.xp, task=task, tol=1e-8)
    loss = _loss(task, 0.05)
    Kd, yd = to_device(K, device), to_device(y, device)
    few = np.arange(0, 120, 3) % 120 != 0  # (two rows of three)
    idx = np.nonzero(few)[0]
    part = smo(to_device(K[np.ix_(idx, idx)], device), to_device(y[idx], device), loss, **kw)
    a0 = np.zeros(120)
    a0[idx] = host(part.coef)
    warm = smo(Kd, yd, loss, start=to_device(a0, device), **kw)
    cold = smo(Kd, yd, loss, **kw)
    assert warm.converged and cold.converged
    assert warm.objective_history[-1] == pytest.approx(cold.objective_history[-1], rel=1e-10)
    assert_allclose(host(warm.coef), host(cold.coef), rtol=0, atol=1e-5)
    assert warm.n_iter < cold.n_iter
    off = np.where(a0 > 0, 1.3 * a0, a0)  # (Σ α ≠ 0)
    assert abs(off.sum()) > 0.1
    tilted = smo(Kd, yd, loss, start=to_device(off, device), **kw)
    assert tilted.converged
    assert tilted.objective_history[-1] == pytest.approx(cold.objective_history[-1], rel=1e-10)
    assert abs(float(np.sum(host(tilted.coef)))) < 1e-8


def test_a_newton_crawl_below_the_hard_margin_goes_to_smo_instead_of_the_continuation(caplog):
    """Below the hard-margin regime (C max Kᵢᵢ = 100 here) a first solve that stalls by
    EXACT_SHORT_STEPS short steps goes to SMO (SMO_MAX_ROWS) instead of the continuation from
    wider corners: 50 rows of one feature, targets of spread 100, ε = 0.01 (mixed fuzz seed
    909's trial 34, whose continuation took 0.1 s for scikit-learn's 3 ms); then Newton's
    method from SMO's last point, to scikit-learn's predictions."""
    X, y = make_regression(550, n_features=1, n_informative=1, noise=1.0, random_state=0)
    X = (X - X.mean()) / X.std()
    y = (y - y.mean()) / y.std() * 100 + 50
    kw = dict(C=100.0, epsilon=0.01)
    with caplog.at_level(logging.INFO, logger="svmgpu"):
        est = SVR(**kw).fit(X[:50], y[:50])
    # (SMO_ITERATIONS a row, 250 iterations, do not converge here, and Newton's method from
    # SMO's point converges in 30 steps: 0.03 s; SMO to the end takes 3,165)
    assert "its dual by SMO, not converged" in caplog.text and est.converged_
    ref = SklearnSVR(**kw).fit(X[:50], y[:50])
    assert_allclose(est.predict(X[50:]), ref.predict(X[50:]), rtol=0, atol=0.05)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_shrinking_reaches_the_exact_newton_iterations_minimum(task, device):
    """LIBSVM's shrinking (SHRINK_EVERY): variables at a bound that cannot be in a violating
    pair leave the working set, and before the end every variable comes back, its gradient
    computed afresh. Shrinking every 3 iterations, the working set falls below half the
    variables, and the minimum is still the exact Newton iteration's (a variable that left
    with a stale β, or a gradient not rebuilt, ends elsewhere)."""
    K, y, w = _problem(task, n=120, seed=5)
    loss = _loss(task, 0.05)
    Kd, yd = to_device(K, device), to_device(y, device)
    kw = dict(C=30.0, xp=device.xp, task=task, sample_weight=to_device(w, device))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(smo_module, "SHRINK_EVERY", 3)
        res = smo(Kd, yd, loss, tol=1e-8, **kw)
    n = 240 if task == "regression" else 120
    assert res.converged and res.info["least_working"] < n // 2
    primal = exact_newton(Kd, yd, loss, tol=1e-10, **kw)
    assert res.objective_history[-1] == pytest.approx(primal.objective_history[-1], rel=1e-9)
    assert_allclose(host(res.coef), host(primal.coef), rtol=0, atol=1e-6 * 30.0)
    assert res.info["intercept"] == pytest.approx(primal.info["intercept"], abs=1e-6)


def test_smo_reads_an_iterations_scalars_directly_on_numpy(monkeypatch):
    """On NumPy an iteration's scalars (the maximal violation, the second variable, V and K at
    it) are read directly, not through ``fetch_scalars`` (its list and a third pass for V's
    maximum were about an eighth of an iteration on thousands of variables): a fixed number of
    its calls whatever the iterations, where array-api-strict reads them through it; the same
    iterations and the same α, bit for bit, on both."""
    from svmgpu.testing import backend_device

    K, y, w = _problem("classification", n=150, seed=2)
    loss = _loss("classification", 0.05)
    calls = []
    real = smo_module.fetch_scalars
    monkeypatch.setattr(smo_module, "fetch_scalars",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(C=30.0, task="classification", tol=1e-8)
    mine = smo(K, y, loss, xp=np, sample_weight=w, **kw)
    numpy_calls = len(calls)
    strict = backend_device("strict-device1")
    other = smo(to_device(K, strict), to_device(y, strict), loss, xp=strict.xp,
                sample_weight=to_device(w, strict), **kw)
    assert mine.converged and mine.n_iter == other.n_iter > 50
    assert numpy_calls <= 3 < len(calls) - numpy_calls
    assert np.array_equal(host(mine.coef), host(other.coef))
    assert mine.info["intercept"] == other.info["intercept"]


def test_a_first_solve_that_stalls_goes_to_smo_instead_of_the_continuation(caplog):
    """A first Newton solve that stops without descent (a stall, not a crawl) on at most
    SMO_MAX_ROWS rows goes to SMO too: 300 rows of 200 features, the 'poly' kernel at
    ``gamma=3`` (a diagonal near 10⁸), C = 100, ε = 1, a small version of mixed fuzz seed 2222's
    trial 38 (6,000 rows: the continuation from wider corners ran 1,012 steps unconverged, 14.8
    s against scikit-learn's 0.50 s, R² 0.334 against 0.196; by SMO 1.3 s, 0.196). Here the
    continuation stopped unconverged at R² 0.0112 against scikit-learn's 0.0001; SMO gives
    scikit-learn's predictions and its 98 support vectors."""
    X, y = make_regression(600, n_features=200, n_informative=100, noise=1.0, random_state=3)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    kw = dict(kernel="poly", gamma=3.0, C=100.0, epsilon=1.0)
    with caplog.at_level(logging.INFO, logger="svmgpu"), warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SVR(**kw).fit(X[:300], y[:300])
    assert "Newton steps stall (no descent along a step): its dual by SMO" in caplog.text
    ref = SklearnSVR(**kw).fit(X[:300], y[:300])
    assert_allclose(est.predict(X[300:]), ref.predict(X[300:]), rtol=0, atol=1e-4)
    assert est.support_.shape[0] == ref.support_.shape[0]


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_smo_goes_past_its_cap_where_its_violation_says_it_converges_soon(task, device):
    """``extend``: at a cap of 80 % of the iterations SMO needs, its violation's geometric
    decrease says it converges within twice the cap, so it goes on, along the same iterates,
    to the uncapped run's solution; without ``extend`` it stops unconverged at the cap."""
    K, y, w = _problem(task, n=120, seed=3)
    loss = _loss(task, 0.05)
    Kd, yd = to_device(K, device), to_device(y, device)
    kw = dict(C=30.0, xp=device.xp, task=task, sample_weight=to_device(w, device), tol=1e-8)
    full = smo(Kd, yd, loss, **kw)
    cap = int(0.8 * full.n_iter)
    assert full.converged and cap >= 100
    capped = smo(Kd, yd, loss, max_iter=cap, **kw)
    assert not capped.converged and capped.n_iter == cap
    more = smo(Kd, yd, loss, max_iter=cap, extend=2.0, **kw)
    assert more.converged and more.n_iter == full.n_iter
    assert_allclose(host(more.coef), host(full.coef), rtol=0, atol=0)


def test_more_iterations_follow_the_violations_geometric_decrease():
    """The projection of :func:`smo._more_iterations`: a violation falling tenfold every 100
    iterations (below an oscillation of its own size) from 1 reaches 1e-5 at 500: from a
    cap of 400 it needs 100 more (125 given), from a cap of 200 it needs 300 (past twice the
    cap: none); a violation that does not fall, or is below tol already, gets none."""
    def gaps(n):
        return [10.0 ** (-k / 100) * (2.0 if k % 3 else 1.0) for k in range(n)]

    more = smo_module._more_iterations(gaps(400), 1e-5, 2.0)
    assert more == pytest.approx(126, abs=2)
    assert smo_module._more_iterations(gaps(200), 1e-5, 2.0) == 0
    assert smo_module._more_iterations(gaps(400), 1e-5, 1.0) == 0
    assert smo_module._more_iterations([1.0] * 400, 1e-5, 2.0) == 0
    assert smo_module._more_iterations(gaps(400), 0.1, 2.0) == 0
