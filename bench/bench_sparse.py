"""Sparse text-like input: svmgpu's ``SVC`` against scikit-learn's ``SVC`` in the same run, on
rows with a few nonzeros among many features (issue 27: sparse input; session 53: the
support vectors of a sparse fit kept sparse).

The data (no network here, so no real text corpus): ``m`` rows of ``d`` features with at most
``nnz`` nonzeros each at columns drawn by Zipf's law (column k with probability ∝ 1 / k, as word
frequencies; values uniform in [0, 1)), labels from a noisy linear rule on them; the test rows
are drawn the same way. Cases: 2,000 (+ 3,000 test) rows of 100,000 features with 50 words
(43 nonzeros a row on average, density 0.04 %) and 12,000 (+ 3,000) rows of 3,000 features
with 20 (17, 0.57 %). Both libraries get the CSR matrices; both kernels (RBF with ``gamma="scale"``, and
linear) at C = 1.

Each row of the JSON: fit and predict seconds (median of ``--repeats``), test accuracy, the
bytes of ``support_vectors_`` (a CSR matrix: its three arrays) and the growth of the
process's peak resident memory during the fit (``VmHWM`` reset before it). The JSON records
the machine and its load average.

Usage: python bench/bench_sparse.py [--repeats 3] [--skip-sklearn] [--out name]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import (
    machine_info,
    peak_rss_bytes,
    print_table,
    repeat_timed,
    reset_peak,
    rss_bytes,
    timing_fields,
    timing_stats,
    write_results,
)

CASES = {"text_2000x100000": (2000, 100_000, 50), "text_12000x3000": (12_000, 3000, 20)}
TEST_ROWS = 3000


def text_like(m, d, nnz, seed=0):
    """``(X, y, Xt, yt)``: m training and :data:`TEST_ROWS` test rows of d features, at most
    nnz nonzeros each (CSR; nnz words drawn by Zipf's law, a repeated one's values summed),
    labels ±1 of a noisy linear rule."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = m + TEST_ROWS
    p = 1.0 / np.arange(1, d + 1)  # (Zipf's law: the k-th most frequent word's share ∝ 1 / k)
    p /= p.sum()
    cols = rng.choice(d, size=(n, nnz), p=p)  # (a word drawn twice in a row: counts summed)
    X = sp.csr_matrix((rng.random(n * nnz), cols.ravel(), np.arange(0, n * nnz + 1, nnz)),
                      shape=(n, d))
    X.sum_duplicates()
    f = X @ rng.standard_normal(d)
    y = np.where(f - np.median(f) + 0.2 * np.std(f) * rng.standard_normal(n) > 0, 1, -1)
    return X[:m], y[:m], X[m:], y[m:]


def stored_bytes(Z) -> int:
    """Bytes of an array, or of a sparse matrix's data, indices and pointers."""
    if hasattr(Z, "indptr"):
        return int(Z.data.nbytes + Z.indices.nbytes + Z.indptr.nbytes)
    return int(Z.nbytes)


def run(make, X, y, Xt, yt, repeats):
    """One method on one case: the row of the table."""
    est, fit, peak = None, [], []
    for _ in range(max(1, repeats)):
        reset_peak()
        before = rss_bytes()
        est, stats = repeat_timed(lambda: make().fit(X, y))
        fit.extend(stats["seconds"])
        peak.append(peak_rss_bytes() - before)
    pred, predict = repeat_timed(lambda: est.predict(Xt), repeats)
    Z = est.support_vectors_
    return {**timing_fields("fit_seconds", timing_stats(fit)),
            **timing_fields("predict_seconds", predict),
            "test_accuracy": float(np.mean(pred == yt)), "n_support": int(Z.shape[0]),
            "support_vectors_sparse": hasattr(Z, "indptr"), "support_vectors_bytes": stored_bytes(Z),
            "fit_peak_rss_growth_bytes": int(max(peak)),
            "solver": getattr(est, "solver_", None)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", default="sparse_cpu")
    args = ap.parse_args()
    from sklearn.svm import SVC as SkSVC

    import svmgpu

    info = machine_info()
    rows = []
    for case in args.cases:
        X, y, Xt, yt = text_like(*CASES[case])
        print(f"{case}: {X.shape[0]:,} × {X.shape[1]:,}, {X.nnz / np.prod(X.shape):.3%} nonzero",
              flush=True)
        for kernel in ("rbf", "linear"):
            methods = [(f"svmgpu SVC(kernel={kernel!r})", lambda k=kernel: svmgpu.SVC(kernel=k))]
            if not args.skip_sklearn:
                methods.append((f"sklearn SVC(kernel={kernel!r})", lambda k=kernel: SkSVC(kernel=k)))
            for name, make in methods:
                row = {"data": case, "method": name, **run(make, X, y, Xt, yt, args.repeats)}
                rows.append(row)
                print_table([row], ["data", "method", "fit_seconds", "predict_seconds",
                                    "test_accuracy", "support_vectors_bytes",
                                    "fit_peak_rss_growth_bytes"])
    info["loadavg_at_end"] = list(__import__("os").getloadavg())
    print("wrote", write_results(args.out, {"machine": info, "results": rows,
                                             "repeats": args.repeats}))


if __name__ == "__main__":
    main()
