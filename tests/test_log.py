"""One log format for every solver and estimator (issue 13, item 4): the ``svmgpu`` logger,
``verbose`` levels, the phases' seconds (``fit_timings_``), tqdm bars, and applications that
configure logging themselves."""

import logging
import re
import subprocess
import sys

import numpy as np
import pytest
from array_api_compat import array_namespace

from svmgpu import LSSVC, PSVC, WPSVC, GreedySVC, L2SVMPath, ReducedSVC, UniSVC, UniSVR
from svmgpu._log import fields, progress, verbosity
from svmgpu.datasets import make_checkerboard
from svmgpu.losses import get_loss
from svmgpu.solvers.newton import semismooth_newton

LINE = re.compile(r"^\[svmgpu(\.[A-Za-z0-9_-]+)*\] \S")

ESTIMATORS = [
    UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0),
    UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0, solver="dca", max_iter=20),
    ReducedSVC(C=10.0, gamma=16.0, rank=50, random_state=0),
    GreedySVC(gamma=16.0, max_support=50),
    L2SVMPath(gamma=16.0, rank=30, random_state=0, max_iter=20),
    LSSVC(C=10.0, gamma=16.0, rank=50, random_state=0),
    PSVC(C=10.0, kernel="rbf", gamma=16.0, rank=50, random_state=0),
    WPSVC(C=10.0, random_state=0),
]


def _fit(est, verbose, capsys):
    X, y = make_checkerboard(600, random_state=0)
    est.set_params(verbose=verbose).fit(X, y)
    return capsys.readouterr()


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_estimator_logs_its_phases_in_one_format(est, capsys):
    quiet = _fit(est, 0, capsys)
    assert quiet.out == "" and quiet.err == ""
    assert set(est.fit_timings_) >= {"features", "solve"}
    assert all(t >= 0 for t in est.fit_timings_.values())
    err = _fit(est, 1, capsys).err
    name = type(est).__name__
    lines = [li for li in err.splitlines() if li.startswith("[svmgpu")]
    assert lines, err
    assert all(LINE.match(li) for li in lines), lines
    assert any(li.startswith(f"[svmgpu.{name}] features rows=600 columns=2 seconds=")
               for li in lines), lines
    assert any(li.startswith(f"[svmgpu.{name}] solve ") and "seconds=" in li for li in lines)
    done = [li for li in lines if li.startswith(f"[svmgpu.{name}] fit=done")]
    assert len(done) == 1 and "features=" in done[0] and "solve=" in done[0]
    # verbose=2 adds the iterations (solvers that iterate), never fewer lines
    err2 = _fit(est, 2, capsys).err
    assert len(err2.splitlines()) >= len(lines)


def test_newton_logs_each_iteration_at_verbose_2_with_named_fields(capsys):
    X, y = make_checkerboard(2000, random_state=0)
    clf = UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0, solver="newton", verbose=2)
    clf.fit(X, y)
    err = capsys.readouterr().err
    its = [li for li in err.splitlines() if li.startswith("[svmgpu.newton]") and " it=" in li
           and "stop=" not in li]
    assert len(its) >= clf.n_iter_detail_["solver"]
    for li in its:
        for key in ("it=", "stage=", "obj=", "kkt=", "active=", "step="):
            assert key in li, li
    summary = [li for li in err.splitlines() if li.startswith("[svmgpu.newton]")
               and "stop=" in li]
    assert summary and "converged=True" in summary[-1]


def test_the_path_and_gs_svm_log_their_steps_at_verbose_2(capsys):
    X, y = make_checkerboard(600, random_state=0)
    L2SVMPath(gamma=16.0, rank=30, random_state=0, max_iter=20, verbose=2).fit(X, y)
    GreedySVC(gamma=16.0, max_support=64, verbose=2).fit(X, y)
    err = capsys.readouterr().err
    steps = [li for li in err.splitlines() if li.startswith("[svmgpu.path] step=")]
    assert len(steps) >= 10 and all("lambda=" in li and "m_E=" in li for li in steps)
    assert "[svmgpu.path] steps=" in err and "best_lambda=" in err
    assert "[svmgpu.stagewise] stages=32 selected=32" in err
    assert "[svmgpu.stagewise] rows=600 stages=64" in err


def test_a_solver_called_directly_honours_its_verbose(capsys):
    rng = np.random.default_rng(0)
    P = rng.standard_normal((300, 5))
    y = np.sign(P[:, 0] + 0.1 * rng.standard_normal(300))
    semismooth_newton(P, y, [get_loss("squared_hinge")], C=1.0, xp=array_namespace(P),
                      verbose=2)
    err = capsys.readouterr().err
    assert "[svmgpu.newton] newton it=1 " in err


def test_applications_route_the_records_with_verbose_0_and_get_no_second_copy(caplog,
                                                                               capsys):
    X, y = make_checkerboard(600, random_state=0)
    level = logging.getLogger("svmgpu").level
    with caplog.at_level(logging.INFO, logger="svmgpu"):
        UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0).fit(X, y)  # verbose=0
    msgs = [r.getMessage() for r in caplog.records if r.name == "svmgpu.UniSVC"]
    assert any(m.startswith("features rows=600") for m in msgs)
    assert capsys.readouterr().err == ""
    caplog.clear()
    UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0, verbose=1).fit(X, y)
    assert "[svmgpu.UniSVC] features" in capsys.readouterr().err  # standard error, and
    assert not caplog.records  # not a second copy through the root logger's handlers
    lg = logging.getLogger("svmgpu")
    assert lg.level == level and lg.propagate and not lg.handlers  # restored
    # a handler of the application's on the svmgpu logger: verbose uses it instead
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    lg.addHandler(handler)
    try:
        UniSVC(C=10.0, gamma=16.0, rank=50, random_state=0, verbose=1).fit(X, y)
    finally:
        lg.removeHandler(handler)
    assert "[svmgpu" not in capsys.readouterr().err  # (tqdm's bars stay on standard error)
    assert any(r.getMessage().startswith("features rows=600") for r in records)


_CALLER = """
import warnings
from svmgpu import GreedySVC, UniSVC
from svmgpu.datasets import make_checkerboard
X, y = make_checkerboard(300, random_state=0)
for est in (GreedySVC(gamma=16.0, max_support=5),  # (its fit calls the base's fit)
            UniSVC(C=10.0, gamma=16.0, rank=20, solver="dca", max_iter=2)):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est.fit(X, y)
    got = [(w.category.__name__, w.filename) for w in rec]
    assert got == [("ConvergenceWarning", __file__)], got
print("attributed")
"""


@pytest.mark.slow
def test_convergence_warnings_point_at_the_callers_line(tmp_path):
    """A ConvergenceWarning names the user's line, not svmgpu's. In a fresh interpreter: in
    the full suite (session 31, two of four runs at commits differing by documentation only)
    ``pytest.warns`` recorded nothing here, no warning at all, while the same fits warn every
    time alone and after the test files before this one; what in the suite's process state
    swallows it is not found yet (the issue's note)."""
    script = tmp_path / "caller.py"
    script.write_text(_CALLER)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0 and "attributed" in res.stdout, res.stderr[-2000:]


def test_fields_format_and_a_failed_fit_leaves_no_timings():
    assert fields(it=3, obj=1.0 / 3.0, skip=None, stop="kkt") == "it=3 obj=0.33333333 stop=kkt"
    clf = UniSVC(rank=10)
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(np.full((10, 2), np.nan), np.arange(10) % 2)
    assert not hasattr(clf, "fit_timings_") and not hasattr(clf, "_timings")


def test_progress_bars_show_at_verbose_1_and_close(capsys, monkeypatch):
    pytest.importorskip("tqdm")
    import svmgpu._log

    monkeypatch.setattr(svmgpu._log, "_is_terminal", lambda stream: True)  # (as on a console)
    with verbosity(1):
        bar = progress("test", total=3)
        bar.update(1, obj=1.5)
        bar.update(2)
    assert "svmgpu test" in capsys.readouterr().err
    # outside a verbose block (and at verbose=2) a bar is a no-op
    for v in (0, 2):
        with verbosity(v):
            progress("quiet").update(1)
    assert "quiet" not in capsys.readouterr().err


def test_regressor_and_cli_timings(capsys):
    X, y = make_checkerboard(400, random_state=0)
    reg = UniSVR(C=10.0, gamma=4.0, rank=30, random_state=0, verbose=1)
    reg.fit(X, y.astype(float))
    assert set(reg.fit_timings_) == {"features", "solve"}
    assert "[svmgpu.UniSVR] solve " in capsys.readouterr().err


def test_no_progress_bars_when_standard_error_is_not_a_terminal(capsys):
    """Issue 26 item 7: tqdm bars mixed carriage returns into log files; with standard error
    not a terminal (here: captured), verbose=1 gives the phase lines and no bar."""
    from svmgpu._log import progress, verbosity

    with verbosity(1):
        bar = progress("features", total=3)
        bar.update(3)
        bar.close()
    assert type(bar).__name__ == "_NoBar"
    assert "\r" not in capsys.readouterr().err


def test_a_chunk_of_pairs_logs_its_iterations_and_convergence(capsys):
    """SVC's small one-vs-one pairs solved at once (one chunk): the solve line says the
    chunk's Newton steps and whether every pair converged, as a pair alone does."""
    from sklearn.datasets import load_iris

    from svmgpu import SVC

    X, y = load_iris(return_X_y=True)
    clf = SVC(verbose=1).fit(X, y)
    solve = [li for li in capsys.readouterr().err.splitlines()
             if li.startswith("[svmgpu.SVC] solve problems=1-3/3 ")]
    assert len(solve) == 1, solve
    assert f"it={max(clf.n_iter_)}" in solve[0] and "converged=True" in solve[0]
