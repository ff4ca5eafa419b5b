"""Helpers shared by the benchmark scripts: timing, peak memory, JSON results."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (VmHWM), in bytes."""
    from svmgpu.backend import peak_host_bytes

    return peak_host_bytes() or 0


def rss_bytes() -> int:
    """Current resident set size (VmRSS), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so later peaks are per phase."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def sync(device) -> None:
    """Wait for queued GPU work (no-op on the CPU)."""
    if str(device).startswith("cuda"):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


class Timer:
    def __init__(self, device="cpu"):
        self.device = device

    def __enter__(self):
        sync(self.device)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self.t0
        return False


def machine_info(device="cpu") -> dict:
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "loadavg_at_start": list(os.getloadavg()),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name") and "cpu_model" not in info:
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    # the SIMD paths NumPy's exp / BLAS take differ between these (issue 15)
                    flags = set(line.split(":", 1)[1].split())
                    info["simd"] = sorted(flags & {"avx2", "avx512f", "fma", "sse4_2"})
                    break
    except OSError:
        pass
    if str(device).startswith("cuda"):
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["cupy"] = cupy.__version__
    import numpy

    info["numpy"] = numpy.__version__
    return info


def write_results(name: str, payload: dict) -> Path:
    """Write ``payload`` as JSON: ``bench/results/<name>.json`` for a bare name, else ``name``
    itself when it is a path (contains a directory or ends in ``.json``)."""
    path = Path(name)
    if path.suffix != ".json" and path.parent == Path("."):
        path = RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    return path


def print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns}
    print("  ".join(c.rjust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).rjust(widths[c]) for c in columns))


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def run_specs(script, specs: list[dict], columns: list[str]) -> list[dict]:
    """Run ``script --spec JSON`` in a fresh subprocess for each spec (so that peak memory is
    per case), printing each result row as it comes; returns the rows (``wall_seconds``
    added). A failed case prints its stderr's end and stops the benchmark."""
    import subprocess  # noqa: PLC0415

    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, str(script), "--spec", json.dumps(spec)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr[-5000:], file=sys.stderr)
            raise SystemExit(f"failed: {spec}")
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["wall_seconds"] = time.perf_counter() - t0
        rows.append(row)
        print_table([row], columns)
    return rows
