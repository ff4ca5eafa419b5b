"""Peer benchmark: svmgpu against scikit-learn, ThunderSVM and cuML on the same data, same run.

Data: Checkerboard (uniform points in the unit square, label = parity of the 4x4 cell), training
sizes ``--sizes`` (default 10^4 ... 10^6; ``--quick``: 2,000 and 5,000) and one test set of
``--n-test`` points (default min(50,000, largest size)) drawn independently.

Hyper-parameters are the same for every method at a given size: RBF width γ = 16, loss weight
``C = 1/(λ m)`` with UniSVM's λ = 1e-7 (``--lam``), and rank / number of components /
reduced-set size ``--rank`` = 300 for the low-rank methods.

Methods
-------
svmgpu (on ``--device``)
    UniSVC (Nyström rank r) with the squared hinge and the truncated squared hinge;
    ReducedSVC (r random centres, Newton) and GreedySVC (GS-SVM, no C) when importable.
scikit-learn (CPU)
    ``SVC`` (libsvm, hinge loss; skipped for n > ``--svc-max-n`` = 50,000);
    ``Nystroem`` (same γ, r components) + ``LinearSVC`` (squared hinge, no intercept: the same
    objective as UniSVC's squared hinge on Nyström features).
ThunderSVM (CPU package ``thundersvm``) and cuML (``cuml.svm.SVC``, on CUDA only)
    when installed; otherwise the table says "not installed" (nothing is installed here).

Any peer (every method but UniSVC) whose previous size took longer than ``--cap`` seconds
(default 120) is skipped at the larger sizes: the table says "skipped (cap)".

Recorded per fit: fit time, predict time (on the test set), test accuracy, and the peak resident
memory of the fit above what the process held before it (VmHWM after a reset; GPU memory not
included). Timings are wall clock on a possibly shared machine: the load average before and
after the run is recorded with them.

Writes ``bench/results/compare_<device>.json`` and ``.md`` (``compare_<device>_quick.*`` with
``--quick``) and a plot ``.png`` (time and accuracy against n, log-x) when matplotlib is
importable.

Usage: python bench/compare.py [--quick] [--sizes 10000,100000] [--device auto|cpu|cuda]
       [--methods uni_sqh,uni_tsqh,reduced,greedy,svc,nystroem,thundersvm,cuml]
       [--n-test 50000] [--rank 300] [--gamma 16] [--lam 1e-7] [--cap 120] [--repeats 1]
       [--out NAME]
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
import traceback

import numpy as np
from _cases import CHECKERBOARD
from _common import (
    Unavailable,
    machine_info,
    peak_rss_bytes,
    repeat_timed,
    reset_peak,
    results_path,
    rss_bytes,
    thundersvm_class,
    timing_fields,
    write_results,
)

SIZES = [10_000, 30_000, 100_000, 300_000, 1_000_000]
QUICK_SIZES = [2_000, 5_000]

#: key -> (label, family). Family "svmgpu" rows of UniSVC are never capped.
METHODS = {
    "uni_sqh": ("svmgpu UniSVC squared_hinge", "svmgpu"),
    "uni_tsqh": ("svmgpu UniSVC truncated_squared_hinge", "svmgpu"),
    "reduced": ("svmgpu ReducedSVC squared_hinge", "svmgpu"),
    "greedy": ("svmgpu GreedySVC (GS-SVM)", "svmgpu"),
    "svc": ("sklearn SVC (libsvm)", "peer"),
    "nystroem": ("sklearn Nystroem + LinearSVC", "peer"),
    "thundersvm": ("ThunderSVM SVC (CPU)", "peer"),
    "cuml": ("cuML SVC (GPU)", "peer"),
}
UNCAPPED = {"uni_sqh", "uni_tsqh"}


# ------------------------------------------------------------------------------ methods
def _svmgpu_class(module, name):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise Unavailable(f"not available ({module}.{name}: {type(exc).__name__})") from None


def build(key, *, C, gamma, rank, device, dtype):
    """An object with ``fit(X, y)`` and ``predict(X)`` for method ``key`` and its parameters."""
    if key in ("uni_sqh", "uni_tsqh"):
        cls = _svmgpu_class("svmgpu.estimators.unisvm", "UniSVC")
        loss = "squared_hinge" if key == "uni_sqh" else "truncated_squared_hinge"
        return cls(loss=loss, C=C, gamma=gamma, rank=rank, device=device, dtype=dtype,
                   random_state=0)
    if key == "reduced":
        cls = _svmgpu_class("svmgpu.estimators.reduced", "ReducedSVC")
        return cls(loss="squared_hinge", C=C, gamma=gamma, rank=rank, device=device, dtype=dtype,
                   random_state=0)
    if key == "greedy":
        cls = _svmgpu_class("svmgpu.estimators.greedy", "GreedySVC")
        return cls(gamma=gamma, device=device, dtype=dtype)
    if key == "svc":
        from sklearn.svm import SVC

        return SVC(C=C, gamma=gamma, kernel="rbf", cache_size=2000)
    if key == "nystroem":
        from sklearn.kernel_approximation import Nystroem
        from sklearn.pipeline import make_pipeline
        from sklearn.svm import LinearSVC

        return make_pipeline(
            Nystroem(kernel="rbf", gamma=gamma, n_components=rank, random_state=0),
            LinearSVC(C=C, loss="squared_hinge", dual=False, fit_intercept=False, tol=1e-4,
                      max_iter=1000),
        )
    if key == "thundersvm":
        return thundersvm_class("SVC")(kernel="rbf", C=C, gamma=gamma)
    if key == "cuml":
        if not str(device).startswith("cuda"):
            raise Unavailable("needs CUDA (run with --device cuda)")
        try:
            from cuml.svm import SVC as CuSVC
        except ImportError:
            raise Unavailable("not installed") from None
        except Exception as exc:  # noqa: BLE001
            raise Unavailable(f"not usable ({type(exc).__name__})") from None
        return CuSVC(kernel="rbf", C=C, gamma=gamma)
    raise ValueError(f"unknown method {key!r}; valid: {', '.join(METHODS)}")


def _gpu_input(key, device):
    """Whether method ``key`` gets its data as CuPy arrays (svmgpu and cuML on CUDA)."""
    return str(device).startswith("cuda") and (METHODS[key][1] == "svmgpu" or key == "cuml")


def run_one(key, data, *, C, gamma, rank, device, dtype, repeats=1):
    X, y, Xt, yt, Xd, Xtd = data
    est = build(key, C=C, gamma=gamma, rank=rank, device=device, dtype=dtype)
    on_gpu = _gpu_input(key, device)
    Xf, Xp = (Xd, Xtd) if on_gpu else (X, Xt)
    dev = device if on_gpu else "cpu"
    base = rss_bytes()
    reset_peak()
    _, fit = repeat_timed(lambda: est.fit(Xf, y), repeats, dev)
    peak = peak_rss_bytes() - base
    pred, predict = repeat_timed(lambda: est.predict(Xp), 1, dev)
    if hasattr(pred, "get"):
        pred = pred.get()
    acc = float(np.mean(np.asarray(pred).reshape(-1) == yt))
    row = {**timing_fields("fit_seconds", fit), **timing_fields("predict_seconds", predict),
           "accuracy": acc, "peak_fit_bytes": int(peak), "status": "ok"}
    for attr in ("n_iter_", "solver_"):
        v = getattr(est, attr, None)
        if v is not None:
            row[attr.rstrip("_")] = v if isinstance(v, str) else int(np.sum(v))
    n_sv = getattr(est, "support_", None)
    if key in ("svc", "greedy", "thundersvm", "cuml") and n_sv is not None:
        row["n_support"] = int(len(n_sv))
    return row


# ------------------------------------------------------------------------------ output
def _cell(r):
    if r["status"] != "ok":
        return r["status"]
    return f"{100 * r['accuracy']:.2f} % / {r['fit_seconds']:.3g} s"


def markdown(payload) -> str:
    rows = payload["results"]
    sizes = payload["sizes"]
    methods = [k for k in payload["methods"]]
    lines = [
        f"# Peer comparison on Checkerboard ({payload['device']})",
        "",
        f"γ = {payload['gamma']:g}, C = 1/(λ m) with λ = {payload['lambda']:g}, rank / components "
        f"= {payload['rank']}, test set {payload['n_test']:,} points, {payload['dtype']}. "
        f"Machine: {payload['machine'].get('cpu_model', payload['machine'].get('processor'))}, "
        f"{payload['machine'].get('cpu_count')} cores"
        + (f", GPU {payload['machine']['gpu']}" if "gpu" in payload["machine"] else "")
        + f"; load average {payload['load_before']:.1f} before, {payload['load_after']:.1f} after "
        "(shared machine: timings are noisy). Generated by `python bench/compare.py"
        + (" --quick" if payload.get("quick") else "") + "`.",
        "",
        "Test accuracy / fit time:",
        "",
        "| method | " + " | ".join(f"n = {n:,}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for k in methods:
        cells = []
        for n in sizes:
            r = next((r for r in rows if r["method"] == k and r["n"] == n), None)
            cells.append("-" if r is None else _cell(r))
        lines.append(f"| {METHODS[k][0]} | " + " | ".join(cells) + " |")
    lines += ["", "Details:", "",
              "| n | C | method | fit (s) | predict (s) | accuracy (%) | peak fit RSS (MB) | notes |",
              "|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["status"] == "ok":
            notes = ", ".join(f"{k} {r[k]}" for k in ("solver", "n_iter", "n_support") if k in r)
            lines.append(
                f"| {r['n']:,} | {r['C']:.4g} | {METHODS[r['method']][0]} | {r['fit_seconds']:.3g} | "
                f"{r['predict_seconds']:.3g} | {100 * r['accuracy']:.2f} | "
                f"{r['peak_fit_bytes'] / 1e6:.0f} | {notes} |")
        else:
            lines.append(f"| {r['n']:,} | {r['C']:.4g} | {METHODS[r['method']][0]} | - | - | - | - "
                         f"| {r['status']} |")
    return "\n".join(lines) + "\n"


def plot(payload, path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not importable: no plot (pip install matplotlib)")
        return False
    rows = payload["results"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for k in payload["methods"]:
        ok = sorted((r for r in rows if r["method"] == k and r["status"] == "ok"),
                    key=lambda r: r["n"])
        if not ok:
            continue
        n = [r["n"] for r in ok]
        a1.plot(n, [r["fit_seconds"] for r in ok], "o-", label=METHODS[k][0])
        a2.plot(n, [100 * r["accuracy"] for r in ok], "o-", label=METHODS[k][0])
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("training points n")
    a1.set_ylabel("fit time (s)")
    a1.set_title(f"fit time ({payload['device']})")
    a2.set_xscale("log")
    a2.set_xlabel("training points n")
    a2.set_ylabel("test accuracy (%)")
    a2.set_title("test accuracy")
    a2.legend(fontsize=8)
    for a in (a1, a2):
        a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ------------------------------------------------------------------------------ main
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=None,
                    help="comma-separated training sizes (default " + ",".join(map(str, SIZES)) + ")")
    ap.add_argument("--quick", action="store_true", help="sizes 2000,5000 (smoke test)")
    ap.add_argument("--n-test", type=int, default=None,
                    help="test points (default min(50000, largest size))")
    ap.add_argument("--device", default="auto", help="device of the svmgpu estimators")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--rank", type=int, default=CHECKERBOARD.rank)
    ap.add_argument("--gamma", type=float, default=CHECKERBOARD.gamma)
    ap.add_argument("--lam", type=float, default=CHECKERBOARD.lam, help="UniSVM's λ: C = 1/(λ m)")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated subset of " + ",".join(METHODS))
    ap.add_argument("--cap", type=float, default=120.0,
                    help="skip a peer at larger sizes once a fit took longer (s)")
    ap.add_argument("--svc-max-n", type=int, default=50_000, help="largest n for sklearn SVC")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits per method and size (median, min and max recorded)")
    ap.add_argument("--out", default=None, help="result name (default compare_<device>[_quick])")
    ap.add_argument("--no-plot", action="store_true")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from svmgpu.backend import get_device, to_device
    from svmgpu.datasets import make_checkerboard

    try:
        device = get_device(args.device)
    except (ValueError, RuntimeError) as exc:
        raise SystemExit(f"compare.py: error: {exc}") from None
    if args.sizes:
        try:
            sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
        except ValueError:
            raise SystemExit(f"compare.py: error: bad --sizes {args.sizes!r}") from None
    else:
        sizes = QUICK_SIZES if args.quick else SIZES
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SystemExit(f"compare.py: error: unknown method(s) {unknown}; valid: {list(METHODS)}")
    n_test = args.n_test or min(50_000, max(sizes))
    dev_name = "cuda" if device.kind == "cuda" else "cpu"
    name = args.out or f"compare_{dev_name}" + ("_quick" if args.quick else "")
    dtype = np.dtype(args.dtype)
    print(f"compare: sizes {sizes}, test {n_test:,}, device {device}, methods {methods}")

    Xt, yt = make_checkerboard(n_test, dtype=dtype, random_state=args.seed + 10_000)
    Xtd = to_device(Xt, device) if device.kind == "cuda" else Xt
    load_before = os.getloadavg()[0]
    rows = []
    last_fit = {}  # method -> fit seconds at the previous size
    t_run = time.perf_counter()
    for n in sizes:
        X, y = make_checkerboard(n, dtype=dtype, random_state=args.seed + n)
        Xd = to_device(X, device) if device.kind == "cuda" else X
        data = (X, y, Xt, yt, Xd, Xtd)
        C = 1.0 / (args.lam * n)
        for key in methods:
            row = {"n": n, "method": key, "label": METHODS[key][0], "C": C, "gamma": args.gamma,
                   "rank": args.rank}
            prev = last_fit.get(key)
            if key == "svc" and n > args.svc_max_n:
                row["status"] = f"skipped (cap: n > {args.svc_max_n:,})"
            elif key not in UNCAPPED and prev is not None and prev > args.cap:
                row["status"] = f"skipped (cap: {prev:.0f} s > {args.cap:.0f} s before)"
            else:
                try:
                    row.update(run_one(key, data, C=C, gamma=args.gamma, rank=args.rank,
                                       device=str(device), dtype=dtype.name,
                                       repeats=args.repeats))
                    last_fit[key] = row["fit_seconds"]
                except Unavailable as exc:
                    row["status"] = str(exc)
                except MemoryError as exc:
                    row["status"] = f"failed: MemoryError ({str(exc)[:80]})"
                    last_fit[key] = float("inf")
                except Exception as exc:  # noqa: BLE001 - record and go on with the others
                    traceback.print_exc()
                    row["status"] = f"failed: {type(exc).__name__}: {str(exc)[:80]}"
            rows.append(row)
            if row["status"] == "ok":
                print(f"  n={n:>9,}  {row['label']:<42} fit {row['fit_seconds']:8.3f} s  "
                      f"predict {row['predict_seconds']:7.3f} s  acc {100 * row['accuracy']:6.2f} %",
                      flush=True)
            else:
                print(f"  n={n:>9,}  {row['label']:<42} {row['status']}", flush=True)
        del X, y, Xd, data
    payload = {
        "benchmark": "compare", "device": str(device), "dtype": dtype.name, "sizes": sizes,
        "n_test": n_test, "gamma": args.gamma, "lambda": args.lam, "rank": args.rank,
        "cap_seconds": args.cap, "svc_max_n": args.svc_max_n, "methods": methods,
        "quick": bool(args.quick), "machine": machine_info(str(device)),
        "load_before": load_before, "load_after": os.getloadavg()[0],
        "total_seconds": time.perf_counter() - t_run,
        "notes": ("C = 1/(lambda m) for every method at size m (SVC: hinge loss; "
                  "LinearSVC and UniSVC squared_hinge: the same objective on Nystroem features; "
                  "GreedySVC has no C). Peak fit RSS is VmHWM above the RSS before the fit."),
        "results": rows,
    }
    path = write_results(name, payload)
    md = results_path(name, ".md")
    md.write_text(markdown(payload))
    print()
    print(md.read_text())
    print("wrote", path, "and", md)
    if not args.no_plot:
        png = results_path(name, ".png")
        if plot(payload, png):
            print("wrote", png)
    return payload


if __name__ == "__main__":
    main()
