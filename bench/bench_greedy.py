"""Benchmark: GS-SVM (``GreedySVC``, greedy stagewise hard-margin SVM) against scikit-learn ``SVC``.

Data sets (issue 5):

* Checkerboard: X uniform in the unit square, y = parity of the 4x4 cell (±1); training sizes
  ``--sizes`` (default 10,000 … 200,000), a separate test set of ``--n-test`` points.
* Covtype: the real UCI file with ``--covtype PATH`` (class 2 vs rest, features min-max
  scaled to [0, 1] with the training rows' range), else a 54-dimensional Covtype-like synthetic
  set (10 quantitative features, 4 wilderness and 40 soil indicators, a nonlinear label with
  3% flipped); training sizes ``--covtype-sizes``.

Parameters follow the paper's protocol (section V-B): they are chosen once per data set on a
small training set and a separate validation set (``--tune-m`` rows each), GS-SVM's θ on a
grid of γ, SVC's (γ, C) on a grid, and then used at every size. Both run in the same process on
the same data; SVC always on the CPU (it has no GPU), GS-SVM on ``--device``. SVC is skipped
above ``--svc-max-m`` or when its time, extrapolated quadratically from the previous size,
would pass ``--svc-cap`` seconds; the table says so.

Reported per fit: test error, support vectors, kernel evaluations (GS-SVM: ``l`` per stage;
libsvm does not report its count), fit and predict time, and peak resident memory of the fit
above the memory held before it (VmHWM after a reset; GPU memory is not included).

Target (issue 5): at m = 100,000 on Checkerboard, GS-SVM's error within 0.5 points of SVC's at
no more than 1/3 of SVC's fit time.

Usage: python bench/bench_greedy.py [--sizes 10000,20000] [--device cpu|cuda]
       [--covtype PATH] [--out FILE] [--batch 1,64] [--dtype float64] [--repeats 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _cases import CovtypeRows, covtype_like, scale01
from _common import (
    machine_info,
    peak_rss_bytes,
    print_table,
    repeat_timed,
    reset_peak,
    rss_bytes,
    timing_fields,
    write_results,
)

# Tuning grids: γ for GS-SVM; γ and C for SVC (GS-SVM has no C). Covtype features are scaled
# to [0, 1].
# Each grid reaches one step past the best value of the first runs (GS-SVM's γ = 1024 and SVC's
# C = 1000 on Checkerboard, γ = 32 and γ = 8 on Covtype were at the edges).
GRIDS = {
    "checkerboard": {"gs_gamma": [16.0, 64.0, 256.0, 1024.0, 4096.0],
                     "svc_gamma": [16.0, 64.0, 256.0], "C": [10.0, 100.0, 1000.0, 10000.0]},
    "covtype": {"gs_gamma": [0.5, 2.0, 8.0, 32.0, 128.0], "svc_gamma": [0.125, 0.5, 2.0, 8.0, 32.0],
                "C": [1.0, 10.0, 100.0]},
}


# ------------------------------------------------------------------------------------ data
def checkerboard(n, seed, dtype):
    """Uniform points in the unit square, label = parity of the 4x4 cell (±1, float64)."""
    from svmgpu.datasets import make_checkerboard

    X, y = make_checkerboard(n, grid=4, dtype=dtype, random_state=seed)
    return X, y.astype(np.float64)


# ---------------------------------------------------------------------------------- fitting
def _fit_predict(clf, X, y, Xt, yt, device="cpu", repeats=1):
    """Fit ``clf`` ``repeats`` times (median, min and max recorded) and predict the test rows
    once; the peak resident memory of the fits above the memory held before them."""
    base = rss_bytes()
    reset_peak()
    _, fit = repeat_timed(lambda: clf.fit(X, y), repeats, device)
    peak = peak_rss_bytes() - base
    pred, predict = repeat_timed(lambda: clf.predict(Xt), 1, device)
    return {**timing_fields("fit_seconds", fit), **timing_fields("predict_seconds", predict),
            "test_error": float(np.mean(pred != yt)), "peak_rss_bytes": int(peak)}


def fit_gs(X, y, Xt, yt, *, gamma, device, batch, dtype, repeats=1):
    from svmgpu.estimators.greedy import GreedySVC

    clf = GreedySVC(gamma=gamma, device=device, batch=batch, dtype=dtype)
    out = _fit_predict(clf, X, y, Xt, yt, device, repeats)
    return {**out, "n_sv": int(len(clf.support_)), "stages": int(clf.n_iter_.sum()),
            "kernel_evals": int(clf.n_kernel_evals_),
            "implicit_margin": float(clf.implicit_margin_[0])}


def fit_svc(X, y, Xt, yt, *, gamma, C, repeats=1):
    from sklearn.svm import SVC

    clf = SVC(C=C, gamma=gamma, cache_size=1000)
    out = _fit_predict(clf, X, y, Xt, yt, "cpu", repeats)
    return {**out, "n_sv": int(clf.n_support_.sum()), "stages": None, "kernel_evals": None}


def tune(name, X, y, Xv, yv, args):
    """γ for GS-SVM, (γ, C) for SVC, by error on the validation set (ties: the faster fit)."""
    grid = GRIDS[name]
    gs = []
    for g in grid["gs_gamma"]:
        r = fit_gs(X, y, Xv, yv, gamma=g, device=args.device, batch=1, dtype=args.dtype)
        gs.append((r["test_error"], r["fit_seconds"], g))
        print(f"  tune {name} GS-SVM gamma={g:g}: val error {r['test_error']:.4f} "
              f"({r['fit_seconds']:.2f}s, {r['n_sv']} SV)", flush=True)
    svc = []
    for g in grid["svc_gamma"]:
        for C in grid["C"]:
            r = fit_svc(X, y, Xv, yv, gamma=g, C=C)
            svc.append((r["test_error"], r["fit_seconds"], g, C))
            print(f"  tune {name} SVC gamma={g:g} C={C:g}: val error {r['test_error']:.4f} "
                  f"({r['fit_seconds']:.2f}s, {r['n_sv']} SV)", flush=True)
    best_gs, best_svc = min(gs), min(svc)
    return ({"gamma": best_gs[2]}, {"gamma": best_svc[2], "C": best_svc[3]},
            {"gs": [{"gamma": g, "val_error": e, "seconds": s} for e, s, g in gs],
             "svc": [{"gamma": g, "C": C, "val_error": e, "seconds": s} for e, s, g, C in svc]})


def run_dataset(name, sizes, get, args, rows):
    print(f"\n== {name}: tuning on {args.tune_m} training + {args.tune_m} validation rows",
          flush=True)
    (X, y), (Xv, yv) = get(args.tune_m, "tune"), get(args.tune_m, "val")
    p_gs, p_svc, tuning = tune("checkerboard" if name == "checkerboard" else "covtype",
                               X, y, Xv, yv, args)
    print(f"  chosen: GS-SVM {p_gs}, SVC {p_svc}", flush=True)
    Xt, yt = get(args.n_test, "test")
    svc_prev = None
    for m in sizes:
        X, y = get(m, f"train{m}")
        if name != "checkerboard":
            X, Xt_m = scale01(X, Xt)
        else:
            Xt_m = Xt
        for b in args.batch:
            r = fit_gs(X, y, Xt_m, yt, gamma=p_gs["gamma"], device=args.device, batch=b,
                       dtype=args.dtype, repeats=args.repeats)
            rows.append({"data": name, "m": m, "method": "GS-SVM" + (f" b={b}" if b > 1 else ""),
                         "device": args.device, **p_gs, "batch": b, **r})
            print(f"  m={m} GS-SVM b={b}: error {r['test_error']:.4f}, {r['n_sv']} SV, "
                  f"{r['fit_seconds']:.2f}s", flush=True)
        skip = None
        if m > args.svc_max_m:
            skip = f"m > --svc-max-m={args.svc_max_m}"
        elif svc_prev is not None and svc_prev[1] * (m / svc_prev[0]) ** 2 > args.svc_cap:
            skip = (f"predicted {svc_prev[1] * (m / svc_prev[0]) ** 2:.0f}s > "
                    f"--svc-cap={args.svc_cap:g}s")
        if skip:
            rows.append({"data": name, "m": m, "method": "SVC", "device": "cpu", **p_svc,
                         "skipped": skip})
            print(f"  m={m} SVC skipped: {skip}", flush=True)
            continue
        r = fit_svc(X, y, Xt_m, yt, **p_svc, repeats=args.repeats)
        svc_prev = (m, r["fit_seconds"])
        rows.append({"data": name, "m": m, "method": "SVC", "device": "cpu", **p_svc, **r})
        print(f"  m={m} SVC: error {r['test_error']:.4f}, {r['n_sv']} SV, "
              f"{r['fit_seconds']:.2f}s", flush=True)
    return {"gs": p_gs, "svc": p_svc, "tuning": tuning}


def target(rows, m=100_000):
    gs = [r for r in rows if r["data"] == "checkerboard" and r["m"] == m and r["method"] == "GS-SVM"]
    svc = [r for r in rows if r["data"] == "checkerboard" and r["m"] == m and r["method"] == "SVC"
           and "skipped" not in r]
    if not gs or not svc:
        return None
    gs, svc = gs[0], svc[0]
    d_err = 100 * (gs["test_error"] - svc["test_error"])
    ratio = gs["fit_seconds"] / svc["fit_seconds"]
    return {"m": m, "error_gap_points": d_err, "time_ratio": ratio,
            "met": bool(d_err <= 0.5 and ratio <= 1 / 3)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,20000,50000,100000,200000",
                    help="Checkerboard training sizes (comma-separated)")
    ap.add_argument("--covtype-sizes", default="10000,20000,50000",
                    help="Covtype training sizes; empty to skip")
    ap.add_argument("--covtype", default=None, help="path of covtype.data(.gz): real Covtype")
    ap.add_argument("--device", default="cpu", help="GS-SVM device: cpu or cuda")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--batch", default="1", help="GS-SVM batch values to run (e.g. 1,64)")
    ap.add_argument("--n-test", type=int, default=20_000)
    ap.add_argument("--tune-m", type=int, default=10_000)
    ap.add_argument("--svc-max-m", type=int, default=200_000)
    ap.add_argument("--svc-cap", type=float, default=900.0,
                    help="skip SVC when its extrapolated fit time passes this many seconds")
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits per measured size (median, min and max recorded; tuning: one)")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/greedy_<device>.json)")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads (default 1: libsvm is single-threaded, and OpenBLAS "
                         "threads slow the small products of GS-SVM on a busy machine)")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    args.batch = [int(b) for b in args.batch.split(",")]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    cov_sizes = [int(s) for s in args.covtype_sizes.split(",") if s]
    dtype = np.dtype(args.dtype)
    device = "cuda" if args.device.startswith(("cuda", "gpu")) else "cpu"

    seeds = {"tune": 1, "val": 2, "test": 3}
    rows, params = [], {}
    t0 = time.perf_counter()
    if sizes:
        def get_cb(n, what):
            return checkerboard(n, seeds.get(what, 100 + n), dtype)
        params["checkerboard"] = run_dataset("checkerboard", sizes, get_cb, args, rows)
    if cov_sizes:
        if args.covtype:
            cov, name, held = CovtypeRows(args.covtype, dtype), "covtype", {}

            def get_cov(n, what):
                if what == "tune":  # tuning and validation rows share one scaling
                    Xa, ya = cov.take(2 * n)
                    Xa = scale01(Xa)[0]
                    held["val"] = (Xa[n:], ya[n:])
                    return Xa[:n], ya[:n]
                if what == "val":
                    return held.pop("val")
                return cov.take(n)
        else:
            name = "covtype-like"

            def get_cov(n, what):
                return covtype_like(n, seeds.get(what, 100 + n), dtype)
        params[name] = run_dataset(name, cov_sizes, get_cov, args, rows)
    total = time.perf_counter() - t0

    cols = ["data", "m", "method", "gamma", "C", "test_error", "n_sv", "kernel_evals",
            "fit_seconds", "predict_seconds", "peak_rss_bytes", "skipped"]
    print()
    print_table(rows, cols)
    tgt = target(rows)
    if tgt:
        print(f"\nTarget at m={tgt['m']:,} (Checkerboard): error gap "
              f"{tgt['error_gap_points']:+.2f} points (<= 0.5), GS-SVM/SVC fit time "
              f"{tgt['time_ratio']:.2f} (<= 0.33): {'MET' if tgt['met'] else 'NOT MET'}")
    payload = {"benchmark": "greedy", "device": device, "dtype": dtype.name,
               "machine": machine_info(device), "sizes": sizes, "covtype_sizes": cov_sizes,
               "covtype_path": args.covtype, "n_test": args.n_test, "tune_m": args.tune_m,
               "batch": args.batch, "blas_threads": args.threads, "params": params,
               "target": tgt, "results": rows,
               "total_seconds": total, "peak_rss_process_bytes": peak_rss_bytes()}
    out = write_results(args.out or f"greedy_{device}", payload)
    print(f"results: {out} ({total:.0f}s)")
    return payload


if __name__ == "__main__":
    main()
