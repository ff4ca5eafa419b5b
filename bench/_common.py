"""Helpers shared by the benchmark scripts: timing (repeats, median, spread), peak memory,
subprocess per case, and JSON results with their provenance.

The scripts import this module and ``_cases`` (the set-ups and data splits) as top-level
modules: ``python bench/<script>.py`` puts ``bench/`` first on ``sys.path``. svmgpu itself is
the installed package (``pip install -e .`` for a checkout); the provenance of each result file
records which one ran (:func:`provenance`).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"


class Unavailable(Exception):
    """A method cannot run here (package or module missing, or no GPU); the message says why."""


def thundersvm_class(name: str = "SVC"):
    """ThunderSVM's ``SVC`` or ``SVR`` (the CPU package ``thundersvm-cpu``), or
    :class:`Unavailable` saying why not."""
    try:
        import thundersvm  # noqa: PLC0415
    except ImportError:
        raise Unavailable("not installed (pip install thundersvm-cpu)") from None
    except Exception as exc:  # noqa: BLE001 - a broken install (missing shared library)
        raise Unavailable(f"not usable ({type(exc).__name__})") from None
    return getattr(thundersvm, name)


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


def prefault(gib: float) -> float:
    """Write ``gib`` GiB of fresh memory and free it, then reset the peak RSS; returns the
    seconds it took. On a virtual machine whose host backs guest memory on its first write
    (this project's CI VMs: 2.5–3.7 s a GiB the first time, 0.2 s once backed, and backed
    pages handed back to the host a few seconds after they are freed), a fit that allocates
    gigabytes is timed on the host's page faults, not on its own work; writing the memory
    just before the timed fit gives every implementation backed pages, as a real machine's
    are (``bench_newton.py --prefault``)."""
    if gib <= 0:
        return 0.0
    import numpy as np

    t0 = time.perf_counter()
    block = np.empty(int(gib * 2**30) // 8)
    block[...] = 1.0
    del block
    seconds = time.perf_counter() - t0
    reset_peak()
    return seconds


def sync(device) -> None:
    """Wait for queued GPU work (no-op on the CPU)."""
    if str(device).startswith("cuda"):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def _usage():
    """``(system CPU seconds, minor page faults)`` of this process so far (0, 0 where the
    platform has no ``resource`` module)."""
    try:
        import resource  # noqa: PLC0415
    except ImportError:
        return 0.0, 0
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_stime, u.ru_minflt


class Timer:
    """Wall time of a ``with`` block (GPU work drained before and after): ``.seconds``; and
    the process's system CPU time and minor page faults over it: ``.system_seconds``,
    ``.minor_faults``.

    The last two show what the wall time hides: a fit's first touch of memory. On the
    project's CPU VMs the host takes back memory a process has freed (free page reporting),
    and touching it again costs about 2 s/GB of system time. The same ijcnn1 fit took 0.59 s
    and 0.89 s in alternate fits of one process, 0.01 s and 0.24 s of it system time (session
    68); a fit whose system time is high was slowed by the machine, not by its own work.
    """

    def __init__(self, device="cpu"):
        self.device = device

    def __enter__(self):
        sync(self.device)
        self.u0 = _usage()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self.t0
        u1 = _usage()
        self.system_seconds = u1[0] - self.u0[0]
        self.minor_faults = u1[1] - self.u0[1]
        return False


def repeat_timed(fn, repeats: int = 1, device="cpu", warmup: int = 0, max_seconds=None):
    """Call ``fn()`` ``warmup`` times untimed, then ``repeats`` times, each timed by
    :class:`Timer` (fewer where the timed calls reach ``max_seconds`` in all: at least once);
    returns ``(the last call's result, timing_stats(seconds))``."""
    for _ in range(warmup):
        fn()
    seconds, system, faults, out = [], [], [], None
    for _ in range(max(int(repeats), 1)):
        with Timer(device) as t:
            out = fn()
        seconds.append(t.seconds)
        system.append(t.system_seconds)
        faults.append(t.minor_faults)
        if max_seconds is not None and sum(seconds) >= max_seconds:
            break
    return out, timing_stats(seconds, system, faults)


def timing_stats(seconds, system=None, faults=None) -> dict:
    """The record of one timed measurement: ``repeats``, ``median``, ``min``, ``max`` (and
    every repeat's ``seconds``); with ``system`` and ``faults`` (each repeat's system CPU
    seconds and minor page faults, :class:`Timer`), those lists too."""
    seconds = [float(s) for s in seconds]
    out = {"repeats": len(seconds), "median": statistics.median(seconds), "min": min(seconds),
           "max": max(seconds), "seconds": seconds}
    if system is not None:
        out["system_seconds"] = [float(s) for s in system]
    if faults is not None:
        out["minor_faults"] = [int(f) for f in faults]
    return out


def timing_fields(key: str, stats: dict) -> dict:
    """Row fields of a measurement: ``key`` (the median, e.g. ``fit_seconds``), and
    ``key_repeats`` / ``key_min`` / ``key_max``; where the stats have them, each repeat's
    seconds, system seconds and minor page faults (``key_each`` / ``key_system`` /
    ``key_faults``), in the order they ran."""
    out = {key: stats["median"], f"{key}_repeats": stats["repeats"], f"{key}_min": stats["min"],
           f"{key}_max": stats["max"]}
    if "system_seconds" in stats:
        out[f"{key}_each"] = stats["seconds"]
        out[f"{key}_system"] = stats["system_seconds"]
        out[f"{key}_faults"] = stats["minor_faults"]
    return out


def timed_fields(key: str, fn, repeats: int = 1, device="cpu", warmup: int = 0):
    """:func:`repeat_timed` as row fields: ``(result, timing_fields(key, stats))``."""
    out, stats = repeat_timed(fn, repeats, device, warmup)
    return out, timing_fields(key, stats)


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


def _git(where, *args) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def _checkout(where) -> dict:
    """``commit`` (``git rev-parse HEAD``) and ``dirty`` (tracked files changed) of the git
    checkout holding ``where``; ``None`` for both outside one."""
    commit = _git(where, "rev-parse", "HEAD")
    status = _git(where, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance() -> dict:
    """What produced a result file: this checkout's commit and ``dirty`` flag, the svmgpu that
    ran (version, location and the commit of the checkout it was imported from: an editable
    install may point at another tree), the Python / NumPy / SciPy / scikit-learn versions, the
    load average and the time, the command line."""
    import numpy

    info = {**_checkout(ROOT), "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "written_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        import svmgpu

        src = Path(svmgpu.__file__).resolve().parent
        sv = _checkout(src)
        info["svmgpu"] = {"version": getattr(svmgpu, "__version__", None), "path": str(src),
                          "commit": sv["commit"], "dirty": sv["dirty"]}
    except ImportError as exc:
        info["svmgpu"] = {"error": f"{type(exc).__name__}: {exc}"}
    versions = {"python": sys.version.split()[0], "numpy": numpy.__version__}
    for name, module in (("scipy", "scipy"), ("scikit-learn", "sklearn")):
        try:
            versions[name] = __import__(module).__version__
        except ImportError:
            versions[name] = None
    info["versions"] = versions
    info["loadavg_at_write"] = list(os.getloadavg())
    return info


def results_path(name: str, suffix: str = ".json") -> Path:
    """``bench/results/<name><suffix>`` for a bare name; ``name`` itself (suffix replaced) when
    it is a path (contains a directory or ends in ``.json``)."""
    path = Path(name)
    if path.suffix != ".json" and path.parent == Path("."):
        return RESULTS / f"{name}{suffix}"
    return path.with_suffix(suffix)


def write_results(name: str, payload: dict) -> Path:
    """Write ``payload`` as JSON at :func:`results_path` (``bench/results/<name>.json`` for a
    bare name), with its ``provenance`` (:func:`provenance`) added."""
    path = results_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload["provenance"] = provenance()
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


def case_parser(doc: str, *, raw: bool = True):
    """The argument parser of a script that runs each case in a subprocess of itself
    (:func:`run_specs`): its description is ``doc``, with the hidden ``--spec JSON`` of one
    case and ``--repeats`` (processes per case)."""
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(
        description=doc if raw else doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter if raw else argparse.HelpFormatter)
    ap.add_argument("--repeats", type=int, default=1,
                    help="processes per fit (median, min and max recorded)")
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    return ap


def answer_spec(args, run_one) -> bool:
    """In the subprocess of one case (``--spec JSON``): print ``run_one(spec)`` as the JSON
    line :func:`run_specs` reads, and return True (the script then stops)."""
    if not args.spec:
        return False
    print(json.dumps(run_one(json.loads(args.spec))))
    return True


def default_name(prefix: str, device, quick: bool = False, gpu: str = "gpu") -> str:
    """``<prefix>_cpu``, or ``<prefix>_<gpu>`` on a CUDA device; ``_quick`` appended for a
    smoke run."""
    return f"{prefix}_{gpu if str(device).startswith('cuda') else 'cpu'}" + (
        "_quick" if quick else "")


def run_json(argv: list[str], what, **kw) -> dict:
    """Run ``python argv...`` in a fresh process; its last stdout line is a JSON object,
    returned. A failure raises ``SystemExit`` with the end of its stderr printed."""
    res = subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True, **kw)
    if res.returncode != 0:
        print(res.stderr[-5000:], file=sys.stderr)
        raise SystemExit(f"failed: {what}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def merge_repeats(runs: list[dict]) -> dict:
    """One row from the rows of repeated runs of a case: the first run's fields, each
    ``*_seconds`` number replaced by its median over the runs with ``_repeats`` / ``_min`` /
    ``_max`` beside it (:func:`timing_fields`), peak memories (``*_bytes``) their maximum."""
    row = dict(runs[0])
    for key in runs[0]:
        vals = [r.get(key) for r in runs]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            continue
        if key.endswith("_seconds") and f"{key}_repeats" not in runs[0]:
            row.update(timing_fields(key, timing_stats(vals)))
        elif key.endswith("_bytes"):
            row[key] = max(vals)
    return row


def run_specs(script, specs: list[dict], columns: list[str], repeats: int = 1) -> list[dict]:
    """Run ``script --spec JSON`` in a fresh subprocess for each spec (so that peak memory is
    per case), ``repeats`` times in a row, printing each result row as it comes; returns the
    rows, repeated runs merged by :func:`merge_repeats` (``wall_seconds`` added, the wall time
    of each subprocess). A failed case prints its stderr's end and stops the benchmark."""
    rows = []
    for spec in specs:
        runs = []
        for _ in range(max(int(repeats), 1)):
            t0 = time.perf_counter()
            row = run_json([script, "--spec", json.dumps(spec)], spec)
            row["wall_seconds"] = time.perf_counter() - t0
            runs.append(row)
        row = merge_repeats(runs)
        rows.append(row)
        print_table([row], columns)
    return rows
