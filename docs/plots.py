"""Draw the figures of docs/benchmarks.md from the recorded results in bench/results/ (the
peer comparison's figure is drawn by bench/compare.py itself).

Run from anywhere: ``python docs/plots.py``. It reads JSON files only (no benchmark is run) and
writes PNG files under docs/img/, which are committed. Needs matplotlib.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OUT = Path(__file__).resolve().parent / "img"
DPI = 100


def _load(name):
    return json.loads((RESULTS / name).read_text())


def _save(fig, name, rect=(0, 0, 1, 1)):
    """Lay out (within ``rect`` of the figure: room for a legend above), write and close."""
    OUT.mkdir(exist_ok=True)
    fig.tight_layout(rect=rect)
    fig.savefig(OUT / name, dpi=DPI)
    plt.close(fig)
    return OUT / name


def _grid_and_legend(*axes):
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)


def gpu_phases():
    """Measured time of each phase of a GPU fit beside its roofline floor (bench_gpu.py)."""
    res = _load("gpu_checkerboard_covtype_cuda.json")["parts"]
    cases = res["checkerboard"] + res["covtype"]
    phases = ["transfer", "features", "solve", "predict"]
    names = [f"{c['data']} {c['m']:,} {c['dtype']}" for c in cases]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.38
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (key, hatch) in enumerate([("split", None), ("roofline", "//")]):
        left = [0.0] * len(cases)
        ypos = [i + (k - 0.5) * width for i in range(len(cases))]
        for j, phase in enumerate(phases):
            ms = [1000 * (c[key][phase] if key == "split" else c[key][phase]["floor_seconds"])
                  for c in cases]
            ax.barh(ypos, ms, height=width, left=left, color=colors[j], hatch=hatch,
                    edgecolor="white" if hatch else None, alpha=1.0 if k == 0 else 0.55,
                    label=phase if k == 0 else None)
            left = [a + b for a, b in zip(left, ms)]
    ax.set_yticks(range(len(cases)), names)
    ax.invert_yaxis()
    ax.set(xlabel="milliseconds (upper bar: measured; lower, hatched: roofline floor)",
           title="UniSVC on an H100, phase by phase")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, "gpu_phases.png")


def gpu_frontier():
    """Covtype test accuracy and fit time against the rank on an H100 (bench_gpu.py)."""
    fits = _load("gpu_frontier_cuda.json")["parts"]["frontier"]["fits"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ranks = [f["rank_used"] for f in fits]
    acc = [100 * f["test_accuracy"] for f in fits]
    ax.plot(ranks, acc, "o-")
    for f, r, a in zip(fits, ranks, acc):
        ax.annotate(f"{f['end_to_end_seconds']:.1f} s", (r, a), textcoords="offset points",
                    xytext=(6, -12))
    ax.set(xlabel="rank kept", ylabel="test accuracy (%)",
           title="Covtype (381,012 training points), H100")
    ax.grid(True, alpha=0.3)
    return _save(fig, "gpu_frontier.png")


def path_vs_grid():
    """L2SVMPath against GridSearchCV(SVC) on the paper's mixture (bench_path.py)."""
    rows = [r for r in _load("path_cpu.json")["summary"] if r["data"] == "mixture"]
    m = [r["m"] for r in rows]
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(10, 4))
    ax_t.plot(m, [r["path_s"] for r in rows], "o-", label="L2SVMPath (rank 150)")
    ax_t.plot(m, [r["grid_s"] for r in rows], "s-", label="GridSearchCV(SVC), 5-fold, 10 C")
    ax_t.set(yscale="log", xlabel="training points m", ylabel="time (s)",
             title="Choosing C: time")
    ax_e.plot(m, [r["path_err%"] for r in rows], "o-", label="L2SVMPath")
    ax_e.plot(m, [r["grid_err%"] for r in rows], "s-", label="GridSearchCV(SVC)")
    ax_e.plot(m, [r["paper_path_err%"] for r in rows], "x--", label="the paper's path")
    ax_e.axhline(12.11, color="gray", lw=1, ls=":", label="Bayes error 12.11 %")
    ax_e.set(xlabel="training points m", ylabel="test error (%)",
             title="Choosing C: test error")
    _grid_and_legend(ax_t, ax_e)
    return _save(fig, "path_vs_grid.png")


def greedy_vs_svc():
    """GreedySVC (GS-SVM) against SVC on Checkerboard (bench_greedy.py)."""
    res = _load("greedy_cpu_checkerboard.json")["results"]
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(10, 4))
    for method, marker in (("GS-SVM", "o-"), ("SVC", "s-")):
        rows = sorted((r for r in res if r["method"] == method), key=lambda r: r["m"])
        m = [r["m"] for r in rows]
        label = "GreedySVC" if method == "GS-SVM" else "sklearn SVC"
        ax_t.plot(m, [r["fit_seconds"] for r in rows], marker, label=label)
        ax_e.plot(m, [100 * r["test_error"] for r in rows], marker, label=label)
    ax_t.set(xscale="log", yscale="log", xlabel="training points m", ylabel="fit time (s)",
             title="GS-SVM, Checkerboard: fit time")
    ax_e.set(xscale="log", yscale="log", xlabel="training points m", ylabel="test error (%)",
             title="GS-SVM, Checkerboard: test error")
    _grid_and_legend(ax_t, ax_e)
    return _save(fig, "greedy_vs_svc.png")


def dask_cpu():
    """UniSVC fit time against the number of points, in memory and on 2 Dask workers."""
    rows = _load("dask_cpu.json")["results"] + _load("dask_cpu_3e7.json")["results"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for impl, marker, label in (("memory", "s", "in memory (one process)"),
                                ("dask", "o-", "LocalCluster, 2 workers × 1 thread")):
        pts = sorted((r["m"], r["fit_seconds"]) for r in rows if r["impl"] == impl)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker, label=label)
    ax.set(xscale="log", yscale="log", xlabel="training points", ylabel="fit time (s)",
           title="UniSVC on Dask, 2-core CPU")
    _grid_and_legend(ax)
    return _save(fig, "dask_cpu.png")


def covtype_frontier():
    """Covtype test accuracy against fit time on the 2-core CPU (bench_covtype_frontier.py),
    with the partitioned SVC and the k-means + sklearn baseline on DC-SVM's split
    (bench_partition.py), zoomed on the right."""
    res = _load("covtype_frontier_cpu.json")
    rows, budget = res["results"], res["budget_seconds"]
    part = _load("partition_cpu.json")["results"]
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.8),
                                   gridspec_kw={"width_ratios": [1.2, 1]})
    for method, marker, label in (("GreedySVC", "o-", "GreedySVC (GS-SVM), m rows"),
                                  ("UniSVC", "s-", "UniSVC squared hinge, rank r"),
                                  ("SVC", "^--", "sklearn SVC, m rows")):
        rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["fit_seconds"])
        ax.plot([r["fit_seconds"] for r in rs], [100 * r["test_accuracy"] for r in rs], marker,
                label=label)
        for r in rs:
            ax.annotate(f"r={r['rank']}" if method == "UniSVC" else f"m={r['m'] // 1000}k",
                        (r["fit_seconds"], 100 * r["test_accuracy"]), fontsize=7,
                        textcoords="offset points", xytext=(4, -9))
    # DC-SVM's 80/20 split (464,810 / 116,202 rows), C = 32, γ = 32
    for prefix, marker, label in (("svmgpu", "D", "SVC partitioned (DC-SVM split)"),
                                  ("MiniBatchKMeans", "v:", "k-means + sklearn SVC (DC-SVM split)")):
        rs = sorted((r for r in part if r["method"].startswith(prefix)),
                    key=lambda r: r["fit_seconds"])
        for a in (ax, zoom):
            a.plot([r["fit_seconds"] for r in rs], [100 * r["test_accuracy"] for r in rs], marker,
                   label=label)
        for r in rs:
            note = f"{r['regions']} regions" + (", no overlap" if "overlap=0.0" in r["method"]
                                                else "")
            zoom.annotate(note, (r["fit_seconds"], 100 * r["test_accuracy"]), fontsize=7,
                          textcoords="offset points", xytext=(5, -3))
    for a in (ax, zoom):
        a.axhline(96.15, color="green", lw=1, ls="--", label="exact SVM, C = 32, γ = 32 (96.15 %)")
    ax.axvline(budget, color="gray", lw=1, ls=":", label=f"{budget:.0f} s budget")
    ax.axhline(100 * res["target_accuracy"], color="red", lw=1, ls=":", label="target 92 %")
    ax.set(xscale="log", xlabel="fit time (s), 2-core CPU", ylabel="test accuracy (%)",
           title="Covtype (class 2 vs rest)")
    zoom.set(xscale="log", xlabel="fit time (s), 2-core CPU", ylabel="test accuracy (%)",
             title="DC-SVM's split, C = 32, γ = 32 (116,202 test rows)")
    _grid_and_legend(ax, zoom)
    zoom.legend(fontsize=8, loc="center right")
    return _save(fig, "covtype_frontier.png")


def svc_vs_peers():
    """Test accuracy (R² for regression) against fit time on each set of bench_svc.py: svmgpu's
    SVC()/SVR() and its peers, all with their defaults (the image-like stand-ins from their own
    run, ``--digits28``; both runs session 69's, on one VM)."""
    rows = [r for name in ("svc_cpu_s69.json", "svc_digits28_cpu_s69.json")
            for r in _load(name)["results"] if r.get("status", "ok") == "ok"]
    sets = list(dict.fromkeys(r["data"] for r in rows))
    methods = list(dict.fromkeys(r["method"].replace("SVR", "SVC") for r in rows))
    markers = dict(zip(methods, "o s ^ D v P".split()))
    cols = 4
    fig, axes = plt.subplots((len(sets) + cols - 1) // cols, cols,
                             figsize=(3.2 * cols, 2.6 * ((len(sets) + cols - 1) // cols)))
    for ax, name in zip(axes.flat, sets):
        for r in (r for r in rows if r["data"] == name):
            score = r["test_accuracy"] if r["test_accuracy"] is not None else r["test_r2"]
            ax.plot(r["fit_seconds"], 100 * score, markers[r["method"].replace("SVR", "SVC")],
                    label=r["method"].replace("SVR", "SVC").replace("SVC()", "").strip())
        first = next(r for r in rows if r["data"] == name)
        ax.set(xscale="log", title=f"{name} (m = {first['m']:,})", xlabel="fit time (s)",
               ylabel="test accuracy (%)" if first["test_r2"] is None else "R² (%)")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.title.set_fontsize(9)
    for ax in list(axes.flat)[len(sets):]:
        ax.axis("off")
    handles, labels = next(iter(axes.flat)).get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=9)
    return _save(fig, "svc_vs_peers.png", rect=(0, 0, 1, 0.95))


FIGURES = [gpu_phases, gpu_frontier, path_vs_grid, greedy_vs_svc, dask_cpu, covtype_frontier,
           svc_vs_peers]


def main():
    for make in FIGURES:
        print(make())


if __name__ == "__main__":
    main()
