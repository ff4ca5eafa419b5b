"""Issue 28: the partitioned SVC on Covtype against the k-means + scikit-learn baseline.

DC-SVM's set-up (Hsieh, Si and Dhillon 2014): Covtype, class 2 against the rest, an 80/20
split (464,810 / 116,202 rows of the permutation of seed 0), features scaled to [0, 1],
C = 32, γ = 32 (the exact SVM reaches 96.15 %). In the same run:

* ``svmgpu.SVC(C=32, gamma=32)`` with its defaults (``solver="auto"`` takes the partitioned
  path there), and with each ``--region-rows`` and ``--overlap`` (``region_overlap``);
* the baseline of the issue: scikit-learn's ``MiniBatchKMeans`` into k regions, ``SVC(C=32,
  gamma=32)`` per region, each test row predicted by its region's model, for each ``--k``.

Fit and predict seconds, test accuracy, regions and support vectors; one fit each (the fits
take tens of seconds). ``--classes 7`` takes Covtype's 7 classes (one-vs-one in every region,
in both). ``--device cuda`` runs svmgpu on the GPU (the baseline stays on the CPU).
``--dask-workers N`` also fits the default on a ``LocalCluster`` of N worker processes (one
thread each), X persisted on the workers before the clock starts.

Usage: python bench/bench_partition.py [--covtype PATH] [--region-rows auto,4000] [--overlap auto,0]
       [--k 256,128] [--classes 2] [--device cpu] [--seeds 1,2] [--dask-workers 0]
       [--out partition_cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from _cases import COVTYPE_DEFAULT_PATH, DCSVM_COVTYPE, DCSVM_SPLIT, covtype_dcsvm_split
from _common import machine_info, print_table, sync, write_results


def _svmgpu(X, y, Xt, yt, region_rows, overlap, device, seed=None):
    from svmgpu import SVC

    clf = SVC(C=DCSVM_COVTYPE["C"], gamma=DCSVM_COVTYPE["gamma"], device=device,
              region_rows=region_rows, region_overlap=overlap, random_state=seed)
    t0 = time.perf_counter()
    clf.fit(X, y)
    sync(device)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = np.asarray(clf.predict(Xt))
    sync(device)
    seeded = "" if seed is None else f", random_state={seed}"
    return {"method": f"svmgpu SVC(region_rows={region_rows!r}, region_overlap={overlap!r}"
                      f"{seeded})",
            "solver": clf.solver_,
            "fit_seconds": fit, "predict_seconds": time.perf_counter() - t0,
            "test_accuracy": float(np.mean(pred == yt)),
            "regions": int(clf.region_centers_.shape[0]) if clf.solver_ == "partition" else None,
            "n_support": int(clf.support_.shape[0]), "fit_timings": clf.fit_timings_}


def _svmgpu_dask(X, y, Xt, yt, workers):
    """The default fit on a ``workers``-process LocalCluster (one thread each), X and y as
    Dask arrays persisted on the workers before the clock starts; prediction of the test rows
    as a Dask array too."""
    import dask.array as da
    import distributed

    from svmgpu import SVC

    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        chunk = -(-X.shape[0] // (4 * workers))
        Xd = da.from_array(X, chunks=(chunk, X.shape[1])).persist()
        yd = da.from_array(y, chunks=chunk).persist()
        Xtd = da.from_array(Xt, chunks=(-(-Xt.shape[0] // (4 * workers)), Xt.shape[1])).persist()
        distributed.wait([Xd, yd, Xtd])
        clf = SVC(C=DCSVM_COVTYPE["C"], gamma=DCSVM_COVTYPE["gamma"])
        t0 = time.perf_counter()
        clf.fit(Xd, yd)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = np.asarray(clf.predict(Xtd).compute())
        predict = time.perf_counter() - t0
    return {"method": f"svmgpu SVC() on Dask, LocalCluster {workers} workers x 1 thread",
            "solver": clf.solver_, "fit_seconds": fit, "predict_seconds": predict,
            "test_accuracy": float(np.mean(pred == yt)),
            "regions": int(clf.region_centers_.shape[0]), "n_support": int(clf.support_.shape[0]),
            "fit_timings": clf.fit_timings_}


def _baseline(X, y, Xt, yt, k):
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.svm import SVC

    t0 = time.perf_counter()
    km = MiniBatchKMeans(k, random_state=0, n_init=1, batch_size=4096).fit(X)
    models, n_sv = {}, 0
    for c in range(k):
        idx = np.flatnonzero(km.labels_ == c)
        if idx.size == 0:
            continue
        if np.unique(y[idx]).size < 2:
            models[c] = y[idx[0]]
            continue
        models[c] = SVC(C=DCSVM_COVTYPE["C"], gamma=DCSVM_COVTYPE["gamma"]).fit(X[idx], y[idx])
        n_sv += int(models[c].support_.shape[0])
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    where = km.predict(Xt)
    pred = np.empty(len(yt))
    for c in np.unique(where):
        rows = np.flatnonzero(where == c)
        m = models.get(c, 1.0)
        pred[rows] = m.predict(Xt[rows]) if hasattr(m, "predict") else m
    return {"method": f"MiniBatchKMeans(k={k}) + sklearn SVC per region", "solver": None,
            "fit_seconds": fit, "predict_seconds": time.perf_counter() - t0,
            "test_accuracy": float(np.mean(pred == yt)), "regions": k, "n_support": n_sv}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--covtype", default=str(COVTYPE_DEFAULT_PATH))
    ap.add_argument("--region-rows", default="auto,4000")
    ap.add_argument("--overlap", default="auto,0",
                    help="region_overlap values, each with every --region-rows")
    ap.add_argument("--k", default="256,128")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--classes", type=int, choices=[2, 7], default=2)
    ap.add_argument("--seeds", default="",
                    help="also fit the defaults with each of these random_state values")
    ap.add_argument("--dask-workers", type=int, default=0,
                    help="also fit the default on a LocalCluster of this many workers")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    info = machine_info(args.device)
    X, y, Xt, yt = covtype_dcsvm_split(args.covtype, binary=args.classes == 2)
    rows = []
    for rr in [r for r in args.region_rows.split(",") if r]:
        for ov in [o for o in args.overlap.split(",") if o]:
            rows.append(_svmgpu(X, y, Xt, yt, rr if rr == "auto" else int(rr),
                                ov if ov == "auto" else float(ov), args.device))
            print(rows[-1], flush=True)
    for seed in [int(v) for v in args.seeds.split(",") if v]:
        rows.append(_svmgpu(X, y, Xt, yt, "auto", "auto", args.device, seed=seed))
        print(rows[-1], flush=True)
    if args.dask_workers:
        rows.append(_svmgpu_dask(X, y, Xt, yt, args.dask_workers))
        print(rows[-1], flush=True)
    for k in [int(k) for k in args.k.split(",") if k]:
        rows.append(_baseline(X, y, Xt, yt, k))
        print(rows[-1], flush=True)
    print_table(rows, ["method", "regions", "fit_seconds", "predict_seconds", "test_accuracy",
                       "n_support"])
    out = args.out or ("partition_cuda" if args.device.startswith("cuda") else "partition_cpu")
    out += "_7class" if args.classes == 7 and not args.out else ""
    path = write_results(out, {
        "benchmark": "partitioned SVC on Covtype vs k-means + sklearn SVC per region",
        "split": DCSVM_SPLIT, "classes": args.classes, "C": DCSVM_COVTYPE["C"],
        "gamma": DCSVM_COVTYPE["gamma"],
        "machine": info, "repeats": 1, "command": " ".join(sys.argv),
        "loadavg_at_end": list(os.getloadavg()), "results": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
