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
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine_info, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def a9a_like(n, seed):
    """``n`` rows of 123 binary features, 14 ones per row in 14 groups (a9a's one-hot layout),
    labels from a fixed nonlinear rule plus 10 % flips."""
    import numpy as np

    rng = np.random.default_rng(seed)
    groups = np.array_split(np.arange(123), 14)
    X = np.zeros((n, 123))
    for g in groups:
        X[np.arange(n), rng.choice(g, size=n)] = 1.0
    w = np.random.default_rng(12345).standard_normal(123)  # the same rule for every split
    s = X @ w
    y = np.where(np.sin(s) + 0.3 * s > 0.3, 1, -1)
    flip = rng.random(n) < 0.10
    return X, np.where(flip, -y, y)


def covtype_split(path):
    import numpy as np

    from svmgpu.datasets import load_covtype

    X, y = load_covtype(path)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    X, y = X[perm], y[perm]
    lo, hi = X[:381_012].min(axis=0), X[:381_012].max(axis=0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    return X[:381_012], y[:381_012], X[381_012:], y[381_012:]


def run_case(case: dict) -> dict:
    """One fit + predict in this process (the tree under test is first on sys.path)."""
    import time

    import numpy as np

    from svmgpu import ReducedSVC, UniSVC
    from svmgpu.datasets import make_checkerboard

    name = case["name"]
    if name in ("checkerboard", "reduced"):
        m = 1_000_000
        X, y = make_checkerboard(m, random_state=0)
        Xt, yt = make_checkerboard(200_000, random_state=1)
        if name == "checkerboard":
            est = UniSVC(C=1.0 / (1e-7 * m), gamma=16.0, rank=300, random_state=0, device="cpu")
        else:
            est = ReducedSVC(C=1.0 / (2e-7 * m), gamma=16.0, rank=300, random_state=0,
                             device="cpu")
    elif name == "a9a_like":
        X, y = a9a_like(30_000, 0)
        Xt, yt = a9a_like(10_000, 1)
        est = UniSVC(C=1.0, gamma=0.125, rank=1000, random_state=0, device="cpu")
    elif name == "covtype":
        X, y, Xt, yt = covtype_split(case["covtype"])
        est = UniSVC(C=1.0 / (1e-8 * X.shape[0]), gamma=0.25, rank=1000, random_state=0,
                     device="cpu")
    else:
        raise ValueError(f"unknown case {name!r}")
    t0 = time.perf_counter()
    est.fit(X, y)
    t1 = time.perf_counter()
    pred = est.predict(Xt)
    t2 = time.perf_counter()
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    return {"fit_seconds": t1 - t0, "predict_seconds": t2 - t1,
            "test_accuracy": float(np.mean(np.asarray(pred) == yt)), "peak_rss_bytes": peak,
            "n_iter": np.asarray(getattr(est, "n_iter_", -1)).tolist()}


def _subprocess(tree: Path, case: dict) -> dict:
    code = (f"import sys, json; sys.path.insert(0, {str(tree)!r}); "
            f"sys.path.insert(1, {str(Path(__file__).resolve().parent)!r}); "
            "import bench_regression as b; "
            f"print(json.dumps(b.run_case(json.loads({json.dumps(json.dumps(case))}))))")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"{case['name']} on {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="git revision to compare against")
    ap.add_argument("--cases", default="checkerboard,reduced,a9a_like")
    ap.add_argument("--covtype", default=None)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "refactor_before_after_cpu.json"))
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
    with open("/proc/cpuinfo") as fh:
        flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
    info["simd"] = [f for f in ("avx2", "avx512f", "fma") if f in flags]
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
            summary.append({"case": name, "tree": label,
                            "fit_s (min)": min(r["fit_seconds"] for r in rs),
                            "predict_s (min)": min(r["predict_seconds"] for r in rs),
                            "accuracy": rs[0]["test_accuracy"],
                            "peak_GB": max(r["peak_rss_bytes"] for r in rs) / 1e9})
    print_table(summary, ["case", "tree", "fit_s (min)", "predict_s (min)", "accuracy", "peak_GB"])
    info["loadavg_at_end"] = list(os.getloadavg())
    payload = {"benchmark": "bench_regression", "before": rev, "after": head + ("+dirty" if dirty
                                                                                  else ""),
               "machine": info, "rows": rows, "summary": summary}
    Path(args.out).write_text(json.dumps(payload, indent=1))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
