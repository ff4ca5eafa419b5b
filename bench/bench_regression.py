"""Before/after benchmark of a refactor: the same cases on two source trees, in one run.

Issue 11 ("one computing core") must not slow the library down. This script runs each case on
the current tree and on an earlier revision (checked out into a temporary ``git worktree``),
alternating old/new per repeat so that both see the same machine state, each fit in its own
subprocess (fresh imports, per-fit peak memory). It records wall times (fit, predict), test
accuracy and peak RSS, with the load average and the CPU's SIMD flags.

Cases (CPU, float64, the library defaults otherwise):

``checkerboard``  UniSVC squared hinge, 1,000,000 train / 200,000 test, γ = 16, r = 300,
                  C = 1/(λ m) with λ = 1e-7 (the UniSVM Checkerboard set-up)
``reduced``       ReducedSVC (GSVM, squared hinge), the same data, r = 300, C = 1/(2λ m)
``a9a_like``      UniSVC squared hinge, r = 1000, γ = 2⁻³, C = 1: 30,000 / 10,000 rows of 123
                  binary features with 14 ones each (a9a's shape and sparsity), label from a
                  nonlinear rule of the active features with 10 % of labels flipped; made here
                  from a seed, so it is the same in both trees
``greedy``        GreedySVC (GS-SVM, batch 1, γ = 1024 as tuned in bench_greedy.py), Checkerboard
                  100,000 train / 200,000 test
``covtype``       UniSVC squared hinge, the UniSVM Covtype set-up (class 2 vs rest, 381,012 /
                  200,000, features scaled to [0, 1], γ = 2⁻², λ = 1e-8, r = 1000); needs
                  ``--covtype PATH``

Usage: python bench/bench_regression.py --before REV [--cases checkerboard,reduced,a9a_like]
       [--covtype ../shared/data/covtype.data.gz] [--repeats 2] [--out bench/results/x.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from _cases import CHECKERBOARD, COVTYPE, a9a_like, checkerboard_split, covtype_split
from _common import BENCH, ROOT, machine_info, print_table, run_json, timing_stats, write_results

#: The rows of the a9a-like case (training, test).
A9A_ROWS = (30_000, 10_000)


def run_case(case: dict) -> dict:
    """One fit + predict in this process (the tree under test is first on sys.path)."""
    import time

    import numpy as np

    from svmgpu import GreedySVC, ReducedSVC, UniSVC

    name = case["name"]
    cb = CHECKERBOARD
    if name in ("checkerboard", "reduced"):
        X, y, Xt, yt = checkerboard_split(cb.m, cb.m_test)
        if name == "checkerboard":
            est = UniSVC(C=cb.C(), gamma=cb.gamma, rank=cb.rank, random_state=0, device="cpu")
        else:
            est = ReducedSVC(C=cb.C_gsvm(), gamma=cb.gamma, rank=cb.rank, random_state=0,
                             device="cpu")
    elif name == "greedy":
        X, y, Xt, yt = checkerboard_split(100_000, cb.m_test)
        est = GreedySVC(gamma=1024.0, device="cpu")
    elif name == "a9a_like":
        X, y = a9a_like(A9A_ROWS[0], 0)
        Xt, yt = a9a_like(A9A_ROWS[1], 1)
        est = UniSVC(C=1.0, gamma=0.125, rank=1000, random_state=0, device="cpu")
    elif name == "covtype":
        X, y, Xt, yt = covtype_split(case["covtype"])
        est = UniSVC(C=COVTYPE.C(X.shape[0]), gamma=COVTYPE.gamma, rank=COVTYPE.rank,
                     random_state=0, device="cpu")
    else:
        raise ValueError(f"unknown case {name!r}")
    t0 = time.perf_counter()
    est.fit(X, y)
    t1 = time.perf_counter()
    pred = est.predict(Xt)
    t2 = time.perf_counter()
    # VmHWM read here: the tree under test may be older than svmgpu.backend.peak_host_bytes
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    return {"fit_seconds": t1 - t0, "predict_seconds": t2 - t1,
            "test_accuracy": float(np.mean(np.asarray(pred) == yt)), "peak_rss_bytes": peak,
            "n_iter": np.asarray(getattr(est, "n_iter_", -1)).tolist()}


def _subprocess(tree: Path, case: dict) -> dict:
    """``run_case`` in a fresh process that imports svmgpu from ``tree`` (the one place in
    bench/ that puts a source tree first on the path: this script compares two of them)."""
    code = (f"import sys, json; sys.path.insert(0, {str(tree)!r}); "
            f"sys.path.insert(1, {str(BENCH)!r}); "
            "import bench_regression as b; "
            f"print(json.dumps(b.run_case(json.loads({json.dumps(json.dumps(case))}))))")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return run_json(["-c", code], f"{case['name']} on {tree}", env=env,
                    cwd=tempfile.gettempdir())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="git revision to compare against")
    ap.add_argument("--cases", default="checkerboard,reduced,a9a_like")
    ap.add_argument("--covtype", default=None)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default="refactor_before_after_cpu")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if "covtype" in cases and not args.covtype:
        ap.error("the covtype case needs --covtype PATH")
    if args.covtype:  # the fits run in a temporary directory
        args.covtype = str(Path(args.covtype).resolve())
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before],
                         capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "svmgpu"],
                                capture_output=True, text=True).stdout.strip())
    info = machine_info("cpu")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), rev],
                       check=True, capture_output=True)
        try:
            trees = {"before": old, "after": ROOT}
            for name in cases:
                case = {"name": name, "covtype": args.covtype}
                for rep in range(args.repeats):
                    for label, tree in trees.items():
                        res = _subprocess(tree, case)
                        row = {"case": name, "tree": label, "repeat": rep, **res}
                        rows.append(row)
                        print(json.dumps(row), flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           capture_output=True)
    summary = []
    for name in cases:
        for label in ("before", "after"):
            rs = [r for r in rows if r["case"] == name and r["tree"] == label]
            fit = timing_stats([r["fit_seconds"] for r in rs])
            pred = timing_stats([r["predict_seconds"] for r in rs])
            summary.append({"case": name, "tree": label, "repeats": fit["repeats"],
                            "fit_s (min)": fit["min"], "fit_s (median)": fit["median"],
                            "fit_s (max)": fit["max"], "predict_s (min)": pred["min"],
                            "predict_s (median)": pred["median"],
                            "predict_s (max)": pred["max"],
                            "accuracy": rs[0]["test_accuracy"],
                            "peak_GB": max(r["peak_rss_bytes"] for r in rs) / 1e9})
    print_table(summary, ["case", "tree", "repeats", "fit_s (min)", "fit_s (median)",
                          "fit_s (max)", "predict_s (min)", "accuracy", "peak_GB"])
    info["loadavg_at_end"] = list(os.getloadavg())
    payload = {"benchmark": "bench_regression", "before": rev, "after": head + ("+dirty" if dirty
                                                                                  else ""),
               "machine": info, "rows": rows, "summary": summary}
    print("wrote", write_results(args.out, payload))


if __name__ == "__main__":
    main()
