"""Device selection, namespace resolution and moves between host and GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import array_api_compat
import numpy as np

_CUPY_HINT = (
    "install CuPy, the `cuda` extra (in a checkout of svmgpu: `pip install -e \".[cuda]\"`; "
    "or `pip install \"cupy-cuda12x[ctk]\"`, `cupy-cuda13x[ctk]` for a CUDA 13 driver), "
    "or pass device='cpu'"
)


@lru_cache(maxsize=1)
def _import_cupy():
    """Return ``(cupy, None)`` or ``(None, reason)`` without raising."""
    try:
        import cupy  # noqa: PLC0415
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy is installed but CUDA is unusable ({type(exc).__name__}: {exc})"
    if n < 1:
        return None, "CuPy is installed but sees no CUDA GPU"
    return cupy, None


def cupy_available() -> bool:
    """Whether CuPy is importable and sees at least one CUDA GPU."""
    return _import_cupy()[0] is not None


@dataclass(frozen=True)
class Device:
    """Where computation runs: ``Device("cpu")`` (NumPy), ``Device("cuda", index)`` (CuPy), or
    ``Device("array_api", namespace=xp, native=d)``: device ``d`` of any other array-API
    namespace ``xp`` (e.g. array-api-strict's ``Device("device1")``, a PyTorch device), where
    the arrays of a caller that passes such arrays stay.

    ``native`` is the namespace's own device object (what ``xp.asarray(..., device=native)``
    takes); for NumPy it is ``"cpu"``, for CuPy ``cupy.cuda.Device(index)``.
    """

    kind: str
    index: int = 0
    namespace: object = None
    native: object = None

    def __copy__(self):
        return self  # immutable (and holds a module, which cannot be copied)

    def __deepcopy__(self, memo):
        return self

    def __str__(self) -> str:
        if self.kind == "cpu":
            return "cpu"
        if self.kind == "cuda":
            return f"cuda:{self.index}"
        return f"{getattr(self.namespace, '__name__', self.namespace)}:{self.native}"

    @property
    def xp(self):
        """The array namespace (array-API compatible) for this device."""
        if self.kind == "cpu":
            import array_api_compat.numpy as nxp  # noqa: PLC0415

            return nxp
        if self.kind == "cuda":
            import array_api_compat.cupy as cxp  # noqa: PLC0415

            return cxp
        return self.namespace

    @property
    def native_device(self):
        """The device object arrays of :attr:`xp` take as ``device=``."""
        if self.kind == "cpu":
            return "cpu"
        if self.kind == "cuda":
            return _import_cupy()[0].cuda.Device(self.index)
        return self.native

    def synchronize(self):
        """Wait for the device's queued work (CuPy's current stream; other devices: nothing to
        wait for), so that a timer around it measures the work, not its launch."""
        if self.kind == "cuda":
            _import_cupy()[0].cuda.get_current_stream().synchronize()

    def __enter__(self):
        if self.kind == "cuda":
            cupy = _import_cupy()[0]
            self._ctx = cupy.cuda.Device(self.index)
            self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.kind == "cuda":
            self._ctx.__exit__(*exc)
        return False


_DEVICE_RE = re.compile(r"^(cpu|cuda|gpu|auto)(?::(\d+))?$")


def get_device(device="auto") -> Device:
    """Resolve a device specification.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"} or Device
        ``"auto"`` picks the first CUDA GPU when CuPy sees one, else the CPU. ``"gpu"`` is an
        alias of ``"cuda"``.

    Returns
    -------
    Device

    Raises
    ------
    ValueError
        For an unknown specification.
    RuntimeError
        For ``"cuda"`` when CuPy is missing or sees no GPU (the message says how to fix it).
    """
    if isinstance(device, Device):
        return device
    if device is None:
        device = "auto"
    if not isinstance(device, str):
        raise ValueError(
            f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r} "
            f"of type {type(device).__name__}"
        )
    m = _DEVICE_RE.match(device.strip().lower())
    if m is None:
        raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    kind, index = m.group(1), m.group(2)
    if kind == "cpu":
        if index not in (None, "0"):
            raise ValueError(f"unknown device {device!r}: the CPU is 'cpu'")
        return Device("cpu")
    if kind == "auto":
        return Device("cuda", 0) if cupy_available() else Device("cpu")
    cupy, reason = _import_cupy()
    if cupy is None:
        raise RuntimeError(f"device={device!r} needs a CUDA GPU, but {reason}; {_CUPY_HINT}.")
    idx = int(index or 0)
    n = cupy.cuda.runtime.getDeviceCount()
    if idx >= n:
        raise RuntimeError(f"device={device!r} does not exist: CuPy sees {n} GPU(s)")
    return Device("cuda", idx)


def get_namespace(*arrays):
    """The array-API namespace of ``arrays`` (``array_api_compat.array_namespace``); a
    sparse matrix counts as an array of its data's namespace (SciPy: NumPy, cupyx: CuPy)."""
    from svmgpu.backend._sparse import is_sparse  # noqa: PLC0415

    return array_api_compat.array_namespace(*[a.data if is_sparse(a) else a for a in arrays])


def is_numpy(xp) -> bool:
    """Whether ``xp`` is NumPy (plain or array-api-compat wrapped)."""
    return array_api_compat.is_numpy_namespace(xp)


def is_cupy(xp) -> bool:
    """Whether ``xp`` is CuPy (plain or array-api-compat wrapped)."""
    return array_api_compat.is_cupy_namespace(xp)


def is_foreign_array(x) -> bool:
    """Whether ``x`` is an array of an array-API namespace other than NumPy and CuPy
    (array-api-strict, PyTorch, ...)."""
    if isinstance(x, (type, list, tuple, int, float, complex, bool)) or x is None:
        return False
    if array_api_compat.is_numpy_array(x) or array_api_compat.is_cupy_array(x):
        return False
    # (NumPy scalars count as arrays for array-api-compat)
    return array_api_compat.is_array_api_obj(x) and not isinstance(x, np.generic)


def array_device(x) -> Device:
    """The :class:`Device` holding array ``x`` (NumPy and anything array-like: CPU)."""
    if array_api_compat.is_cupy_array(x):
        return Device("cuda", int(x.device.id))
    from svmgpu.backend._sparse import is_device_sparse  # noqa: PLC0415

    if is_device_sparse(x):
        return Device("cuda", int(x.data.device.id))
    if is_foreign_array(x):
        return Device("array_api", namespace=array_api_compat.array_namespace(x),
                      native=array_api_compat.device(x))
    return Device("cpu")


def to_numpy(x):
    """Copy (or view) ``x`` as a NumPy array on the host.

    CuPy arrays are copied from the GPU; arrays of other namespaces go through
    ``numpy.asarray`` only, so an array on a non-host device (array-api-strict's
    ``Device("device1")``, a CUDA tensor) raises instead of being copied behind the caller's back
    (DLPack would copy it silently). An algorithm that needs the host says so with
    :func:`to_host`.
    """
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if array_api_compat.is_numpy_array(x):
        return x
    return np.asarray(x)


def to_host(x, *, why: str):
    """A NumPy copy of ``x`` from any device: the documented host round trips of the library.

    ``why`` names the reason (it is part of the contract, and what a reader greps for). Unlike
    :func:`to_numpy`, a foreign array is first moved to its namespace's default device.
    """
    if not why:
        raise ValueError("to_host needs the reason for the host round trip")
    if is_foreign_array(x):
        xp = array_api_compat.array_namespace(x)
        x = xp.asarray(x, device=xp.__array_namespace_info__().default_device())
    return to_numpy(x)


def to_device(x, device):
    """Move ``x`` to ``device`` (a spec or :class:`Device`); no copy when it is already there.

    Host data (NumPy arrays, lists, scalars) may go anywhere; a device array moves only to the
    host through :func:`to_numpy` (which refuses a non-host foreign array) or between CUDA
    devices.
    """
    device = get_device(device)
    if device.kind == "cpu":
        return to_numpy(x)
    if device.kind == "array_api":
        xp = device.namespace
        if is_foreign_array(x) and array_api_compat.device(x) == device.native and \
                array_api_compat.array_namespace(x) is xp:
            return x
        return xp.asarray(x if is_foreign_array(x) else to_numpy(x), device=device.native)
    cupy = _import_cupy()[0]
    if array_api_compat.is_cupy_array(x) and int(x.device.id) == device.index:
        return x
    with cupy.cuda.Device(device.index):
        return cupy.asarray(to_numpy(x) if not array_api_compat.is_cupy_array(x) else x)


def asarray(x, *, device, dtype=None):
    """``x`` as an array on ``device`` with ``dtype`` (None keeps the dtype). A sparse matrix
    stays sparse (CSR): SciPy on the CPU, ``cupyx.scipy.sparse`` on a GPU."""
    from svmgpu.backend._sparse import is_sparse, sparse_to  # noqa: PLC0415

    device = get_device(device)
    if is_sparse(x):
        return sparse_to(x, device, x.dtype if dtype is None else dtype)
    x = to_device(x, device)
    if dtype is not None and x.dtype != dtype:
        x = device.xp.astype(x, dtype)
    return x


def random_subset(n: int, k: int, *, seed, device, sort=True):
    """``k`` distinct indices drawn uniformly from ``range(n)``, sorted, on ``device``.

    Drawn on the host with NumPy's generator seeded by ``seed`` and uploaded (k integers, host
    to device only): every backend then uses the same subset, which is what makes a GPU fit
    reproduce the CPU fit (same landmarks, same presolve rows). ``sort=False`` keeps the order
    of the draw, whose every prefix is a uniform draw too (nested sets of landmarks).
    """
    idx = np.random.default_rng(seed).choice(n, size=k, replace=False)
    if sort:
        idx = np.sort(idx)
    return to_device(idx.astype(np.int64), device)


def random_uniforms(k: int, *, seed) -> list[float]:
    """``k`` numbers drawn uniformly from [0, 1) by NumPy's generator seeded by ``seed``, on
    the host: the draws of a sampling done on the device (k-means++ locates each draw in a
    cumulative sum there), the same on every backend."""
    return np.random.default_rng(seed).random(k).tolist()


def host_array(values, dtype):
    """A NumPy array of host values (per-problem iteration counts, flags, path summaries): what
    scikit-learn's conventions expect of fitted metadata, whatever the fit's device."""
    return np.asarray(values, dtype=dtype)


def seed_from(random_state) -> int:
    """A reproducible int seed drawn from ``random_state`` (None: 0)."""
    if random_state is None:
        return 0
    return int(np.random.default_rng(random_state).integers(2**31))


def float_eps(dtype) -> float:
    """Machine epsilon of a floating dtype of any namespace."""
    return float(np.finfo(numpy_dtype(dtype)).eps)


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype of an array dtype of any namespace (NumPy, CuPy, array-api-strict)."""
    try:
        return np.dtype(dtype)
    except TypeError:  # array-api-strict dtypes print as "array_api_strict.float64"
        return np.dtype(str(dtype).split(".")[-1])
