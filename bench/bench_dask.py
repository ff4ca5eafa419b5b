"""Benchmark: UniSVC on Dask (issue 14): the distributed fit against the in-memory fit.

Cases (squared hinge, RBF γ = 16, r = 300, C = 1/(λ m) with λ = 1e-7, as bench_unisvm.py):

- ``overhead``: 1M Checkerboard points in memory, fitted in memory (one process, all cores) and
  on a ``distributed.LocalCluster`` of ``--workers`` processes (one thread each) from the same
  points in ``--chunk``-row chunks. Same landmarks, so the same model (coefficients compared).
- ``scale``: 10⁷ (``--scale-sizes``) points generated on the workers
  (``make_checkerboard(chunks=...)``: no process holds them all), fitted with float32
  features; accuracy on 200,000 test points, peak resident memory of each worker (VmHWM).
- with ``--device cuda``: the same on CuPy chunks, on a ``dask_cuda.LocalCUDACluster`` (one
  worker per GPU) when dask-cuda is installed, else on a one-worker LocalCluster; the in-memory
  CuPy fit in the same run.

Usage: python bench/bench_dask.py [--cases overhead,scale] [--workers 2] [--device cpu|cuda]
       [--sizes 1000000] [--scale-sizes 10000000] [--chunk 250000] [--repeats 1] [--quick]
"""

from __future__ import annotations

import sys

from _cases import CHECKERBOARD
from _common import (
    Timer,
    answer_spec,
    case_parser,
    default_name,
    machine_info,
    peak_rss_bytes,
    print_table,
    run_specs,
    write_results,
)

GAMMA, RANK, M_TEST = CHECKERBOARD.gamma, CHECKERBOARD.rank, CHECKERBOARD.m_test


def _worker_peak():
    from svmgpu.backend import peak_host_bytes

    return peak_host_bytes() or 0


def _cluster(spec):
    """A local cluster for the spec's device: ``(cluster, client)``."""
    from distributed import Client, LocalCluster

    if spec["device"].startswith("cuda"):
        try:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(n_workers=1, threads_per_worker=1,
                                       dashboard_address=":0")
            return cluster, Client(cluster), "dask_cuda.LocalCUDACluster(n_workers=1)"
        except Exception as exc:  # noqa: BLE001 - not installed, or not working here
            print(f"dask_cuda: {type(exc).__name__}: {exc}; a LocalCluster instead",
                  file=sys.stderr)
            spec = {**spec, "workers": 1}
    cluster = LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                           dashboard_address=":0", memory_limit=0)
    return cluster, Client(cluster), f"LocalCluster(n_workers={spec['workers']}, threads=1)"


def run_one(spec: dict) -> dict:
    import numpy as np

    from svmgpu import UniSVC
    from svmgpu.backend import to_device, to_numpy
    from svmgpu.datasets import make_checkerboard

    m, dtype, device = spec["m"], spec["dtype"], spec["device"]
    cuda = device.startswith("cuda")
    out = dict(spec)
    C = CHECKERBOARD.C(m)
    out["C"] = C
    Xt, yt = make_checkerboard(M_TEST, random_state=1, dtype=dtype)
    est = UniSVC(loss="squared_hinge", C=C, gamma=GAMMA, rank=RANK, random_state=0,
                 dtype=dtype, device=device)
    if spec["impl"] == "memory":
        if spec.get("data") == "workers":  # the same points as the Dask case, in one process
            X, y = (a.compute(scheduler="threads") for a in make_checkerboard(
                m, random_state=0, dtype=dtype, chunks=spec["chunk"]))
        else:
            X, y = make_checkerboard(m, random_state=0, dtype=dtype)
        if cuda:
            X, Xt = to_device(X, device), to_device(Xt, device)
        with Timer(device) as t:
            est.fit(X, y)
        pred = to_numpy(est.predict(Xt))
        out["peak_rss_bytes"] = peak_rss_bytes()
    else:
        import dask.array as da

        cluster, client, out["cluster"] = _cluster(spec)
        with cluster, client:
            if spec["data"] == "workers":
                X, y = make_checkerboard(m, random_state=0, dtype=dtype, chunks=spec["chunk"])
            else:
                Xh, yh = make_checkerboard(m, random_state=0, dtype=dtype)
                X = da.from_array(Xh, chunks=(spec["chunk"], 2))
                y = da.from_array(yh, chunks=spec["chunk"])
            if cuda:
                import cupy

                X = X.map_blocks(cupy.asarray)
                y = y.map_blocks(cupy.asarray)
                Xt = to_device(Xt, device)
            with Timer() as t:
                est.fit(X, y)
            peaks = client.run(_worker_peak)
            out["worker_peak_rss_bytes"] = sorted(peaks.values())
            out["n_workers"] = len(peaks)
        pred = to_numpy(est.predict(Xt))
        out["client_peak_rss_bytes"] = peak_rss_bytes()
    out["fit_seconds"] = t.seconds
    out["n_iter"] = int(est.n_iter_)
    out["converged"] = bool(est.converged_)
    out["rank_used"] = int(est.factor_.rank)
    out["solver_seconds"] = est.models_[0]["timings"]["total"]
    out["coef"] = [float(v) for v in to_numpy(est.coef_)[:8]]
    out["coef_norm"] = float(np.linalg.norm(to_numpy(est.coef_)))
    out["test_accuracy"] = float(np.mean(pred == yt))
    return out


def main():
    ap = case_parser(__doc__)
    ap.add_argument("--cases", default="overhead,scale")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sizes", default="1000000")
    ap.add_argument("--scale-sizes", default="10000000")
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--scale-chunk", type=int, default=1_000_000)
    ap.add_argument("--dtype", default="float64", help="dtype of the overhead case")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if answer_spec(args, run_one):
        return
    cases = args.cases.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    big = [int(s) for s in args.scale_sizes.split(",")]
    chunk, big_chunk = args.chunk, args.scale_chunk
    if args.quick:
        sizes, big, chunk, big_chunk = [20_000], [100_000], 5_000, 25_000
    base = {"device": args.device, "workers": args.workers}
    specs = []
    if "overhead" in cases:
        for m in sizes:
            specs.append({**base, "case": "overhead", "impl": "memory", "m": m,
                          "dtype": args.dtype})
            specs.append({**base, "case": "overhead", "impl": "dask", "m": m, "chunk": chunk,
                          "data": "client", "dtype": args.dtype})
    if "scale" in cases:
        for m in big:
            if args.device.startswith("cuda"):  # the in-memory CuPy fit of the same points
                specs.append({**base, "case": "scale", "impl": "memory", "m": m,
                              "chunk": big_chunk, "data": "workers", "dtype": "float32"})
            specs.append({**base, "case": "scale", "impl": "dask", "m": m, "chunk": big_chunk,
                          "data": "workers", "dtype": "float32"})
    cols = ["case", "impl", "device", "dtype", "m", "n_iter", "fit_seconds", "solver_seconds",
            "test_accuracy", "peak_rss_bytes", "worker_peak_rss_bytes"]
    rows = run_specs(__file__, specs, cols, args.repeats)
    for r in rows:  # the Dask fit against the in-memory fit of the same points
        mem = next((q for q in rows if q["impl"] == "memory" and q["m"] == r["m"]
                    and q["case"] == r["case"]), None)
        if r["impl"] == "dask" and mem is not None:
            r["time_ratio_to_memory"] = r["fit_seconds"] / mem["fit_seconds"]
            r["accuracy_minus_memory"] = r["test_accuracy"] - mem["test_accuracy"]
            r["coef_max_diff"] = max(abs(a - b) for a, b in zip(r["coef"], mem["coef"]))
    print()
    print_table(rows, cols + ["time_ratio_to_memory", "accuracy_minus_memory", "coef_max_diff"])
    payload = {"benchmark": "dask", "machine": machine_info(args.device),
               "setup": {**CHECKERBOARD.describe(), "loss": "squared_hinge", "workers": args.workers,
                         "threads_per_worker": 1,
                         "data": "checkerboard 4x4 in the unit square, test 200,000"},
               "targets": {"overhead": "Dask fit <= 1.5x the in-memory fit, same accuracy",
                           "scale": "1e7 points: accuracy >= 99.9%, worker peak <= budget"},
               "results": rows}
    name = args.out or default_name("dask", args.device, args.quick, gpu="cuda")
    print("wrote", write_results(name, payload))


if __name__ == "__main__":
    main()
