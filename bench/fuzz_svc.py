"""A seeded fuzz sweep of ``svmgpu.SVC`` / ``SVR`` against scikit-learn's, the same parameters.

Each trial draws a ``make_classification`` (or, with ``--regression``'s share, a
``make_regression``) set, standardizes it, and fits both estimators with the same ``C``,
``kernel``, ``gamma``, ``class_weight`` / ``epsilon``, optionally sparse rows (entries below 0.7
in magnitude zeroed; svmgpu gets CSR) and sample weights. scikit-learn's fit is abandoned after
``--sklearn-seconds`` (the trial skipped; each scikit-learn fit runs in a forked child process,
killed there), svmgpu's after ``max(60, 30 × scikit-learn's)``
(recorded as a timeout). A trial is flagged ``accuracy`` where svmgpu's test accuracy is more
than ``--acc-gap`` (0.01) below scikit-learn's (R² 0.02 below), ``slow`` where its fit takes
more than ``--slow`` (10) times scikit-learn's and over a second. The records (parameters,
both scores and times, svmgpu's ``solver_`` and ``rank_``, and a refinement's checks) go to
``bench/results/<--out>.json``; a failing trial is recorded with its exception.

``--profile medium`` draws only classification sets of 11,000 or 14,000 rows (the low-rank and
partitioned paths; ``C`` up to 100), ``--profile mixed`` (the default) 50–12,000 rows, both
tasks. The same ``--seed`` draws the same trials; ``--only T`` reruns trial T alone, into
``fuzz_svc_<profile>_seed<seed>_t<T>_cpu.json`` by default (not the sweep's own file, which a
single trial's record would replace: session 70 overwrote twenty sweeps' files that way before
restoring them from git).

Session 35 found with it (seeds 11, 13, 21): the refinement's missed support vectors (now
checked: ``svc.REFINE_CHECK_ROWS``), the partitioned path's per-region intercepts, a polynomial
kernel in the hard-margin regime, SVR with targets far wider than ε (docs/svc.md, "Gaps a fuzz
sweep found").

Usage: python bench/fuzz_svc.py [--seed 13] [--trials 80] [--profile mixed|medium]
       [--only T] [--out fuzz_svc_cpu]
"""

from __future__ import annotations

import argparse
import signal
import time
import traceback
import warnings

import numpy as np
from _common import machine_info, write_results


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout


def _sklearn_fit(est, X, y, w, X_test):
    """``(fit seconds, test predictions)`` of a scikit-learn estimator."""
    t0 = time.perf_counter()
    est.fit(X, y, sample_weight=w)
    return time.perf_counter() - t0, est.predict(X_test)


def _in_child(fn, seconds):
    """``fn()`` run in a forked child process, its result sent back; None where it runs past
    ``seconds`` (the child killed). LIBSVM's C loop does not return to Python for an alarm:
    a trial of seed 606 (the polynomial kernel at ``gamma=3``) kept the sweep waiting for
    minutes past its 90 s alarm."""
    import multiprocessing as mp  # noqa: PLC0415

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        send.send(fn())
        send.close()

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    got = recv.recv() if recv.poll(seconds) else None
    proc.join(None if got is not None else 0)
    if proc.is_alive():
        proc.kill()
        proc.join()
    return got


def draw(rng, profile):
    """One trial's parameters (a dict), drawn from ``rng``."""

    def pick(xs):
        return xs[int(rng.integers(len(xs)))]

    if profile == "medium":
        t = {"task": "classification", "n": pick([11000, 14000]), "d": pick([5, 10, 30, 80]),
             "C": pick([0.1, 1.0, 10.0, 100.0]), "kernel": "rbf",
             "gamma": pick(["scale", "scale", "auto", 0.01, 1.0]), "classes": pick([2, 2, 3, 5]),
             "flip": pick([0.0, 0.05, 0.2]), "sep": pick([0.5, 1.0, 2.0]),
             "class_weight": pick([None, None, "balanced"]), "clusters": pick([1, 2]),
             "sparse": False, "weights": False}
    else:
        reg = rng.random() < 0.3
        t = {"task": "regression" if reg else "classification",
             "n": pick([50, 150, 600, 2500, 6000, 12000]), "d": pick([1, 3, 10, 40, 200]),
             "C": pick([0.05, 1.0, 1.0, 10.0, 100.0]),
             "kernel": pick(["rbf", "rbf", "rbf", "linear", "poly"]),
             "gamma": pick(["scale", "scale", "auto", 0.003, 3.0])}
        t["sparse"] = bool(rng.random() < 0.15)
        t["weights"] = bool(rng.random() < 0.2)
        if reg:
            t.update(noise=pick([0.0, 1.0, 20.0]), scale=pick([1.0, 100.0]),
                     offset=pick([0.0, 50.0]), epsilon=pick([0.01, 0.1, 1.0]))
        else:
            t.update(classes=pick([2, 2, 3, 6]), sep=pick([0.5, 1.0, 2.0]),
                     flip=pick([0.0, 0.1]), imbalanced=bool(rng.random() >= 0.7),
                     class_weight=pick([None, "balanced"]), clusters=1)
    t["random_state"] = int(rng.integers(1_000_000))
    return t


def make_data(t, rng):
    """``(X_train, y_train, X_test, y_test, sample_weight)`` of a trial (500 or 2,000 test
    rows), or None where scikit-learn cannot make the set."""
    from sklearn.datasets import make_classification, make_regression
    from sklearn.preprocessing import StandardScaler

    n, d, test = t["n"], t["d"], 2000 if t["n"] >= 11000 else 500
    if t["task"] == "regression":
        X, y = make_regression(n + test, n_features=d, n_informative=max(1, d // 2),
                               noise=t["noise"], random_state=t["random_state"])
        y = (y - y.mean()) / y.std() * t["scale"] + t["offset"]
    else:
        k = t["classes"]
        weights = None
        if t.get("imbalanced"):
            weights = list(np.linspace(1, 0.1, k) / np.linspace(1, 0.1, k).sum())
        try:
            X, y = make_classification(
                n + test, n_features=max(d, 2), n_informative=max(2, min(d, 8)), n_redundant=0,
                n_classes=k, n_clusters_per_class=t["clusters"], class_sep=t["sep"],
                flip_y=t["flip"], weights=weights, random_state=t["random_state"])
        except ValueError:
            return None
    X = StandardScaler().fit_transform(X)
    if t["sparse"]:
        X[np.abs(X) < 0.7] = 0.0
    w = rng.uniform(0.2, 3.0, n) if t["weights"] else None
    return X[:n], y[:n], X[n:], y[n:], w


def run_trial(t, data, args):
    import scipy.sparse as sp
    from sklearn.metrics import r2_score
    from sklearn.svm import SVC as SkSVC
    from sklearn.svm import SVR as SkSVR

    import svmgpu

    Xtr, ytr, Xte, yte, w = data
    reg = t["task"] == "regression"
    params = {"C": t["C"], "kernel": t["kernel"], "gamma": t["gamma"]}
    params.update({"epsilon": t["epsilon"]} if reg else {"class_weight": t["class_weight"]})
    rec = dict(t)
    got = _in_child(lambda: _sklearn_fit((SkSVR if reg else SkSVC)(**params), Xtr, ytr, w, Xte),
                    args.sklearn_seconds)
    if got is None:
        rec["status"] = f"skipped: scikit-learn took over {args.sklearn_seconds} s"
        return rec
    rec["sklearn_seconds"], ps = got
    Xg, Xgt = (sp.csr_matrix(Xtr), sp.csr_matrix(Xte)) if t["sparse"] else (Xtr, Xte)
    signal.alarm(max(60, int(30 * rec["sklearn_seconds"]) + 30))
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = (svmgpu.SVR if reg else svmgpu.SVC)(**params).fit(Xg, ytr, sample_weight=w)
        rec["svmgpu_seconds"] = time.perf_counter() - t0
    except _Timeout:
        rec["status"] = "timeout"
        return rec
    except Exception as exc:  # (recorded: the sweep goes on)
        traceback.print_exc()
        rec["status"] = f"failed: {type(exc).__name__}: {exc}"
        return rec
    finally:
        signal.alarm(0)
    pg = est.predict(Xgt)
    if reg:
        rec["sklearn_score"] = float(r2_score(yte, ps))
        rec["svmgpu_score"] = float(r2_score(yte, pg))
        gap = args.acc_gap * 2
    else:
        rec["sklearn_score"] = float(np.mean(ps == yte))
        rec["svmgpu_score"] = float(np.mean(pg == yte))
        gap = args.acc_gap
    rec.update(solver=est.solver_, rank=getattr(est, "rank_", None),
               warnings=sorted({str(c.message)[:200] for c in caught}), status="ok")
    refined = est.rank_path_[-1].get("refined") if getattr(est, "rank_path_", None) else None
    if isinstance(refined, dict):
        rec["refined_checks"] = refined["checks"]
    flags = []
    if rec["svmgpu_score"] < rec["sklearn_score"] - gap:
        flags.append("accuracy")
    if rec["svmgpu_seconds"] > max(args.slow * rec["sklearn_seconds"], 1.0):
        flags.append("slow")
    rec["flags"] = flags
    return rec


def results_name(args):
    """The results name where ``--out`` is not given: the sweep's, or with ``--only T`` one of
    that trial's own (a single trial never replaces a sweep's records)."""
    only = "" if args.only is None else f"_t{args.only}"
    return f"fuzz_svc_{args.profile}_seed{args.seed}{only}_cpu"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--trials", type=int, default=80)
    ap.add_argument("--profile", choices=["mixed", "medium"], default="mixed")
    ap.add_argument("--only", type=int, default=None, help="run trial T alone")
    ap.add_argument("--sklearn-seconds", type=float, default=90.0)
    ap.add_argument("--acc-gap", type=float, default=0.01)
    ap.add_argument("--slow", type=float, default=10.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    rng = np.random.default_rng(args.seed)
    payload = {"benchmark": "fuzz_svc", "machine": machine_info(), "seed": args.seed,
               "profile": args.profile, "trials": []}
    name = args.out or results_name(args)
    for k in range(args.trials if args.only is None else args.only + 1):
        t = draw(rng, args.profile)
        data = make_data(t, rng)  # (drawn for every trial: --only keeps the same sequence)
        if (args.only is not None and k != args.only) or data is None:
            continue
        rec = run_trial(t, data, args)
        rec["trial"] = k
        payload["trials"].append(rec)
        keys = ("trial", "task", "n", "d", "C", "kernel", "gamma", "sklearn_score",
                "svmgpu_score", "sklearn_seconds", "svmgpu_seconds", "solver", "flags",
                "status")
        print({key: rec.get(key) for key in keys}, flush=True)
        payload["machine"]["loadavg_at_end"] = list(__import__("os").getloadavg())
        write_results(name, payload)


if __name__ == "__main__":
    main()
