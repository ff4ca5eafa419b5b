"""Benchmark (issue 15, target 4): the Covtype accuracy frontier on this CPU.

UniSVM's split (381,012 train / 200,000 test, a fixed random permutation, features scaled to
[0, 1] with the training minima and maxima; class 2 against the rest). For each method a ladder
of training sizes or ranks, each point in its own subprocess (peak memory per fit), and the
ladder stops once a fit passes the time budget (default 300 s):

* ``GreedySVC`` (GS-SVM, the k-d tree pruning of its kernel columns) on the first m rows,
  γ = 32 (tuned on a validation set by ``bench_greedy.py``);
* ``UniSVC`` squared hinge on all rows, UniSVM's λ = 1e-8 (``C = 1/(λ m)``), at several ranks,
  γ = 4 (the GPU frontier's choice, ``bench_gpu.py``), float32 features with float64 algebra;
* scikit-learn's ``SVC`` (libsvm) on a subsample, γ = 8, C = 10 (``bench_greedy.py``'s tuning),
  the reference.

Records fit and predict seconds, test accuracy (all 200,000 test rows) and peak RSS;
``python docs/plots.py`` draws test accuracy against fit time from the JSON.

Usage: python bench/bench_covtype_frontier.py --covtype PATH [--budget 300]
       [--greedy-sizes 50000,100000,200000,381012] [--ranks 1000,2000,4000]
       [--svc-sizes 20000,50000] [--repeats 1] [--out covtype_frontier_cpu]
       [--append]
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from _cases import COVTYPE, COVTYPE_SPLIT, COVTYPE_TUNED, covtype_split
from _common import (
    Timer,
    answer_spec,
    case_parser,
    machine_info,
    peak_rss_bytes,
    print_table,
    results_path,
    run_specs,
    write_results,
)

COLUMNS = ["method", "m", "rank", "dtype", "fit_seconds", "predict_seconds", "test_accuracy",
           "n_support", "peak_rss_bytes"]


def run_one(spec: dict) -> dict:
    import numpy as np

    X, y, Xt, yt = covtype_split(spec["covtype"], spec["dtype"])
    m = spec["m"]
    X, y = X[:m], y[:m]
    out = {k: v for k, v in spec.items() if k != "covtype"}
    if spec["method"] == "SVC":
        from sklearn.svm import SVC

        clf = SVC(C=spec["C"], gamma=spec["gamma"], cache_size=2000)
    elif spec["method"] == "GreedySVC":
        from svmgpu import GreedySVC

        clf = GreedySVC(gamma=spec["gamma"])
    else:
        from svmgpu import UniSVC

        clf = UniSVC(loss="squared_hinge", C=COVTYPE.C(m), gamma=spec["gamma"],
                     rank=spec["rank"], dtype=spec["dtype"], random_state=0)
    with Timer() as t:
        clf.fit(X, y)
    out["fit_seconds"] = t.seconds
    with Timer() as tp:
        pred = np.asarray(clf.predict(Xt))
    out["predict_seconds"] = tp.seconds
    out["test_accuracy"] = float(np.mean(pred == yt))
    n_sup = getattr(clf, "n_support_", None)
    out["n_support"] = None if n_sup is None else int(np.sum(n_sup))
    if hasattr(clf, "fit_timings_"):
        out["fit_timings"] = clf.fit_timings_
    if hasattr(clf, "n_landmarks_"):
        out["rank_used"] = int(clf.n_landmarks_)
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


def ladder(specs, budget, repeats=1):
    """Run the specs in order, stopping after the first fit that passes ``budget`` seconds."""
    rows = []
    for spec in specs:
        row = run_specs(__file__, [spec], COLUMNS, repeats)[0]
        rows.append(row)
        if row["fit_seconds"] > budget:
            print(f"  {spec['method']}: {row['fit_seconds']:.0f} s > {budget:.0f} s, ladder stops")
            break
    return rows


def main():
    ap = case_parser(__doc__, raw=False)
    ap.add_argument("--covtype", help="path of covtype.data(.gz)")
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--greedy-sizes", default="50000,100000,200000,381012")
    ap.add_argument("--greedy-gamma", type=float, default=COVTYPE_TUNED["greedy_gamma"])
    ap.add_argument("--ranks", default="1000,2000,4000")
    ap.add_argument("--uni-gamma", type=float, default=COVTYPE_TUNED["unisvc_gamma"])
    ap.add_argument("--svc-sizes", default="20000,50000")
    ap.add_argument("--out", default="covtype_frontier_cpu")
    ap.add_argument("--append", action="store_true",
                    help="add these runs to the results already in --out (same method, m and "
                         "rank: replaced) and redraw the PNG from all of them")
    args = ap.parse_args()
    if answer_spec(args, run_one):
        return
    if not args.covtype:
        ap.error("--covtype PATH is required (UCI covtype.data.gz)")
    t0 = time.perf_counter()
    info = machine_info()
    base = {"covtype": str(Path(args.covtype).resolve())}
    rows = []
    sizes = [int(s) for s in args.greedy_sizes.split(",") if s]
    rows += ladder([dict(base, method="GreedySVC", m=m, rank=None, dtype="float64",
                         gamma=args.greedy_gamma) for m in sizes], args.budget, args.repeats)
    ranks = [int(r) for r in args.ranks.split(",") if r]
    rows += ladder([dict(base, method="UniSVC", m=COVTYPE.m, rank=r, dtype="float32",
                         gamma=args.uni_gamma) for r in ranks], args.budget, args.repeats)
    svc = [int(s) for s in args.svc_sizes.split(",") if s]
    rows += ladder([dict(base, method="SVC", m=m, rank=None, dtype="float64",
                         gamma=COVTYPE_TUNED["svc_gamma"], C=COVTYPE_TUNED["svc_C"])
                    for m in svc], args.budget, args.repeats)
    previous = {}
    if args.append:
        previous = json.loads(results_path(args.out).read_text())
        key = {(r["method"], r["m"], r["rank"]) for r in rows}
        rows = [r for r in previous["results"] if (r["method"], r["m"], r["rank"]) not in key] \
            + rows
    inside = [r for r in rows if r["fit_seconds"] <= args.budget and r["method"] != "SVC"]
    best = max(inside, key=lambda r: r["test_accuracy"]) if inside else None
    print("\nall runs:")
    print_table(rows, COLUMNS)
    payload = {"benchmark": "covtype_frontier", "machine": info, "budget_seconds": args.budget,
               "target_accuracy": 0.92, "split": COVTYPE_SPLIT, "lambda": COVTYPE.lam,
               "results": rows, "best_within_budget": best,
               "loadavg_at_end": list(os.getloadavg()),
               "total_seconds": time.perf_counter() - t0}
    if previous:
        payload["earlier_runs"] = {k: previous[k] for k in ("machine", "loadavg_at_end",
                                                            "total_seconds", "command",
                                                            "provenance", "recorded_in_commit")
                                   if k in previous}
    print(f"wrote {write_results(args.out, payload)}")


if __name__ == "__main__":
    main()
