"""Memory budgets: how many bytes a blocked computation may hold at once."""

from __future__ import annotations

import os
import re

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_BYTES_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")

#: Fraction of the free memory a computation may use when the user sets no budget: half of the
#: host's (shared with the system and other programs), most of a GPU's (held by this process;
#: at half, a rank-20,000 Covtype fit on an 80 GB H100 recomputed its features every pass).
DEFAULT_SLACK = 0.5
DEVICE_SLACK = 0.8


def parse_bytes(value) -> int:
    """Parse a byte count: an int/float, or a string such as ``"2GB"``, ``"512MiB"``, ``"1e9"``.

    Raises
    ------
    ValueError
        For a malformed string, an unknown unit, or a value that is not positive.
    """
    if isinstance(value, bool):
        raise ValueError(f"memory_budget must be a byte count or a string like '2GB', got {value!r}")
    if isinstance(value, (int, float)):
        n = float(value)
    elif isinstance(value, str):
        m = _BYTES_RE.match(value)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(
                f"cannot parse memory_budget {value!r}: use bytes or a string like '2GB', '512MiB'"
            )
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    else:
        raise ValueError(
            f"memory_budget must be a byte count or a string like '2GB', got {type(value).__name__}"
        )
    if not n > 0 or n != n or n == float("inf"):
        raise ValueError(f"memory_budget must be a positive, finite number of bytes, got {value!r}")
    return int(n)


def format_bytes(n) -> str:
    """A byte count for messages: ``"512 bytes"``, ``"1.5 MB"``, ``"2.40 GB"`` (never "0.00 GB")."""
    n = float(n)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            v = n / size
            return f"{v:.2f} {unit}" if v < 10 else f"{v:.1f} {unit}" if v < 100 else \
                f"{v:.0f} {unit}"
    return f"{int(n)} bytes"


def _host_available() -> int:
    """MemAvailable of /proc/meminfo (its first lines, read unbuffered: 11 µs against 16 µs
    for a text file's line iterator, once per fit), else the free pages, else 4 GiB."""
    try:
        fd = os.open("/proc/meminfo", os.O_RDONLY)
        try:
            head = os.read(fd, 4096)
        finally:
            os.close(fd)
        for line in head.split(b"\n"):
            if line.startswith(b"MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def available_memory(device) -> int:
    """Free bytes on ``device``: CuPy's free device memory plus what CuPy's memory pool holds
    but does not use; host MemAvailable for the CPU and for other array-API namespaces (whose
    free memory has no standard query)."""
    from svmgpu.backend._device import _import_cupy, get_device  # noqa: PLC0415

    device = get_device(device)
    if device.kind != "cuda":
        return _host_available()
    cupy = _import_cupy()[0]
    with cupy.cuda.Device(device.index):
        free, _total = cupy.cuda.runtime.memGetInfo()
        pool = cupy.get_default_memory_pool()
        return int(free + pool.free_bytes())


def resolve_budget(memory_budget, device, *, slack: float | None = None) -> int:
    """The byte budget of one computation: the user's ``memory_budget`` when given, else the
    free memory of ``device`` times ``slack`` (default: ``DEVICE_SLACK`` on a CUDA device,
    ``DEFAULT_SLACK`` elsewhere)."""
    if memory_budget is not None:
        return parse_bytes(memory_budget)
    from svmgpu.backend._device import get_device  # noqa: PLC0415

    device = get_device(device)
    if slack is None:
        slack = DEVICE_SLACK if device.kind == "cuda" else DEFAULT_SLACK
    return max(int(available_memory(device) * slack), 1)


def block_rows(n_cols: int, itemsize: int, budget: int, *, n_buffers: int = 1,
               max_rows: int | None = None) -> int:
    """Rows of an ``(rows, n_cols)`` block that fit ``budget`` bytes, with ``n_buffers`` such
    blocks alive at once.

    Raises
    ------
    MemoryError
        When not even one row fits; the message says how much is needed.
    """
    per_row = max(int(n_cols), 1) * int(itemsize) * max(int(n_buffers), 1)
    rows = int(budget) // per_row
    if rows < 1:
        raise MemoryError(
            f"the memory budget left for this step ({format_bytes(budget)}) cannot hold one "
            f"block row ({format_bytes(per_row)}: {n_cols} columns x {n_buffers} buffer(s) x "
            f"{itemsize} bytes); raise memory_budget (e.g. memory_budget='1GB') or lower the rank"
        )
    if max_rows is not None:
        rows = min(rows, max(int(max_rows), 1))
    return rows


def check_fits(n_bytes: int, budget: int, *, what: str, hint: str) -> None:
    """Raise a MemoryError when ``n_bytes`` for ``what`` exceed ``budget``; the message ends
    with ``hint`` (what to change) and "or raise memory_budget"."""
    if n_bytes > budget:
        raise MemoryError(
            f"{what} needs about {format_bytes(n_bytes)}, more than the memory budget "
            f"({format_bytes(budget)}); {hint}, or raise memory_budget"
        )


def peak_host_bytes() -> int | None:
    """Peak resident memory of this process (VmHWM of /proc/self/status), in bytes."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource  # noqa: PLC0415

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, OSError):
        return None
