"""Elementwise and product helpers that reuse memory where the backend allows it."""

from __future__ import annotations

from svmgpu.backend._device import is_cupy, is_numpy


def matmul_into(a, b, out, *, xp):
    """``out[...] = a @ b`` without a temporary on NumPy; returns ``out``."""
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        return np.matmul(a, b, out=out)
    out[...] = xp.matmul(a, b)
    return out


#: log of the smallest normal number per dtype char (float64 'd', float32 'f').
_LOG_TINY = {"d": -708.3964185322641, "f": -87.33654475055310, "e": -9.7}


def exp_neg_clipped_inplace(z, *, xp):
    """``z := exp(min(z, 0))`` in place where supported; returns the result.

    The clip makes a kernel exponent ``-γ d²`` computed by the expansion
    ``‖x‖² + ‖z‖² − 2xᵀz`` never exceed 0 (squared distances never go negative). On NumPy the
    exponent is also clipped from below at ``log(smallest normal)``: ``exp`` of smaller values
    returns subnormals or 0 some 20x slower, and the change is below the smallest normal float.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        np.clip(z, _LOG_TINY[z.dtype.char], 0, out=z)
        return np.exp(z, out=z)
    if is_cupy(xp):
        import cupy  # noqa: PLC0415

        cupy.minimum(z, 0, out=z)
        return cupy.exp(z, out=z)
    return xp.exp(xp.minimum(z, xp.zeros((), dtype=z.dtype)))


