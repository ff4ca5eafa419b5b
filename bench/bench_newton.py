"""Benchmark: reduced-SVM Newton solvers (issue 4), with the peers in the same run.

1. **Zhou (2013) Tables 2–3** at reduced cost: the 200 × 200 integer Checkerboard (40,000
   points, 4 × 4 cells), a random training set of m points and the other 40,000 − m as test set,
   RBF γ = 0.001, reduced set of r random training points, λ = 0.1 and 0.01 (C = 1/(2λ) for
   least squares and squared hinge, 1/λ for Huber and logistic), four losses × {M1 = RKHS,
   M2 = GSVM}. Recorded: test error, training time, Newton steps, margin violators
   ``#{i : yᵢ f(xᵢ) <= 1}``, each beside the paper's mean over 20 trials (Matlab, Core i3).
2. **m = 1,000,000** uniform Checkerboard in the unit square (test: 200,000 fresh points),
   γ = 16, r = 300 random points, squared hinge, GSVM, C = 100 (λ = 0.005): ReducedSVC end to
   end (fit + predict) against a plain NumPy semi-smooth Newton (the paper's ~30-line scheme:
   dense K(X, X_J), ``H = λI + K_IᵀK_I`` rebuilt and solved every step from z = 0) on the same
   reduced set, and scikit-learn's Nystroem + LinearSVC (squared hinge) on the same landmarks
   when ``--sklearn`` is given. Targets: <= 15 s end to end, >= 99.9 % test accuracy, at least
   2× faster than the plain baseline.
3. **Linear PSVC** on 1,000,000 × 50 dense Gaussian points (target <= 2 s), with scikit-learn's
   RidgeClassifier (the same least-squares model up to the offset's regularization).

Each large fit runs in its own subprocess so that peak memory (VmHWM) is per fit.

Usage: python bench/bench_newton.py [--device cpu|cuda] [--sizes 4000 8000 15000 20000 25000]
       [--trials 1] [--lambdas 0.1 0.01] [--skip-tables] [--skip-million] [--sklearn]
       [--repeats 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _cases import ZHOU_MILLION, ZHOU_TABLES
from _common import (
    RESULTS,
    Timer,
    machine_info,
    merge_repeats,
    peak_rss_bytes,
    prefault,
    results_path,
    timed_fields,
    write_results,
)

#: r for each training size, as in the paper's Tables 2-3.
RANKS = ZHOU_TABLES["ranks"]
LOSSES = [("least_squares", "LS"), ("squared_hinge", "SH"), ("huber_hinge", "Hub"), ("logistic", "Log")]
REGS = [("rkhs", "M1"), ("gsvm", "M2")]

# Zhou (2013) Table 2 (λ = 0.1) and Table 3 (λ = 0.01): per model, per m:
# (test error %, training time s, Newton iterations, margin violators).
_SIZES = (4000, 8000, 15000, 20000, 25000)
_T2 = {
    "M1+LS": ([2.92, 2.11, 1.46, 1.12, 1.05], [0.04, 0.22, 1.02, 1.43, 1.60], [1] * 5,
              [2480, 4877, 9009, 11865, 14644]),
    "M2+LS": ([3.41, 2.96, 1.90, 1.52, 1.11], [0.03, 0.19, 1.10, 1.39, 1.69], [1] * 5,
              [2672, 5254, 9716, 12922, 16112]),
    "M1+SH": ([1.19, 0.55, 0.20, 0.11, 0.08], [0.22, 1.35, 5.31, 6.89, 8.48],
              [10.8, 12.8, 14.3, 15.0, 15.5], [701, 1153, 1757, 2086, 2398]),
    "M2+SH": ([0.75, 0.22, 0.06, 0.04, 0.03], [0.21, 1.28, 5.22, 6.72, 8.47],
              [10.4, 11.8, 13.4, 14.7, 15.7], [484, 641, 987, 1180, 1316]),
    "M1+Hub": ([1.80, 1.06, 0.53, 0.30, 0.22], [0.74, 3.62, 12.90, 15.45, 18.26],
               [84.8, 86.8, 90.0, 89.5, 91.2], [486, 809, 1277, 1573, 1857]),
    "M2+Hub": ([1.29, 0.38, 0.13, 0.09, 0.07], [0.57, 2.60, 8.05, 10.70, 13.01],
               [131.8, 138.9, 155.6, 153.8, 151.8], [336, 440, 488, 573, 658]),
    "M1+Log": ([1.80, 1.06, 0.53, 0.30, 0.22], [0.52, 2.58, 9.97, 11.36, 13.46],
               [46.3, 46.8, 49.6, 46.1, 45.5], [486, 809, 1277, 1573, 1857]),
    "M2+Log": ([1.29, 0.38, 0.13, 0.09, 0.07], [0.42, 2.14, 7.56, 9.74, 12.16],
               [54.4, 62.0, 64.3, 57.9, 60.2], [336, 440, 488, 573, 657]),
}
_T3 = {
    "M1+LS": ([2.39, 1.67, 0.89, 0.53, 0.37], [0.03, 0.21, 0.93, 1.21, 1.47], [1] * 5,
              [2328, 4590, 8552, 11411, 14269]),
    "M2+LS": ([3.48, 2.39, 1.71, 1.34, 1.23], [0.03, 0.20, 0.90, 1.17, 1.45], [1] * 5,
              [2604, 5138, 9622, 12826, 16074]),
    "M1+SH": ([0.72, 0.23, 0.09, 0.06, 0.04], [0.23, 1.46, 5.69, 7.49, 9.17],
              [14.9, 16.8, 18.7, 20.6, 21.5], [357, 594, 1028, 1284, 1473]),
    "M2+SH": ([0.35, 0.11, 0.05, 0.04, 0.02], [0.23, 1.43, 5.43, 7.18, 9.13],
              [13.4, 16.8, 22.9, 24.4, 26.6], [275, 322, 341, 391, 452]),
    "M1+Hub": ([1.01, 0.34, 0.22, 0.15, 0.11], [0.76, 3.79, 13.27, 15.72, 29.88],
               [114.7, 114.3, 116.5, 118.1, 120.2], [228, 366, 528, 619, 703]),
    "M2+Hub": ([0.52, 0.19, 0.10, 0.07, 0.05], [0.79, 3.47, 10.45, 13.44, 17.01],
               [218.6, 264.1, 275.1, 273.1, 280.3], [145, 154, 186, 224, 260]),
    "M1+Log": ([1.01, 0.34, 0.22, 0.15, 0.11], [0.73, 3.59, 13.17, 13.95, 16.52],
               [74.2, 72.3, 72.8, 61.5, 62.0], [228, 366, 528, 619, 704]),
    "M2+Log": ([0.52, 0.19, 0.10, 0.07, 0.05], [0.48, 2.38, 9.24, 13.17, 16.44],
               [80.6, 96.2, 108.6, 113.5, 106.7], [145, 154, 186, 224, 260]),
}
PAPER = {0.1: _T2, 0.01: _T3}

MILLION = ZHOU_MILLION


def paper_value(lam, model, m, k):
    table = PAPER.get(lam, {}).get(model)
    if table is None or m not in _SIZES:
        return None
    return table[k][_SIZES.index(m)]


# ------------------------------------------------------------------------ 1. the tables
def run_tables(sizes, lambdas, trials, device, repeats=1):
    import numpy as np

    from svmgpu import ReducedSVC  # noqa: F401 - exported by the package when available
    from svmgpu.datasets import checkerboard_grid
    from svmgpu.solvers.reduced import lambda_to_c

    X, y = checkerboard_grid(ZHOU_TABLES["grid"])
    rows = []
    for lam in lambdas:
        for m in sizes:
            r = RANKS[m]
            for trial in range(trials):
                perm = np.random.default_rng(trial).permutation(y.shape[0])
                tr, te = perm[:m], perm[m:]
                for loss, lname in LOSSES:
                    for reg, rname in REGS:
                        clf = ReducedSVC(loss=loss, regularizer=reg, rank=r,
                                         C=lambda_to_c(lam, loss), gamma=ZHOU_TABLES["gamma"],
                                         random_state=trial, device=device)
                        _, fit = timed_fields("fit_seconds", lambda clf=clf, tr=tr: clf.fit(X[tr], y[tr]),
                                              repeats, device)
                        err = 100.0 * (1.0 - clf.score(X[te], y[te]))
                        margins = y[tr] * clf.decision_function(X[tr])
                        rows.append({
                            "lambda": lam, "m": m, "r": r, "trial": trial, "loss": loss,
                            "regularizer": reg, "model": f"{rname}+{lname}",
                            "test_error_pct": err, **fit,
                            "n_iter": int(clf.n_iter_[0]), "converged": bool(clf.converged_[0]),
                            "margin_violators": int(np.sum(margins <= 1.0)),
                            "stop": clf.solver_info_[0]["stop"],
                        })
                        print(f"λ={lam:<5} m={m:<6} r={r:<5} {rows[-1]['model']:7s} "
                              f"err {err:5.2f}% (paper {paper_value(lam, rows[-1]['model'], m, 0)})"
                              f"  {fit['fit_seconds']:6.2f} s  it {rows[-1]['n_iter']:4d}  "
                              f"viol {rows[-1]['margin_violators']}", flush=True)
    return rows


def _mean(rows, key):
    vals = [r[key] for r in rows]
    return sum(vals) / len(vals)


def tables_markdown(rows, lambdas, sizes):
    lines = []
    for lam, tab in ((lam, "Table 2" if lam == 0.1 else "Table 3" if lam == 0.01 else "")
                     for lam in lambdas):
        lines.append(f"### λ = {lam} (paper: {tab or 'no table'}) — ours / paper\n")
        for key, k, title, fmt in (("test_error_pct", 0, "Test error (%)", "{:.2f}"),
                                   ("fit_seconds", 1, "Training time (s)", "{:.2f}"),
                                   ("n_iter", 2, "Newton steps", "{:.1f}"),
                                   ("margin_violators", 3, "Margin violators yᵢf(xᵢ) <= 1",
                                    "{:.0f}")):
            lines.append(f"**{title}**\n")
            lines.append("| model | " + " | ".join(f"m={m}, r={RANKS[m]}" for m in sizes) + " |")
            lines.append("|---|" + "---|" * len(sizes))
            for _, lname in LOSSES:
                for _, rname in REGS:
                    model = f"{rname}+{lname}"
                    cells = []
                    for m in sizes:
                        sel = [r for r in rows if r["lambda"] == lam and r["m"] == m
                               and r["model"] == model]
                        ours = fmt.format(_mean(sel, key)) if sel else "-"
                        pv = paper_value(lam, model, m, k)
                        cells.append(f"{ours} / {fmt.format(pv) if pv is not None else '-'}")
                    lines.append(f"| {model} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------- 2. m = 1,000,000
def million_one(spec):
    """One 1M fit (run in a subprocess): ours, the plain NumPy Newton, or sklearn."""
    import numpy as np

    from svmgpu.datasets import make_checkerboard

    p = MILLION
    X, y = make_checkerboard(p["m"], random_state=0)
    Xt, yt = make_checkerboard(p["m_test"], random_state=1)
    J = np.sort(np.random.default_rng(0).choice(p["m"], p["rank"], replace=False))
    out = dict(spec)
    impl = spec["impl"]
    if spec.get("prefault_gib"):
        out["prefault_seconds"] = prefault(spec["prefault_gib"])
    t0 = time.perf_counter()
    if impl == "svmgpu":
        from svmgpu import ReducedSVC

        device = spec["device"]
        if device.startswith("cuda"):
            from svmgpu.backend import to_device

            X, Xt = to_device(X, device), to_device(Xt, device)
        clf = ReducedSVC(loss="squared_hinge", regularizer="gsvm", rank=p["rank"], C=p["C"],
                         gamma=p["gamma"], random_state=0, device=device,
                         dtype=spec.get("dtype"))
        with Timer(device) as t:
            clf.fit(X, y)
        assert np.array_equal(clf.support_, J)
        out.update(fit_seconds=t.seconds, n_iter=int(clf.n_iter_[0]),
                   converged=bool(clf.converged_[0]), stop=clf.solver_info_[0]["stop"],
                   solver_timings=clf.solver_info_[0]["timings"],
                   presolve=clf.solver_info_[0]["presolve"],
                   active_set_sizes=clf.solver_info_[0]["active_set_sizes"])
        with Timer(device) as tp:
            pred = clf.predict(Xt)
        from svmgpu.backend import to_numpy

        acc = float(np.mean(to_numpy(pred) == yt))
    elif impl == "numpy_newton":
        from sklearn.metrics.pairwise import rbf_kernel

        with Timer() as t:
            lam = 1.0 / (2.0 * p["C"])
            F = rbf_kernel(X, X[J], gamma=p["gamma"])
            z = np.zeros(p["rank"])
            active, steps = None, 0
            for steps in range(1, 101):  # noqa: B007
                act = 1.0 - y * (F @ z) > 0
                if active is not None and np.array_equal(act, active):
                    steps -= 1
                    break
                FI = F[act]
                z = np.linalg.solve(lam * np.eye(p["rank"]) + FI.T @ FI, FI.T @ y[act])
                active = act
        out.update(fit_seconds=t.seconds, n_iter=steps)
        with Timer() as tp:
            pred = np.where(rbf_kernel(Xt, X[J], gamma=p["gamma"]) @ z > 0, 1, -1)
        acc = float(np.mean(pred == yt))
    elif impl == "sklearn_nystroem_linearsvc":
        from sklearn.kernel_approximation import Nystroem
        from sklearn.svm import LinearSVC

        # Nystroem fitted on exactly the landmarks X_J whitens K(X, X_J) by K_JJ^{-1/2}: the
        # RKHS model (M1) on the same reduced set; LinearSVC's squared hinge is our ψ with C.
        with Timer() as t:
            feats = Nystroem(gamma=p["gamma"], n_components=p["rank"], random_state=0).fit(X[J])
            Ftr = feats.transform(X)
            svc = LinearSVC(C=p["C"], loss="squared_hinge", dual=False, fit_intercept=False,
                            tol=1e-4, max_iter=1000).fit(Ftr, y)
        del Ftr
        out.update(fit_seconds=t.seconds, n_iter=int(np.max(svc.n_iter_)))
        with Timer() as tp:
            pred = svc.predict(feats.transform(Xt))
        acc = float(np.mean(pred == yt))
    else:
        raise ValueError(impl)
    out.update(predict_seconds=tp.seconds, end_to_end_seconds=out["fit_seconds"] + tp.seconds,
               test_accuracy=acc, peak_rss_bytes=peak_rss_bytes(),
               wall_seconds=time.perf_counter() - t0, loadavg_1min=os.getloadavg()[0])
    return out


def psvc_one(spec):
    """PSVC on 1,000,000 × 50 (subprocess), or sklearn's RidgeClassifier on the same data."""
    import numpy as np

    rng = np.random.default_rng(0)
    m, d = spec["m"], spec["d"]
    X = rng.standard_normal((m, d))
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 + 0.5 * rng.standard_normal(m) > 0, 1, -1)
    out = dict(spec)
    if spec["impl"] == "svmgpu":
        from svmgpu import PSVC

        clf = PSVC(C=1.0, device=spec["device"])
        with Timer(spec["device"]) as t:
            clf.fit(X if spec["device"] == "cpu" else __import__("cupy").asarray(X), y)
        with Timer(spec["device"]) as t2:  # a second fit: warm caches
            clf.fit(X if spec["device"] == "cpu" else __import__("cupy").asarray(X), y)
    else:
        from sklearn.linear_model import RidgeClassifier

        clf = RidgeClassifier(alpha=0.5)
        with Timer() as t:
            clf.fit(X, y)
        with Timer() as t2:
            clf.fit(X, y)
    out.update(fit_seconds=t.seconds, fit_seconds_second=t2.seconds,
               train_accuracy=float(clf.score(X, y)), peak_rss_bytes=peak_rss_bytes(),
               loadavg_1min=os.getloadavg()[0])
    return out


def _subprocess(fn, spec, repeats=1):
    """``fn`` on ``spec`` in ``repeats`` fresh processes, merged (:func:`merge_repeats`); a
    failure is recorded in the row (``error``) instead of stopping the benchmark."""
    import subprocess

    runs = []
    for _ in range(max(repeats, 1)):
        cmd = [sys.executable, __file__, "--one", fn, json.dumps(spec)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stdout, res.stderr, file=sys.stderr)
            return dict(spec, error=res.stderr.strip().splitlines()[-1] if res.stderr else "failed")
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return merge_repeats(runs)


def _alias_exports():
    """Make ``from svmgpu import ReducedSVC, PSVC`` work before the package exports them."""
    import svmgpu

    if not hasattr(svmgpu, "ReducedSVC"):
        from svmgpu.estimators.reduced import ReducedSVC

        svmgpu.ReducedSVC = ReducedSVC
    if not hasattr(svmgpu, "PSVC"):
        from svmgpu.estimators.closed_form import PSVC

        svmgpu.PSVC = PSVC


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4000, 8000, 15000, 20000, 25000])
    ap.add_argument("--lambdas", type=float, nargs="+", default=list(ZHOU_TABLES["lambdas"]))
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--skip-tables", action="store_true")
    ap.add_argument("--skip-million", action="store_true")
    ap.add_argument("--sklearn", action="store_true", help="also run Nystroem + LinearSVC at 1M")
    ap.add_argument("--quick", action="store_true", help="sizes 4000 8000 only")
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits per table cell, processes per 1M / PSVC fit (median, min, max)")
    ap.add_argument("--out", default=None,
                    help="result name or path (default newton_<device>; the tables go beside it "
                         "as <name>.md, by default bench/results/newton_tables.md)")
    ap.add_argument("--prefault", type=float, default=0.0, metavar="GIB",
                    help="write and free GIB GiB of memory in each 1M fit's process just "
                         "before it is timed (_common.prefault: a VM's first touch of its "
                         "memory; 0, the default: none)")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    _alias_exports()
    if args.one:
        fn, spec = args.one
        print(json.dumps({"million": million_one, "psvc": psvc_one}[fn](json.loads(spec)),
                         default=float))
        return
    sizes = [4000, 8000] if args.quick else args.sizes
    payload = {"benchmark": "newton", "machine": machine_info(args.device),
               "setup": {"tables": {"data": "200x200 integer checkerboard grid, 4x4 cells",
                                    "gamma": ZHOU_TABLES["gamma"], "ranks": RANKS, "lambdas": args.lambdas,
                                    "sizes": sizes, "trials": args.trials,
                                    "C": "1/(2 lambda) for LS/SH, 1/lambda for Huber/logistic"},
                         "million": MILLION,
                         "psvc": {"m": 1_000_000, "d": 50, "C": 1.0}},
               "targets": {"million_cpu": "<= 15 s end to end, >= 99.9% test accuracy, >= 2x "
                                          "faster than the plain NumPy semi-smooth Newton",
                           "psvc_cpu": "linear PSVC on 1,000,000 x 50 in <= 2 s"}}
    dev = "cpu" if args.device == "cpu" else "cuda"
    previous = {}
    name = args.out or f"newton_{dev}"
    tables_md = results_path(name, ".md") if args.out else RESULTS / "newton_tables.md"
    if results_path(name).exists():  # a partial run keeps the other parts
        previous = json.loads(results_path(name).read_text())
    if not args.skip_tables:
        rows = run_tables(sizes, args.lambdas, args.trials, args.device, args.repeats)
    else:
        rows = previous.get("tables", [])
        tab = previous.get("setup", {}).get("tables", {})
        sizes, args.lambdas, args.trials = (tab.get("sizes", sizes), tab.get("lambdas", args.lambdas),
                                            tab.get("trials", args.trials))
        payload["setup"]["tables"] = tab or payload["setup"]["tables"]
    payload["tables"] = rows
    md = tables_markdown(rows, args.lambdas, sizes) if rows else ""
    if args.skip_million and "million" in previous:
        payload["million"], payload["psvc"] = previous["million"], previous.get("psvc", [])
        md += "\n" + million_markdown(payload["million"], payload["psvc"])
    if not args.skip_million:
        runs = [{"impl": "svmgpu", "device": args.device},
                {"impl": "svmgpu", "device": args.device, "dtype": "float32"},
                {"impl": "numpy_newton"}]
        if args.sklearn:
            runs.append({"impl": "sklearn_nystroem_linearsvc"})
        if args.prefault:
            runs = [dict(spec, prefault_gib=args.prefault) for spec in runs]
        payload["million"] = []
        for spec in runs:
            res = _subprocess("million", spec, args.repeats)
            payload["million"].append(res)
            print(json.dumps({k: v for k, v in res.items() if k not in ("active_set_sizes",)},
                             default=float), flush=True)
        rerun = {(r["impl"], r.get("dtype")) for r in runs}
        payload["million"] += [r for r in previous.get("million", [])  # e.g. an earlier --sklearn
                               if (r["impl"], r.get("dtype")) not in rerun]
        payload["psvc"] = []
        for spec in ({"impl": "svmgpu", "device": args.device, "m": 1_000_000, "d": 50},
                     {"impl": "sklearn_ridge", "m": 1_000_000, "d": 50}):
            res = _subprocess("psvc", spec, args.repeats)
            payload["psvc"].append(res)
            print(json.dumps(res, default=float), flush=True)
        md += "\n" + million_markdown(payload["million"], payload["psvc"])
    path = write_results(name, payload)
    header = (f"# Reduced-SVM Newton benchmark ({dev})\n\nMachine: "
              f"{payload['machine'].get('cpu_model', '')}, {payload['machine']['cpu_count']} cores"
              f"{', ' + payload['machine']['gpu'] if 'gpu' in payload['machine'] else ''}. "
              "Generated by `python bench/bench_newton.py`; the paper's numbers are means over "
              "20 trials in Matlab on a Core i3, ours over "
              f"{args.trials} trial(s). The machine is shared with other jobs: the 1-minute "
              "load average at the end of each large run is recorded (2 cores: a load of 4 "
              "roughly halves our share), so timings are noisy.\n\n")
    tables_md.write_text(header + md + "\n")
    print(f"\nwrote {path} and {tables_md}")


def _load(r):
    v = r.get("loadavg_1min")
    return "-" if v is None else f"{v:.1f}"


def million_markdown(million, psvc):
    lines = ["### m = 1,000,000 Checkerboard (unit square, γ = 16, r = 300, squared hinge, "
             "GSVM, C = 100), test 200,000\n",
             "| implementation | fit (s) | predict (s) | end to end (s) | Newton steps | "
             "test accuracy | peak RSS (GB) | load avg |", "|---|---|---|---|---|---|---|---|"]
    names = {"svmgpu": "svmgpu ReducedSVC", "numpy_newton": "plain NumPy semi-smooth Newton",
             "sklearn_nystroem_linearsvc": "sklearn Nystroem + LinearSVC"}
    for r in million:
        if "error" in r:
            lines.append(f"| {names[r['impl']]} | failed: {r['error']} | | | | | |")
            continue
        name = names[r["impl"]] + (" (float32 K(X, X_J))" if r.get("dtype") == "float32" else "")
        steps = str(r.get("n_iter", "-"))
        pre = r.get("presolve")
        while pre:  # Newton steps of the pre-solves on strided subsets
            steps += f" + {pre['n_iter']} on {pre['rows']:,} rows"
            pre = pre.get("presolve")
        lines.append(f"| {name} | {r['fit_seconds']:.2f} | {r['predict_seconds']:.2f}"
                     f" | {r['end_to_end_seconds']:.2f} | {steps} | "
                     f"{100 * r['test_accuracy']:.3f} % | {r['peak_rss_bytes'] / 1e9:.2f} | "
                     f"{_load(r)} |")
    ours = next((r for r in million if r["impl"] == "svmgpu" and "error" not in r
                 and r.get("dtype") is None), None)
    base = next((r for r in million if r["impl"] == "numpy_newton" and "error" not in r), None)
    if ours and base:
        lines.append(f"\nSpeed-up over the plain NumPy Newton (end to end): "
                     f"{base['end_to_end_seconds'] / ours['end_to_end_seconds']:.1f}x. "
                     "Targets: <= 15 s, >= 99.9 %, >= 2x.\n")
    lines += ["### Linear PSVC, 1,000,000 × 50\n", "| implementation | fit (s) | second fit (s) "
              "| train accuracy | load avg |", "|---|---|---|---|---|"]
    for r in psvc:
        if "error" in r:
            lines.append(f"| {r['impl']} | failed: {r['error']} | | |")
            continue
        name = "svmgpu PSVC" if r["impl"] == "svmgpu" else "sklearn RidgeClassifier(alpha=0.5)"
        lines.append(f"| {name} | {r['fit_seconds']:.2f} | {r['fit_seconds_second']:.2f} | "
                     f"{100 * r['train_accuracy']:.2f} % | {_load(r)} |")
    lines.append("\nTarget: <= 2 s.\n")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
