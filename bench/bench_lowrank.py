"""Benchmark: building the low-rank factor P (K ≈ P Pᵀ) and PᵀP.

Cases (issue 2): m = 1,000,000 points uniform in the unit square, RBF γ = 16, r = 300; and
m = 381,012, d = 54, r = 1000 (the UniSVM Covtype set-up: real Covtype with --covtype PATH,
else a synthetic 54-dimensional set). For each case, svmgpu's Nyström (blocked, cache-sized
blocks, in-place trmm) against the same computation written plainly with NumPy/SciPy
(`rbf_kernel` on all rows, `cholesky`, `solve_triangular`), and the GFLOP/s of svmgpu's
PᵀP against a plain NumPy ``A.T @ A`` of the same shape. Each measurement runs in its own
subprocess so that peak memory (VmHWM) is per measurement.

Usage: python bench/bench_lowrank.py [--device cpu|cuda] [--dtypes float64,float32] [--quick]
       [--covtype PATH] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _cases import CHECKERBOARD, COVTYPE, covtype_first_rows
from _common import (
    Timer,
    default_name,
    machine_info,
    merge_repeats,
    peak_rss_bytes,
    print_table,
    reset_peak,
    rss_bytes,
    run_json,
    write_results,
)


def make_data(case: dict, dtype):
    rng = np.random.default_rng(0)
    if case["d"] == 2:
        return rng.random((case["m"], 2)).astype(dtype)
    if case.get("covtype"):
        return covtype_first_rows(case["covtype"], case["m"], dtype)
    return rng.random((case["m"], case["d"])).astype(dtype)


def run_one(args) -> dict:
    case = json.loads(args.case)
    dtype = np.dtype(args.dtype)
    X = make_data(case, dtype)
    r, gamma = case["r"], case["gamma"]
    out = {"impl": args.impl, "dtype": dtype.name, **{k: case[k] for k in ("m", "d", "r")},
           "device": args.device}
    p_bytes = case["m"] * r * dtype.itemsize
    if args.impl == "svmgpu":
        from svmgpu.backend import to_device
        from svmgpu.kernels import RBF
        from svmgpu.lowrank import nystrom

        Xd = to_device(X, args.device)
        nystrom(Xd[:2000], RBF(gamma), 50, random_state=0)  # warm-up (imports, BLAS threads)
        base = rss_bytes()
        reset_peak()
        with Timer(args.device) as t:
            f = nystrom(Xd, RBF(gamma), r, random_state=0)
        out["p_seconds"] = t.seconds
        out["rank"] = f.rank
        with Timer(args.device) as t2:
            G = f.features().gram()  # the factor's Gram matrix PᵀP
        out["ptp_seconds"] = t2.seconds
        P = f.P
        del G
    elif args.impl == "plain":
        import scipy.linalg
        from sklearn.metrics.pairwise import rbf_kernel

        base = rss_bytes()
        reset_peak()
        with Timer() as t:
            B = np.sort(np.random.default_rng(0).choice(case["m"], r, replace=False))
            C = rbf_kernel(X, X[B], gamma=gamma).astype(dtype)
            K_BB = C[B].astype(np.float64)
            L = np.linalg.cholesky(K_BB + (1e-10 if dtype == np.float64 else 1e-5) * np.eye(r))
            P = scipy.linalg.solve_triangular(L.astype(dtype), C.T, lower=True).T
            del C
        out["p_seconds"] = t.seconds
        out["rank"] = r
        with Timer() as t2:
            P.T @ P
        out["ptp_seconds"] = t2.seconds
    else:  # matmul reference for the PᵀP rate
        A = np.random.default_rng(1).random((case["m"], r)).astype(dtype)
        base = rss_bytes()
        reset_peak()
        A.T @ A  # warm-up
        with Timer() as t2:
            A.T @ A
        out["ptp_seconds"] = t2.seconds
        P = A
    rank = out.get("rank", r)
    out["ptp_gflops"] = 2.0 * case["m"] * rank * rank / out["ptp_seconds"] / 1e9
    out["peak_extra_bytes"] = peak_rss_bytes() - base
    out["p_bytes"] = p_bytes
    out["peak_over_P"] = out["peak_extra_bytes"] / p_bytes
    del P
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--covtype", default=None, help="path to covtype.data(.gz) for the d=54 case")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--skip-plain", action="store_true")
    ap.add_argument("--cases", default="checkerboard,covtype")
    ap.add_argument("--repeats", type=int, default=1,
                    help="processes per measurement (median, min and max recorded)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--impl", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_one(args)))
        return

    scale = 100 if args.quick else 1
    cb, ct = CHECKERBOARD, COVTYPE
    cases = [
        {"name": "checkerboard", "m": cb.m // scale, "d": 2, "r": cb.rank, "gamma": cb.gamma},
        {"name": "covtype", "m": ct.m // scale, "d": 54, "r": ct.rank // (10 if args.quick else 1),
         "gamma": ct.gamma, "covtype": args.covtype},
    ]
    cases = [c for c in cases if c["name"] in args.cases.split(",")]
    impls = ["svmgpu"] + ([] if args.skip_plain or args.device != "cpu" else ["plain"]) + ["matmul"]
    rows = []
    for case in cases:
        for dt in args.dtypes.split(","):
            for impl in impls:
                cmd = [__file__, "--case", json.dumps(case), "--impl", impl, "--dtype", dt,
                       "--device", args.device if impl == "svmgpu" else "cpu"]
                runs = []
                for _ in range(max(args.repeats, 1)):
                    t0 = time.perf_counter()
                    row = run_json(cmd, f"{impl} {case['name']} {dt}")
                    row["subprocess_seconds"] = time.perf_counter() - t0
                    runs.append(row)
                row = merge_repeats(runs)  # medians of the seconds: the rates from them
                row["ptp_gflops"] = 2.0 * row["m"] * row.get("rank", row["r"]) ** 2 \
                    / row["ptp_seconds"] / 1e9
                row["peak_over_P"] = row["peak_extra_bytes"] / row["p_bytes"]
                row["case"] = case["name"]
                rows.append(row)
                print_table([row], ["case", "impl", "dtype", "m", "d", "r", "rank", "p_seconds",
                                    "ptp_seconds", "ptp_gflops", "peak_over_P"])
    # ratios against the peers measured in this run
    for row in rows:
        ref = next((x for x in rows if x["impl"] == "matmul" and x["case"] == row["case"]
                    and x["dtype"] == row["dtype"]), None)
        if ref and row["impl"] != "matmul":
            row["ptp_rate_vs_matmul"] = row["ptp_gflops"] / ref["ptp_gflops"]
        plain = next((x for x in rows if x["impl"] == "plain" and x["case"] == row["case"]
                      and x["dtype"] == row["dtype"]), None)
        if plain and row["impl"] == "svmgpu":
            row["speedup_vs_plain"] = plain["p_seconds"] / row["p_seconds"]
    print()
    print_table(rows, ["case", "impl", "device", "dtype", "m", "r", "rank", "p_seconds",
                       "ptp_seconds", "ptp_gflops", "ptp_rate_vs_matmul", "speedup_vs_plain",
                       "peak_over_P"])
    payload = {"benchmark": "lowrank", "machine": machine_info(args.device),
               "targets": {"cpu": "P 1M x 300 <= 3 s; PtP >= 80% of matmul rate; peak <= 1.5 x P",
                           "gpu": "P 1M x 300 + PtP <= 0.2 s"},
               "results": rows}
    name = args.out or default_name("lowrank", args.device, args.quick)
    print("wrote", write_results(name, payload))


if __name__ == "__main__":
    main()
