"""The memory-budget contract, measured: peak resident memory above the data and fit time of a
1M Checkerboard fit with the features in memory and with a budget that forces recomputed rows.

``memory_budget`` bounds everything a fit allocates beyond its input, the m × r features
included (README, "Memory budget"). Each case runs in its own process: the data are made, a
small warm-up fit loads the libraries, the peak counter (VmHWM) is reset, then the fit runs;
the peak minus the resident size before the fit is what the fit allocated.

Cases (float64, r = 300, γ = 16, the UniSVM Checkerboard C): UniSVC squared hinge and
ReducedSVC GSVM, each with no budget (half the free memory: P held) and with 400 MB
(P, 2.4 GB, recomputed per block); and the 50 MB budget, refused up front.

Usage: python bench/bench_memory.py [--m 1000000] [--repeats 1]
       [--out bench/results/memory_budget_cpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from _cases import CHECKERBOARD, checkerboard_split
from _common import (
    machine_info,
    peak_rss_bytes,
    print_table,
    reset_peak,
    rss_bytes,
    run_json,
    timing_fields,
    timing_stats,
    write_results,
)


def run_case(m: int, budget: str, name: str) -> dict:
    """One fit (in its own process): the data, a warm-up fit, the peak counter reset, the fit
    with ``memory_budget=budget`` (``"none"``: no budget)."""
    import numpy as np

    from svmgpu import ReducedSVC, UniSVC

    budget = None if budget == "none" else budget
    X, y, Xt, yt = checkerboard_split(m, CHECKERBOARD.m_test)
    UniSVC(rank=20, random_state=0).fit(X[:3000], y[:3000])
    reset_peak()
    base = rss_bytes()
    cb = CHECKERBOARD
    if name == "UniSVC":
        est = UniSVC(C=cb.C(m), gamma=cb.gamma, rank=cb.rank, random_state=0,
                     memory_budget=budget)
    else:
        est = ReducedSVC(C=cb.C_gsvm(m), gamma=cb.gamma, rank=cb.rank, random_state=0,
                         memory_budget=budget)
    t0 = time.perf_counter()
    try:
        est.fit(X, y)
    except MemoryError as exc:
        return {"refused_after_s": time.perf_counter() - t0, "message": str(exc)}
    fit = time.perf_counter() - t0
    return {"fit_seconds": fit, "peak_above_data_bytes": peak_rss_bytes() - base,
            "test_accuracy": float(np.mean(est.predict(Xt) == yt))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=CHECKERBOARD.m)
    ap.add_argument("--repeats", type=int, default=1,
                    help="processes per case (median, min and max of the fit time recorded)")
    ap.add_argument("--out", default="memory_budget_cpu")
    ap.add_argument("--case", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(int(args.case[0]), args.case[1], args.case[2])))
        return
    rows = []
    cases = [("UniSVC", "none"), ("UniSVC", "400MB"), ("ReducedSVC", "none"),
             ("ReducedSVC", "400MB"), ("UniSVC", "50MB")]
    for name, budget in cases:
        runs = [run_json([__file__, "--case", args.m, budget, name], (name, budget))
                for _ in range(max(args.repeats, 1))]
        row = {"estimator": name, "m": args.m, "memory_budget": budget, **runs[0]}
        for key in ("fit_seconds", "refused_after_s"):
            if key in row:
                row.update(timing_fields(key, timing_stats([r[key] for r in runs])))
        if "peak_above_data_bytes" in row:
            row["peak_above_data_bytes"] = max(r["peak_above_data_bytes"] for r in runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print_table([{"estimator": r["estimator"], "budget": r["memory_budget"],
                  "fit_s": r.get("fit_seconds"), "refused_s": r.get("refused_after_s"),
                  "peak_MB": (r["peak_above_data_bytes"] / 1e6
                              if "peak_above_data_bytes" in r else None),
                  "accuracy": r.get("test_accuracy")} for r in rows],
                ["estimator", "budget", "fit_s", "refused_s", "peak_MB", "accuracy"])
    info = machine_info("cpu")
    info["loadavg_at_end"] = list(os.getloadavg())
    print("wrote", write_results(args.out, {"benchmark": "bench_memory", "machine": info,
                                            "rows": rows}))


if __name__ == "__main__":
    main()
