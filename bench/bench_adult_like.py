"""Issue 15, target 2: an Adult-like sparse binary data set, svmgpu against scikit-learn's SVC in
the same run, clean and with 20 % of the training labels flipped.

The data (no network here, so no real a9a): Covtype's rows (``--covtype PATH``) as 124 binary
one-hot features, as LIBSVM's a9a encodes Adult: the 44 binary columns (wilderness area, soil
type) plus each of the 10 numeric columns cut into 8 quantile bins (one-hot), so every row has 12
ones; class 2 (the most frequent) against the rest. a9a's sizes: 32,561 training and 16,281 test
rows, drawn from Covtype by a fixed seed. X is a SciPy CSR matrix (9.7 % nonzero).

Methods, same γ and C for all (γ and C tuned once for SVC-sized problems on a validation split
of the training rows, below): svmgpu UniSVC squared hinge (Newton) and truncated squared hinge
(robust, a = 2) at rank r; svmgpu ReducedSVC; sklearn ``SVC`` (hinge, libsvm). Each fit runs in
this process, timed with ``time.perf_counter``; the JSON records the machine and load average.

Usage: python bench/bench_adult_like.py --covtype ../shared/data/covtype.data.gz
       [--rank 1000] [--gamma 0.03] [--C 1.0] [--flip 0.2] [--repeats 1]
       [--out bench/results/x.json]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _cases import adult_like
from _common import machine_info, print_table, repeat_timed, timing_fields, write_results


def timed_fit(make, X, y, Xt, yt, repeats=1):
    """Fit a fresh ``make()`` ``repeats`` times (median, min and max recorded), then predict
    the test rows once with the last fit."""
    est, fit = repeat_timed(lambda: make().fit(X, y), repeats)
    pred, predict = repeat_timed(lambda: est.predict(Xt))
    return est, {**timing_fields("fit_seconds", fit), **timing_fields("predict_seconds", predict),
                 "test_accuracy": float(np.mean(pred == yt))}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--covtype", required=True)
    ap.add_argument("--rank", type=int, default=1000)
    ap.add_argument("--gamma", type=float, default=None, help="default: tuned on a validation split")
    ap.add_argument("--C", type=float, default=None, help="default: tuned on a validation split")
    ap.add_argument("--flip", type=float, default=0.2)
    ap.add_argument("--skip-svc", action="store_true")
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits per method (median, min and max recorded)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from sklearn.svm import SVC

    from svmgpu import ReducedSVC, UniSVC

    info = machine_info()
    X, y, Xt, yt = adult_like(args.covtype)
    print(f"data: {X.shape[0]:,} train / {Xt.shape[0]:,} test, {X.shape[1]} binary features, "
          f"{X.nnz / np.prod(X.shape):.1%} nonzero, {np.mean(y > 0):.1%} positive", flush=True)
    gamma, C = args.gamma, args.C
    tuning = []
    if gamma is None or C is None:  # a small grid on 8,000 / 4,000 rows of the training set
        Xa, ya, Xv, yv = X[:8000], y[:8000], X[8000:12000], y[8000:12000]
        for g in (0.003, 0.01, 0.03, 0.1):
            for c in (1.0, 10.0, 100.0, 1000.0):
                _, r = timed_fit(lambda g=g, c=c: UniSVC(C=c, gamma=g, rank=args.rank,
                                                         random_state=0), Xa, ya, Xv, yv)
                tuning.append({"gamma": g, "C": c, "val_accuracy": r["test_accuracy"]})
        best = max(tuning, key=lambda t: t["val_accuracy"])
        gamma, C = best["gamma"], best["C"]
        print(f"tuned on a validation split: gamma={gamma}, C={C} "
              f"({best['val_accuracy']:.4f})", flush=True)
    rng = np.random.default_rng(1)
    y_noisy = np.where(rng.random(y.shape[0]) < args.flip, -y, y)
    methods = [
        ("svmgpu UniSVC squared_hinge", lambda: UniSVC(C=C, gamma=gamma, rank=args.rank,
                                                       random_state=0)),
        ("svmgpu UniSVC truncated_squared_hinge",
         lambda: UniSVC(loss="truncated_squared_hinge", C=C, gamma=gamma, rank=args.rank,
                        random_state=0)),
        ("svmgpu ReducedSVC squared_hinge", lambda: ReducedSVC(C=C, gamma=gamma, rank=args.rank,
                                                               random_state=0)),
    ]
    if not args.skip_svc:
        methods.append(("sklearn SVC (libsvm, dense X)",
                        lambda: _Densify(SVC(C=C, gamma=gamma, cache_size=2000))))
    rows = []
    for labels, yy in (("clean", y), (f"{args.flip:.0%} flipped", y_noisy)):
        for name, make in methods:
            _, r = timed_fit(make, X, yy, Xt, yt, args.repeats)
            rows.append({"labels": labels, "method": name, **r})
            print(rows[-1], flush=True)
    for lab in {r["labels"] for r in rows}:
        svc = [r for r in rows if r["labels"] == lab and r["method"].startswith("sklearn")]
        for r in rows:
            if svc and r["labels"] == lab:
                r["svc_fit_ratio"] = svc[0]["fit_seconds"] / r["fit_seconds"]
    print_table(rows, ["labels", "method", "fit_seconds", "predict_seconds", "test_accuracy",
                       "svc_fit_ratio"])
    info["loadavg_at_end"] = list(os.getloadavg())
    payload = {"benchmark": "adult_like", "machine": info,
               "data": {"source": "Covtype rows as a9a-style one-hot features (this script)",
                        "n_train": X.shape[0], "n_test": Xt.shape[0], "n_features": X.shape[1],
                        "density": X.nnz / np.prod(X.shape)},
               "params": {"gamma": gamma, "C": C, "rank": args.rank, "flip": args.flip},
               "tuning": tuning, "rows": rows}
    path = write_results(args.out or "adult_like_cpu", payload)
    print(f"wrote {path}")


class _Densify:
    """SVC on the dense copy of X (libsvm's sparse path is slower on 124 columns)."""

    def __init__(self, est):
        self.est = est

    def fit(self, X, y):
        self.est.fit(X.toarray(), y)
        return self

    def predict(self, X):
        return self.est.predict(X.toarray())


if __name__ == "__main__":
    main()
