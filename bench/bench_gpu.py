"""GPU benchmark (issue 16): device-resident speed against the physical limit.

Parts (``--parts``, comma-separated; each runs on its own and records an error instead of
stopping the others):

``ceilings``      measured limits of this machine: device-to-device copy bandwidth, host-to-device
                  bandwidth (pageable NumPy input), matrix-product rates (float32, float64).
``checkerboard``  UniSVC squared hinge, γ = 16, r = 300, C = 1/(λm), λ = 1e-7, m = 1M and 3M,
                  200,000 test points: end to end (host data in, host predictions out) and the
                  split transfer / features / solve / predict, float32 and float64, beside the
                  roofline floor of each phase (bytes / bandwidth, flops / rate).
``covtype``       UniSVM's Covtype set-up (class 2 vs rest, 381,012 train / 200,000 test,
                  features scaled to [0, 1], γ = 2⁻², λ = 1e-8, r = 1000).
``frontier``      Covtype at rank 5,000 / 10,000 / 20,000 (float32 features, float64 r×r), γ and C
                  tuned on a validation split of the training set.
``syncs``         device→host transfers per solver iteration (CUPTI through torch.profiler).
``torch``         the solver core on PyTorch CUDA tensors through array-api-compat.
``cpu``           the checkerboard and Covtype set-ups with NumPy on this machine's CPU cores.

Usage: python bench/bench_gpu.py --parts ceilings,checkerboard --covtype PATH [--out DIR]
"""

# ruff: noqa: B023 - the timed closures run at once, inside the loop iteration that made them

from __future__ import annotations

import argparse
import time
import traceback
from pathlib import Path

import numpy as np
from _cases import CHECKERBOARD, COVTYPE, covtype_split
from _common import machine_info, print_table, repeat_timed, timing_fields, timing_stats, write_results

LAMBDA_CB, GAMMA_CB, RANK_CB = CHECKERBOARD.lam, CHECKERBOARD.gamma, CHECKERBOARD.rank
LAMBDA_CT, GAMMA_CT, RANK_CT = COVTYPE.lam, COVTYPE.gamma, COVTYPE.rank
CEIL = {}  # measured ceilings, filled by part_ceilings (datasheet fallbacks below)
FALLBACK = {"d2d_bytes_per_s": 3.0e12, "h2d_bytes_per_s": 2.0e10,
            "gemm_float32_flops": 5.0e13, "gemm_float64_flops": 5.0e13}


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- timing helpers
def _cp():
    import cupy

    return cupy


def sync():
    _cp().cuda.get_current_stream().synchronize()


def timed(fn, device="cuda"):
    """Run ``fn`` once and return (result, seconds) with the GPU drained before and after."""
    out, stats = repeat_timed(fn, 1, device)
    return out, stats["median"]


def pool_reset():
    cp = _cp()
    sync()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def pool_bytes():
    return int(_cp().get_default_memory_pool().total_bytes())


def ceil(key):
    return CEIL.get(key, FALLBACK[key])


def roofline(flops=0.0, bytes_=0.0, dtype="float64", h2d_bytes=0.0):
    """The floor of a phase: max(flops / GEMM rate, device bytes / bandwidth) + host bytes / H2D."""
    t_f = flops / ceil(f"gemm_{dtype}_flops")
    t_b = bytes_ / ceil("d2d_bytes_per_s")
    t_h = h2d_bytes / ceil("h2d_bytes_per_s")
    return {"flops": flops, "bytes": bytes_, "h2d_bytes": h2d_bytes, "floor_seconds": max(t_f, t_b) + t_h,
            "bound": "transfer" if t_h > max(t_f, t_b) else ("compute" if t_f >= t_b else "memory")}


# ----------------------------------------------------------------------------- ceilings
def part_ceilings(args):
    cp = _cp()
    out = {}
    n = 1 << 28  # 2 GiB of float64
    a = cp.ones(n, dtype=cp.float64)
    b = cp.empty_like(a)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        b[...] = a
    ts = []
    for _ in range(10):
        ev0.record()
        b[...] = a
        ev1.record()
        ev1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
    stats = {"d2d": timing_stats(ts)}
    out["d2d_bytes_per_s"] = 2 * a.nbytes / stats["d2d"]["median"]
    del a, b
    h = np.random.default_rng(0).random(1 << 27)  # 1 GiB pageable host array
    cp.asarray(h)
    ts = []
    for _ in range(5):
        _, t = timed(lambda: cp.asarray(h))
        ts.append(t)
    stats["h2d"] = timing_stats(ts)
    out["h2d_bytes_per_s"] = h.nbytes / stats["h2d"]["median"]
    for dt in ("float32", "float64"):
        k = 8192
        A = cp.random.random((k, k)).astype(dt)
        B = cp.random.random((k, k)).astype(dt)
        A @ B
        ts = []
        for _ in range(5):
            ev0.record()
            A @ B
            ev1.record()
            ev1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
        stats[f"gemm_{dt}"] = timing_stats(ts)
        out[f"gemm_{dt}_flops"] = 2 * k**3 / stats[f"gemm_{dt}"]["median"]
    # the exp pass alone (elementwise, memory bound): bytes read + written per second
    for dt in ("float32", "float64"):
        z = -cp.random.random(1 << 27).astype(dt)
        cp.exp(z, out=z)
        ts = []
        for _ in range(5):
            ev0.record()
            cp.exp(z, out=z)
            ev1.record()
            ev1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
        stats[f"exp_{dt}"] = timing_stats(ts)
        out[f"exp_{dt}_bytes_per_s"] = 2 * z.nbytes / stats[f"exp_{dt}"]["median"]
        del z
    CEIL.update({k: v for k, v in out.items() if k in FALLBACK})
    log("ceilings:", {k: f"{v:.3g}" for k, v in out.items()})
    out["timings"] = stats  # the seconds of each measurement: repeats, median, min, max
    return out


# ----------------------------------------------------------------------------- checkerboard
def _uni_split(X, y, Xt, yt, *, gamma, rank, C, dtype, device, reps=1):
    """Transfer / features / solve / predict times of the UniSVC pipeline, phase by phase,
    through the same public functions the estimator calls."""
    from svmgpu.backend import array_device, to_device, to_numpy
    from svmgpu.kernels import RBF
    from svmgpu.losses import get_loss
    from svmgpu.lowrank import nystrom
    from svmgpu.solvers.unisvm import unisvm_newton

    rows = []
    for _ in range(reps):
        if device.startswith("cuda"):
            pool_reset()
        Xd, t_x = timed(lambda: to_device(X.astype(dtype), device), device)
        yd, t_y = timed(lambda: to_device(y.astype(dtype), device), device)
        f, t_feat = timed(lambda: nystrom(Xd, RBF(gamma), rank, random_state=0), device)
        xp = array_device(Xd).xp
        res, t_solve = timed(lambda: unisvm_newton(yd, get_loss("squared_hinge"), C=C, P=f.P,
                                                   max_iter=1000, tol=1e-3, xp=xp), device)

        def predict():
            Xtd = to_device(Xt.astype(dtype), device)
            F = f.transform(Xtd)
            return to_numpy(xp.matmul(F, xp.astype(res.coef, F.dtype)) > 0)

        pred, t_pred = timed(predict, device)
        res0, t_solve0 = timed(lambda: unisvm_newton(yd, get_loss("squared_hinge"), C=C, P=f.P,
                                                     presolve=False, max_iter=1000, tol=1e-3, xp=xp),
                               device)
        acc = float(np.mean(np.where(pred, 1, -1) == yt))
        rows.append({"transfer": t_x + t_y, "features": t_feat, "solve": t_solve, "predict": t_pred,
                     "n_iter": int(res.n_iter), "presolve_iter": int(res.info.get("n_presolve_iter", 0)),
                     "active_set_sizes": res.info.get("active_set_sizes"), "rank_used": int(f.rank),
                     "split_accuracy": acc, "solve_no_presolve": t_solve0,
                     "n_iter_no_presolve": int(res0.n_iter),
                     "pool_bytes": pool_bytes() if device.startswith("cuda") else None})
        Xd = yd = f = None  # free the device arrays before the next repetition
    best = min(rows, key=lambda r: r["features"] + r["solve"])
    return best


def _uni_end_to_end(X, y, Xt, yt, *, gamma, rank, C, dtype, device, reps=3):
    from svmgpu import UniSVC

    times, accs, pools = [], [], []
    for _ in range(reps):
        if device.startswith("cuda"):
            pool_reset()
        clf = UniSVC(C=C, gamma=gamma, rank=rank, random_state=0, device=device, dtype=dtype)

        def run():
            clf.fit(X, y)
            return clf.predict(Xt)

        pred, t = timed(run, device)
        times.append(t)
        accs.append(float(np.mean(np.asarray(pred) == yt)))
        if device.startswith("cuda"):
            pools.append(pool_bytes())
    return {**timing_fields("end_to_end_seconds", timing_stats(times)), "end_to_end_all": times,
            "test_accuracy": accs[0], "n_iter": int(clf.n_iter_), "converged": bool(clf.converged_),
            "peak_pool_bytes": max(pools) if pools else None}


def _floors(m, n_test, d, r, n_iter, dtype):
    s = np.dtype(dtype).itemsize
    feat = roofline(flops=2.0 * m * r * (d + 2) + 2.0 * m * r * r, bytes_=m * (d + r) * s, dtype=dtype)
    solve = roofline(flops=2.0 * m * r * max(n_iter, 1), bytes_=m * r * s * max(n_iter, 1), dtype=dtype)
    pred = roofline(flops=2.0 * n_test * r * (d + 2 + r), bytes_=n_test * (d + r) * s, dtype=dtype,
                    h2d_bytes=n_test * d * s)
    transfer = roofline(h2d_bytes=m * (d + 1) * s, dtype=dtype)
    total = sum(x["floor_seconds"] for x in (feat, solve, pred, transfer))
    return {"transfer": transfer, "features": feat, "solve": solve, "predict": pred,
            "total_floor_seconds": total}


def part_checkerboard(args, device="cuda"):
    from svmgpu.datasets import make_checkerboard

    sizes = [int(s) for s in args.sizes.split(",")]
    Xt, yt = make_checkerboard(CHECKERBOARD.m_test, random_state=1)
    # warm-up: module loads, kernel compilation, cuBLAS/cuSOLVER handles
    Xw, yw = make_checkerboard(100_000, random_state=5)
    for dt in args.dtypes.split(","):
        _uni_end_to_end(Xw, yw, Xt, yt, gamma=GAMMA_CB, rank=RANK_CB, C=1.0 / (LAMBDA_CB * 1e5),
                        dtype=dt, device=device, reps=1)
    rows = []
    for m in sizes:
        X, y = make_checkerboard(m, random_state=0)
        C = 1.0 / (LAMBDA_CB * m)
        for dt in args.dtypes.split(","):
            row = {"data": "checkerboard", "device": device, "m": m, "n_test": len(yt), "dtype": dt,
                   "gamma": GAMMA_CB, "rank": RANK_CB, "C": C}
            row.update(_uni_end_to_end(X, y, Xt, yt, gamma=GAMMA_CB, rank=RANK_CB, C=C, dtype=dt,
                                       device=device, reps=args.reps))
            row["split"] = _uni_split(X, y, Xt, yt, gamma=GAMMA_CB, rank=RANK_CB, C=C, dtype=dt,
                                      device=device)
            if device.startswith("cuda"):
                row["roofline"] = _floors(m, len(yt), 2, RANK_CB, row["split"]["n_iter"], dt)
            rows.append(row)
            log(f"checkerboard m={m} {dt} {device}: {row['end_to_end_seconds']:.3f} s "
                f"acc {row['test_accuracy']:.5f} split " +
                " ".join(f"{k}={row['split'][k]:.3f}" for k in ("transfer", "features", "solve",
                                                                 "predict")))
    return rows


# ----------------------------------------------------------------------------- covtype
def part_covtype(args, device="cuda"):
    Xtr, ytr, Xte, yte = covtype_split(args.covtype)
    m = Xtr.shape[0]
    C = 1.0 / (LAMBDA_CT * m)
    if device.startswith("cuda"):  # warm-up at this d and r
        _uni_end_to_end(Xtr[:50_000], ytr[:50_000], Xte[:1000], yte[:1000], gamma=GAMMA_CT,
                        rank=RANK_CT, C=C, dtype="float32", device=device, reps=1)
    rows = []
    for dt in args.dtypes.split(","):
        row = {"data": "covtype", "device": device, "m": m, "n_test": Xte.shape[0], "dtype": dt,
               "gamma": GAMMA_CT, "rank": RANK_CT, "C": C}
        row.update(_uni_end_to_end(Xtr, ytr, Xte, yte, gamma=GAMMA_CT, rank=RANK_CT, C=C, dtype=dt,
                                   device=device, reps=args.reps if device.startswith("cuda") else 1))
        row["split"] = _uni_split(Xtr, ytr, Xte, yte, gamma=GAMMA_CT, rank=RANK_CT, C=C, dtype=dt,
                                  device=device)
        if device.startswith("cuda"):
            row["roofline"] = _floors(m, Xte.shape[0], 54, RANK_CT, row["split"]["n_iter"], dt)
        rows.append(row)
        log(f"covtype {dt} {device}: {row['end_to_end_seconds']:.3f} s acc {row['test_accuracy']:.5f}"
            f" iters {row['n_iter']}")
    return rows


def part_frontier(args, device="cuda"):
    """Rank 5k/10k/20k on Covtype; γ and C tuned at the smallest rank on a validation split."""
    from svmgpu import UniSVC
    from svmgpu.backend import array_device, to_device, to_numpy
    from svmgpu.kernels import RBF
    from svmgpu.losses import get_loss
    from svmgpu.lowrank import nystrom
    from svmgpu.solvers.unisvm import unisvm_newton

    Xtr, ytr, Xte, yte = covtype_split(args.covtype, dtype="float32")
    rng = np.random.default_rng(1)
    perm = rng.permutation(Xtr.shape[0])
    n_val = 40_000
    va, fi = perm[:n_val], perm[n_val:]
    Xf, yf, Xv, yv = Xtr[fi], ytr[fi], Xtr[va], ytr[va]
    tune_rank = int(args.tune_rank)
    gammas = [float(g) for g in args.gammas.split(",")]
    lambdas = [float(x) for x in args.lambdas.split(",")]
    tuning = []
    Xfd, yfd, Xvd = to_device(Xf, device), to_device(yf.astype(np.float32), device), to_device(Xv, device)
    cp = array_device(Xfd).xp
    t_tune0 = time.perf_counter()
    for g in gammas:
        pool_reset()
        f, t_feat = timed(lambda: nystrom(Xfd, RBF(g), tune_rank, random_state=0), device)
        Fv = f.transform(Xvd)
        warm = None
        for lam in sorted(lambdas, reverse=True):  # large λ (small C) first: warm starts
            C = 1.0 / (lam * Xf.shape[0])
            res, t_solve = timed(lambda: unisvm_newton(yfd, get_loss("squared_hinge"), C=C, P=f.P,
                                                       warm_start=warm, max_iter=200, tol=1e-3,
                                                       xp=cp), device)
            warm = res.coef
            acc = float(np.mean(np.where(to_numpy(Fv @ cp.astype(res.coef, Fv.dtype)) > 0, 1, -1)
                                == yv))
            tuning.append({"gamma": g, "lambda": lam, "C": C, "rank": tune_rank,
                           "val_accuracy": acc, "features_seconds": t_feat, "solve_seconds": t_solve,
                           "n_iter": int(res.n_iter), "rank_used": int(f.rank)})
            log(f"tune γ={g:g} λ={lam:g}: val {acc:.4f} ({t_feat:.2f} s features, {t_solve:.2f} s solve,"
                f" {res.n_iter} it, rank {f.rank})")
        f = Fv = None
    t_tune = time.perf_counter() - t_tune0
    best = max(tuning, key=lambda r: r["val_accuracy"])
    Xfd = yfd = Xvd = None
    rows = []
    for r in [int(s) for s in args.ranks.split(",")]:
        pool_reset()
        C = 1.0 / (best["lambda"] * Xtr.shape[0])
        clf = UniSVC(C=C, gamma=best["gamma"], rank=r, random_state=0, device=device,
                     dtype="float32", max_iter=300)

        def run():
            clf.fit(Xtr, ytr)
            return clf.predict(Xte)

        try:
            import cProfile
            import io
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            pred, t = timed(run, device)
            pr.disable()
            if args.out:  # where the time of the fit goes (host time, syncs included)
                buf = io.StringIO()
                pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(25)
                Path(args.out, f"frontier_profile_{r}.txt").write_text(buf.getvalue())
            row = {"rank": r, "rank_used": int(clf.factor_.rank), "gamma": best["gamma"],
                   "lambda": best["lambda"], "C": C, "end_to_end_seconds": t,
                   "test_accuracy": float(np.mean(np.asarray(pred) == yte)), "n_iter": int(clf.n_iter_),
                   "converged": bool(clf.converged_), "peak_pool_bytes": pool_bytes()}
        except Exception as exc:  # noqa: BLE001 - record and go on to the next rank
            row = {"rank": r, "error": f"{type(exc).__name__}: {exc}"}
        rows.append(row)
        log("frontier", row)
        clf = None
    return {"tuning": tuning, "tuning_seconds": t_tune, "chosen": best, "validation_size": n_val,
            "fits": rows}


# ----------------------------------------------------------------------------- syncs
def _count_transfers(fn):
    """Run ``fn`` under CUPTI (torch.profiler): device->host copies, host->device copies,
    explicit synchronisation calls and GPU kernels it caused."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], acc_events=True) as prof:
        out = fn()
        sync()
    events = prof.events()
    names = [e.name for e in events]
    return out, {
        "dtoh_copies": sum(1 for n in names if "DtoH" in n or "Device -> Pageable" in n
                           or "Device -> Pinned" in n),
        "htod_copies": sum(1 for n in names if "HtoD" in n or "Pageable -> Device" in n
                           or "Pinned -> Device" in n),
        "sync_calls": sum(1 for n in names if n in ("cudaStreamSynchronize", "cudaDeviceSynchronize",
                                                    "cudaEventSynchronize", "cudaMemcpy")),
        "gpu_kernels": sum(1 for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")
                           and "Memcpy" not in e.name and "Memset" not in e.name),
    }


def part_syncs(args, device="cuda"):
    """Device→host transfers per iteration: the solver call alone for UniSVM Newton and DCA (on
    features built beforehand), whole fits for the other estimators (setup included)."""
    from svmgpu import GreedySVC, L2SVMPath, ReducedSVC
    from svmgpu.backend import array_device, to_device
    from svmgpu.datasets import make_checkerboard
    from svmgpu.kernels import RBF
    from svmgpu.losses import get_loss
    from svmgpu.lowrank import nystrom
    from svmgpu.solvers.unisvm import unisvm, unisvm_newton

    X, y = make_checkerboard(200_000, random_state=0)
    Xs, ys = make_checkerboard(3000, random_state=0)
    Xd, yd = to_device(X, device), to_device(y.astype(np.float64), device)
    cp = array_device(Xd).xp  # array-api-compat's CuPy namespace
    f = nystrom(Xd, RBF(16.0), 300, random_state=0)
    G = f.features().gram()
    C = 1.0 / (LAMBDA_CB * X.shape[0])
    solver_cases = [
        ("unisvm_newton (presolve off)", lambda: unisvm_newton(yd, get_loss("squared_hinge"), C=C, P=f.P,
                                                               presolve=False, tol=1e-3, xp=cp)),
        ("unisvm_newton (presolve on)", lambda: unisvm_newton(yd, get_loss("squared_hinge"), C=C, P=f.P,
                                                              tol=1e-3, xp=cp)),
        ("unisvm_dca", lambda: unisvm(yd, get_loss("truncated_squared_hinge"), C=10.0, P=f.P, G=G,
                                      max_iter=100, tol=1e-6, xp=cp)),
    ]
    est_cases = [
        ("reduced_newton", lambda: ReducedSVC(C=100.0, gamma=16.0, rank=300, random_state=0,
                                              device=device), Xd, y, lambda e: int(np.sum(e.n_iter_))),
        ("l2_path", lambda: L2SVMPath(gamma=16.0, rank=100, random_state=0, device=device),
         to_device(Xs, device), ys, lambda e: len(e.lambdas_)),
        ("greedy", lambda: GreedySVC(gamma=16.0, max_support=300, device=device), to_device(Xs, device),
         ys, lambda e: int(np.sum(e.n_support_))),
    ]
    # (name, scope, run, iterations of the result): solver calls, then whole estimator fits
    cases = [(name, "solver call", fn,
              lambda res: int(res.n_iter) + int(res.info.get("n_presolve_iter", 0)))
             for name, fn in solver_cases]
    cases += [(name, "whole fit (setup included)", lambda make=make, Xc=Xc, yc=yc: make().fit(Xc, yc),
               count) for name, make, Xc, yc, count in est_cases]
    rows = []
    for name, scope, run, count in cases:
        try:
            run()  # warm-up
            out, c = _count_transfers(run)
            iters = max(count(out), 1)
            rows.append({"solver": name, "scope": scope, "iterations": iters, **c,
                         "dtoh_per_iteration": c["dtoh_copies"] / iters,
                         "kernels_per_iteration": c["gpu_kernels"] / iters})
        except Exception as exc:  # noqa: BLE001 - record and go on
            rows.append({"solver": name, "error": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc()[-2000:]})
        log("syncs", {k: v for k, v in rows[-1].items() if k != "traceback"})
    return rows


# ----------------------------------------------------------------------------- profile
def part_profile(args, device="cuda"):
    """Where the time of a 1M Checkerboard UniSVC fit goes: the host profile (cProfile, top
    functions by own time, which on a GPU includes the waits at synchronisations) and the GPU
    kernels by total device time (torch.profiler over CUPTI). Text tables in ``args.out``."""
    import cProfile
    import io
    import pstats

    from svmgpu import UniSVC
    from svmgpu.datasets import make_checkerboard

    m = 1_000_000
    X, y = make_checkerboard(m, random_state=0)
    Xt, _ = make_checkerboard(200_000, random_state=1)
    out = {}
    for dt in args.dtypes.split(","):
        clf = UniSVC(C=1.0 / (LAMBDA_CB * m), gamma=GAMMA_CB, rank=RANK_CB, random_state=0,
                     device=device, dtype=dt)
        run = lambda: clf.fit(X, y).predict(Xt)  # noqa: E731
        run()  # warm-up
        _, t = timed(run, device)
        pr = cProfile.Profile()
        pr.enable()
        timed(run, device)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(30)
        text = buf.getvalue()
        kernels = None
        if device.startswith("cuda"):
            try:
                import torch
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    run()
                    sync()
                kernels = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - the host profile still stands
                kernels = f"torch.profiler failed: {type(exc).__name__}: {exc}"
        if args.out:
            Path(args.out, f"profile_{dt}.txt").write_text(
                f"fit+predict {t:.4f} s\n{clf.timings_ if hasattr(clf, 'timings_') else ''}\n\n"
                f"{text}\n\n{kernels or ''}\n")
        out[dt] = {"seconds": t, "timings": getattr(clf, "timings_", None)}
        log("profile", dt, f"{t:.4f} s", out[dt]["timings"])
        log(text[:6000])
    return out


# ----------------------------------------------------------------------------- torch
def part_torch(args, device="cuda"):
    """The solver core (Nyström features + semi-smooth Newton) on torch CUDA tensors."""
    import array_api_compat
    import torch

    from svmgpu.datasets import make_checkerboard
    from svmgpu.kernels import RBF
    from svmgpu.losses import get_loss
    from svmgpu.lowrank import nystrom
    from svmgpu.solvers.unisvm import unisvm_newton

    m = 1_000_000
    X, y = make_checkerboard(m, random_state=0)
    Xt, yt = make_checkerboard(200_000, random_state=1)
    out = {}
    for dt in ("float32", "float64"):
        tdt = getattr(torch, dt)
        try:
            def run():
                Xd = torch.as_tensor(X, device="cuda", dtype=tdt)
                yd = torch.as_tensor(y, device="cuda", dtype=tdt)
                xp = array_api_compat.array_namespace(Xd)
                f = nystrom(Xd, RBF(GAMMA_CB), RANK_CB, random_state=0)
                res = unisvm_newton(yd, get_loss("squared_hinge"), C=1.0 / (LAMBDA_CB * m), P=f.P,
                                    max_iter=1000, tol=1e-3, xp=xp)
                F = f.transform(torch.as_tensor(Xt, device="cuda", dtype=tdt))
                return (F @ res.coef.to(tdt) > 0).cpu().numpy(), res

            run()  # warm-up
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            pred, res = run()
            torch.cuda.synchronize()
            out[dt] = {"seconds": time.perf_counter() - t0, "n_iter": int(res.n_iter),
                       "test_accuracy": float(np.mean(np.where(pred, 1, -1) == yt))}
        except Exception as exc:  # noqa: BLE001
            out[dt] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
        log("torch", dt, {k: v for k, v in out[dt].items() if k != "traceback"})
    return out


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="ceilings,checkerboard,covtype")
    ap.add_argument("--sizes", default="1000000,3000000")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--covtype", default=None)
    ap.add_argument("--tune-rank", default="5000")
    ap.add_argument("--ranks", default="5000,10000,20000")
    ap.add_argument("--gammas", default="1,2,4,8,16,32")
    ap.add_argument("--lambdas", default="1e-6,1e-7,1e-8,1e-9")
    ap.add_argument("--out", default=None, help="directory for the JSON files (default bench/results)")
    args = ap.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    results = {"benchmark": "gpu", "machine": machine_info("cuda"), "parts": {}}
    out_dir = Path(args.out) if args.out else None
    fns = {"ceilings": part_ceilings, "checkerboard": part_checkerboard, "covtype": part_covtype,
           "frontier": part_frontier, "syncs": part_syncs, "torch": part_torch,
           "profile": part_profile}
    for p in parts:
        t0 = time.perf_counter()
        try:
            if p == "cpu":
                res = {"checkerboard": part_checkerboard(argparse.Namespace(**{**vars(args),
                                                                               "sizes": "1000000",
                                                                               "reps": 1}), "cpu")}
                if args.covtype:
                    res["covtype"] = part_covtype(argparse.Namespace(**{**vars(args), "reps": 1}), "cpu")
            else:
                res = fns[p](args)
        except Exception as exc:  # noqa: BLE001 - one part's failure must not hide the others
            res = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            log(f"part {p} FAILED:\n{res['traceback']}")
        results["parts"][p] = res
        results["parts"][p + "_seconds"] = time.perf_counter() - t0
        results["ceilings"] = dict(CEIL)
        name = "gpu_cuda.json" if out_dir is None else str(out_dir / "gpu_cuda.json")
        write_results(name if out_dir else "gpu_cuda", results)
    summary = []
    for p in ("checkerboard", "covtype"):
        for r in results["parts"].get(p, []) if isinstance(results["parts"].get(p), list) else []:
            s = r["split"]
            summary.append({"data": r["data"], "m": r["m"], "dtype": r["dtype"],
                            "e2e_s": r["end_to_end_seconds"],
                            "acc": r["test_accuracy"], "xfer": s["transfer"], "feat": s["features"],
                            "solve": s["solve"], "pred": s["predict"], "iters": s["n_iter"],
                            "floor_s": r.get("roofline", {}).get("total_floor_seconds"),
                            "pool_GB": (r["peak_pool_bytes"] or 0) / 1e9})
    if summary:
        print_table(summary, list(summary[0]))


if __name__ == "__main__":
    main()
