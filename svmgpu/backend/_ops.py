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


def exp_neg_clipped_inplace(z, *, xp):
    """``z := exp(min(z, 0))`` in place where supported; returns the result.

    The clip makes a kernel exponent ``-γ d²`` computed by the expansion
    ``‖x‖² + ‖z‖² − 2xᵀz`` never exceed 0 (squared distances never go negative).
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        np.minimum(z, 0, out=z)
        return np.exp(z, out=z)
    if is_cupy(xp):
        import cupy  # noqa: PLC0415

        cupy.minimum(z, 0, out=z)
        return cupy.exp(z, out=z)
    return xp.exp(xp.minimum(z, xp.zeros((), dtype=z.dtype)))


