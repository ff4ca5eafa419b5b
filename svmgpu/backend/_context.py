"""The compute context: namespace, device, dtype and byte budget, resolved once per public call."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from svmgpu.backend._device import Device, array_device, get_device, is_cupy, is_numpy, numpy_dtype
from svmgpu.backend._memory import resolve_budget


@dataclass(frozen=True)
class ComputeContext:
    """Where and how a computation runs, resolved once by a public entry point and passed down.

    Attributes
    ----------
    xp : namespace
        The array-API namespace (array-api-compat's wrapper for NumPy and CuPy).
    device : Device
        The device holding the data (:class:`svmgpu.backend.Device`).
    dtype : dtype
        The namespace's floating dtype of the features (float32 or float64); r × r algebra and
        accumulations are float64 whatever this is.
    budget_bytes : int
        Bytes a blocked computation may hold at once (``memory_budget``, else a fraction of
        the device's free memory read once, here).

    Nothing below an entry point looks the namespace, the device or the free memory up again.
    """

    xp: object
    device: Device
    dtype: object
    budget_bytes: int

    @property
    def kind(self) -> str:
        """``"numpy"``, ``"cupy"`` or ``"generic"`` (any other array-API namespace)."""
        if is_numpy(self.xp):
            return "numpy"
        if is_cupy(self.xp):
            return "cupy"
        return "generic"

    @property
    def native_device(self):
        """The device object the namespace's creation functions take."""
        return self.device.native_device

    def zeros(self, shape, *, dtype=None):
        return self.xp.zeros(shape, dtype=self.dtype if dtype is None else dtype,
                             device=self.native_device)


def compute_context(X=None, *, device=None, dtype=None, memory_budget=None) -> ComputeContext:
    """Build the :class:`ComputeContext` of a public call.

    Parameters
    ----------
    X : array, optional
        The input. With ``device`` None (or ``"auto"``) and a device array (CuPy, or any other
        array-API namespace such as array-api-strict or PyTorch), the computation runs where
        ``X`` lives; host input (NumPy, lists) runs on ``"auto"``'s choice.
    device : {None, "auto", "cpu", "cuda", "cuda:N"} or Device
    dtype : {None, "float32", "float64"} or dtype
        None: X's dtype when it is float32 or float64, else float64.
    memory_budget : int, str or None
        Bytes (``"2GB"``); None reads the device's free memory once.
    """
    if X is not None and device in (None, "auto"):
        dev = array_device(X)
        if dev.kind == "cpu" and device == "auto":
            dev = get_device("auto")
    else:
        dev = get_device("auto" if device is None else device)
    xp = dev.xp
    if dtype is None:
        name = numpy_dtype(X.dtype).name if X is not None and hasattr(X, "dtype") else "float64"
        fdtype = getattr(xp, name if name in ("float32", "float64") else "float64")
    else:
        fdtype = floating_dtype(dtype, xp, what="dtype")
    return ComputeContext(xp, dev, fdtype, resolve_budget(memory_budget, dev))


def floating_dtype(dtype, xp, *, what):
    """The namespace's float32 or float64 of ``dtype`` (a name or a dtype); ValueError naming
    the parameter ``what`` for any other."""
    name = dtype if isinstance(dtype, str) else numpy_dtype(dtype).name
    if name not in ("float32", "float64"):
        raise ValueError(f"{what} must be None, 'float32' or 'float64', got {dtype!r}")
    return getattr(xp, name)


def check_positive(name, value):
    """``value`` as a float where it is a positive finite real number (a bool is not);
    ValueError naming the parameter ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)
