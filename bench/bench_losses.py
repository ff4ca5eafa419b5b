"""Benchmark (issue 29): every UniSVM loss by Newton and by DCA, side by side in one run.

Classification: UniSVM's Checkerboard set-up (γ = 16, rank 300, λ = 1e-7 so ``C = 1/(λ m)``,
float32, 200,000 test points) at each size of ``--sizes``, the nine classification losses with
``solver="newton"`` (the default) and, at the sizes of ``--dca-sizes``, ``solver="dca"`` (UniSVM's
Algorithm 1, Anderson accelerated), both with the library's defaults otherwise (``tol=1e-3``,
``max_iter=1000``, ``init="auto"``). Regression: :func:`_cases.surface_split` (a smooth surface
with 5 % of the training targets replaced by outliers, the same γ, λ and rank), the six
regression losses of the issue, RMSE on clean test targets. Robustness: the Checkerboard with
20 % of the training labels flipped (``--noisy-size``), the squared hinge against the robust
losses.

With ``--levels-size m``: the smooth losses at m rows with the curvature rounded to powers of
each ratio of ``--levels`` (``none``: the exact curvature, rebuilt every step), the choice of
:data:`svmgpu.solvers.unisvm.CURVATURE_LEVELS`.

Each fit runs in its own subprocess (fresh imports, its own peak memory); the times are end to
end (features and solver), prediction apart. ``converged`` is the estimator's ``converged_``
(False comes with a ConvergenceWarning).

Usage: python bench/bench_losses.py [--sizes 200000,1000000] [--dca-sizes 200000]
       [--reg-sizes 1000000] [--dca-reg-sizes 200000] [--noisy-size 200000]
       [--levels-size 1000000] [--levels none,1.414,2,4] [--repeats 1] [--quick]
"""

from __future__ import annotations

from _cases import CHECKERBOARD, SURFACE, checkerboard_split, surface_split
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

CLASSIFICATION = ["squared_hinge", "truncated_squared_hinge", "huber_hinge", "least_squares",
                  "truncated_least_squares", "smooth_hinge", "smooth_ramp", "smooth_ramp_log",
                  "nonconvex_exp"]
REGRESSION = ["least_squares", "huber", "smooth_epsilon_insensitive", "smooth_absolute",
              "truncated_huber", "truncated_least_squares"]
ROBUST = ["squared_hinge", "nonconvex_exp", "smooth_ramp", "truncated_squared_hinge"]


def run_one(spec: dict) -> dict:
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    from svmgpu import UniSVC, UniSVR
    from svmgpu.backend import to_device, to_numpy

    m, device, task = spec["m"], spec["device"], spec["task"]
    if "levels" in spec:  # the rounding of smooth curvatures (CURVATURE_LEVELS; None: exact)
        import sys

        sys.modules["svmgpu.solvers.unisvm"].CURVATURE_LEVELS = spec["levels"]
    setup = CHECKERBOARD if task == "classification" else SURFACE
    if task == "classification":
        X, y, Xt, yt = checkerboard_split(m, spec["m_test"], dtype="float32",
                                          flip=spec.get("flip", 0.0))
        est = UniSVC
    else:
        X, y, Xt, yt = surface_split(m, spec["m_test"], dtype="float32")
        est = UniSVR
    if device.startswith("cuda"):
        X, Xt = to_device(X, device), to_device(Xt, device)
    out = dict(spec)
    out["C"] = setup.C(m)
    model = est(loss=spec["loss"], C=out["C"], gamma=setup.gamma, rank=setup.rank,
                solver=spec["solver"], random_state=0, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with Timer(device) as t:
            model.fit(X, y)
    out["fit_seconds"] = t.seconds
    out["warnings"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    out["n_iter"] = int(model.n_iter_)
    out["n_iter_detail"] = model.n_iter_detail_
    out["converged"] = bool(model.converged_)
    with Timer(device) as tp:
        pred = to_numpy(model.predict(Xt))
    out["predict_seconds"] = tp.seconds
    if task == "classification":
        out["test_accuracy"] = float(np.mean(pred == yt))
    else:
        out["test_rmse"] = float(np.sqrt(np.mean((pred - yt) ** 2)))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


def _ints(text):
    return [int(s) for s in text.split(",") if s]


def main():
    ap = case_parser(__doc__)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="200000,1000000")
    ap.add_argument("--dca-sizes", default="200000")
    ap.add_argument("--reg-sizes", default="1000000")
    ap.add_argument("--dca-reg-sizes", default="200000")
    ap.add_argument("--noisy-size", type=int, default=200_000)
    ap.add_argument("--levels", default="none,1.414,2,4",
                    help="curvature level ratios compared (none: the exact curvature)")
    ap.add_argument("--levels-size", type=int, default=0)
    ap.add_argument("--levels-losses", default="classification:smooth_hinge,"
                    "classification:smooth_ramp_log,regression:smooth_epsilon_insensitive")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if answer_spec(args, run_one):
        return
    sizes, dca_sizes = _ints(args.sizes), _ints(args.dca_sizes)
    reg_sizes, dca_reg = _ints(args.reg_sizes), _ints(args.dca_reg_sizes)
    noisy, m_test = args.noisy_size, CHECKERBOARD.m_test
    if args.quick:
        sizes, dca_sizes, reg_sizes, dca_reg, noisy, m_test = [20_000], [20_000], [20_000], \
            [20_000], 20_000, 20_000
    base = {"device": args.device, "m_test": m_test}
    specs = []
    for task, losses, newton_sizes, dca in (("classification", CLASSIFICATION, sizes, dca_sizes),
                                            ("regression", REGRESSION, reg_sizes, dca_reg)):
        for m in sorted(set(newton_sizes) | set(dca)):
            for loss in losses:
                for solver in ("newton", "dca"):
                    if m in (newton_sizes if solver == "newton" else dca):
                        specs.append({**base, "task": task, "m": m, "loss": loss,
                                      "solver": solver})
    if args.levels_size:
        for item in args.levels_losses.split(","):
            task, loss = item.split(":")
            for lv in args.levels.split(","):
                specs.append({**base, "task": task, "m": args.levels_size, "loss": loss,
                              "solver": "newton", "levels": None if lv == "none" else float(lv)})
    if noisy:
        for loss in ROBUST:
            specs.append({**base, "task": "classification", "m": noisy, "loss": loss,
                          "solver": "newton", "flip": 0.2})
    cols = ["task", "m", "loss", "solver", "levels", "n_iter", "converged", "warnings", "fit_seconds",
            "predict_seconds", "test_accuracy", "test_rmse"]
    rows = run_specs(__file__, specs, cols, args.repeats)
    for r in rows:  # the fit time against the squared hinge's (least squares') Newton fit
        ref_loss = "squared_hinge" if r["task"] == "classification" else "least_squares"
        ref = next((q for q in rows if q["task"] == r["task"] and q["m"] == r["m"] and
                    q["loss"] == ref_loss and q["solver"] == "newton" and
                    q.get("flip", 0.0) == r.get("flip", 0.0) and "levels" not in q), None)
        if ref is not None:
            r["time_vs_reference"] = r["fit_seconds"] / ref["fit_seconds"]
    print()
    print_table(rows, cols + ["time_vs_reference"])
    payload = {"benchmark": "losses", "machine": machine_info(args.device),
               "setup": {"classification": {**CHECKERBOARD.describe(), "dtype": "float32"},
                         "regression": {**SURFACE.describe(), "dtype": "float32",
                                        "data": surface_split.__doc__.split(".")[0]},
                         "defaults": "tol=1e-3, max_iter=1000, init='auto'"},
               "targets": "every loss converged at defaults (no warning) in <= 5x the squared "
                          "hinge's (least squares') Newton fit time, accuracy >= DCA's - 0.05 "
                          "points (RMSE <= DCA's); with 20% flipped labels the robust losses "
                          ">= 0.5 points above the squared hinge",
               "results": rows}
    name = args.out or default_name("losses", args.device, args.quick)
    print("wrote", write_results(name, payload))


if __name__ == "__main__":
    main()
