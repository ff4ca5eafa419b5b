"""The memory-budget contract, measured: peak resident memory above the data and fit time of a
1M Checkerboard fit with the features in memory and with a budget that forces recomputed rows.

``memory_budget`` bounds everything a fit allocates beyond its input, the m × r features
included (README, "Memory budget"). Each case runs in its own process: the data are made, a
small warm-up fit loads the libraries, the peak counter (VmHWM) is reset, then the fit runs;
the peak minus the resident size before the fit is what the fit allocated.

Cases (float64, r = 300, γ = 16, the UniSVM Checkerboard C): UniSVC squared hinge and
ReducedSVC GSVM, each with no budget (half the free memory: P held) and with 400 MB
(P, 2.4 GB, recomputed per block); and the 50 MB budget, refused up front.

Usage: python bench/bench_memory.py [--m 1000000] [--out bench/results/memory_budget_cpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine_info, print_table  # noqa: E402

_CASE = r"""
import json, sys, time
import numpy as np
from svmgpu import ReducedSVC, UniSVC
from svmgpu.datasets import make_checkerboard
m, budget, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
budget = None if budget == "none" else budget
X, y = make_checkerboard(m, random_state=0)
Xt, yt = make_checkerboard(200_000, random_state=1)
UniSVC(rank=20, random_state=0).fit(X[:3000], y[:3000])
def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS:")
if name == "UniSVC":
    est = UniSVC(C=1.0 / (1e-7 * m), gamma=16.0, rank=300, random_state=0, memory_budget=budget)
else:
    est = ReducedSVC(C=1.0 / (2e-7 * m), gamma=16.0, rank=300, random_state=0,
                     memory_budget=budget)
t0 = time.perf_counter()
try:
    est.fit(X, y)
except MemoryError as exc:
    print(json.dumps({"refused_after_s": time.perf_counter() - t0, "message": str(exc)}))
    sys.exit(0)
fit = time.perf_counter() - t0
peak = status("VmHWM:") - base
print(json.dumps({"fit_seconds": fit, "peak_above_data_bytes": peak,
                  "test_accuracy": float(np.mean(est.predict(Xt) == yt))}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=1_000_000)
    ap.add_argument("--out", default=str(RESULTS / "memory_budget_cpu.json"))
    args = ap.parse_args(argv)
    rows = []
    cases = [("UniSVC", "none"), ("UniSVC", "400MB"), ("ReducedSVC", "none"),
             ("ReducedSVC", "400MB"), ("UniSVC", "50MB")]
    for name, budget in cases:
        out = subprocess.run([sys.executable, "-c", _CASE, str(args.m), budget, name],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-3000:])
        row = {"estimator": name, "m": args.m, "memory_budget": budget,
               **json.loads(out.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print_table([{"estimator": r["estimator"], "budget": r["memory_budget"],
                  "fit_s": r.get("fit_seconds"), "refused_s": r.get("refused_after_s"),
                  "peak_MB": (r["peak_above_data_bytes"] / 1e6
                              if "peak_above_data_bytes" in r else None),
                  "accuracy": r.get("test_accuracy")} for r in rows],
                ["estimator", "budget", "fit_s", "refused_s", "peak_MB", "accuracy"])
    info = machine_info("cpu")
    info["loadavg_at_end"] = list(os.getloadavg())
    Path(args.out).write_text(json.dumps({"benchmark": "bench_memory", "machine": info,
                                          "rows": rows}, indent=1))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
