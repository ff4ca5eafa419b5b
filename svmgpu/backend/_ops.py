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


#: Lower clip of a kernel exponent per dtype char (float64 'd', float32 'f', float16 'e'): a
#: little above log(smallest normal) (−708.4, −87.3, −9.7). NumPy's vectorized ``exp`` leaves
#: its fast path below about −707.8 (float64) and −87.0 (float32) and then runs 15-30x slower
#: per element, and a local kernel (large γ) puts most of a block there. The change to a kernel
#: value is below exp(−700) ≈ 1e-304 (float64), exp(−86) ≈ 4e-38 (float32).
_EXP_FLOOR = {"d": -700.0, "f": -86.0, "e": -9.7}


def power_inplace(z, exponent: int, *, xp):
    """``z ** exponent`` (a positive integer), in place on NumPy; returns the result."""
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        return np.power(z, exponent, out=z)
    return z**exponent


def fortran_order(a, *, xp):
    """``a`` in column-major order on NumPy (what BLAS ``trmm`` reads without a copy; do it
    once, not per block); other namespaces return ``a``."""
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        return np.asfortranarray(a)
    return a


def exp_neg_clipped_inplace(z, *, xp):
    """``z := exp(min(z, 0))`` in place where supported; returns the result.

    The clip makes a kernel exponent ``-γ d²`` computed by the expansion
    ``‖x‖² + ‖z‖² − 2xᵀz`` never exceed 0 (squared distances never go negative). On NumPy the
    exponent is also clipped from below at ``_EXP_FLOOR`` (−700 for float64): ``exp`` of smaller
    values is 15-30x slower per element (subnormal results and NumPy's slow path near them),
    and the change is below 1e-304.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        np.maximum(z, _EXP_FLOOR[z.dtype.char], out=z)  # (np.clip has a slow Python wrapper)
        np.minimum(z, 0.0, out=z)
        return np.exp(z, out=z)
    if is_cupy(xp):
        import cupy  # noqa: PLC0415

        cupy.minimum(z, 0, out=z)
        return cupy.exp(z, out=z)
    return xp.exp(xp.minimum(z, xp.zeros((), dtype=z.dtype, device=z.device)))


def nonzero_indices(mask, count: int, *, xp):
    """Indices of the ``True`` entries of the 1-D boolean ``mask``, ascending, given their
    number ``count`` (known to the caller, e.g. from a batched read of several counts).

    ``xp.nonzero`` must learn the count itself, which on a GPU is a device synchronisation;
    on CuPy the positions come from a cumulative sum and one scatter, with no synchronisation.
    NumPy uses ``flatnonzero`` (and checks ``count``); other namespaces ``nonzero``.
    """
    if is_numpy(xp):
        import numpy as np  # noqa: PLC0415

        idx = np.flatnonzero(mask)
        if idx.shape[0] != count:
            raise ValueError(f"nonzero_indices: mask has {idx.shape[0]} entries set, not {count}")
        return idx
    if not is_cupy(xp):  # the standard has no integer-array assignment: data-dependent nonzero
        return xp.nonzero(mask)[0]
    m = mask.shape[0]
    pos = xp.cumulative_sum(xp.astype(mask, xp.int64)) - 1
    pos = xp.where(mask, pos, xp.full_like(pos, count))  # unset entries land in a spare slot
    out = xp.empty((count + 1,), dtype=xp.int64, device=mask.device)
    out[pos] = xp.arange(m, dtype=xp.int64, device=mask.device)
    return out[:count]


def fetch_scalars(*values, xp) -> list[float]:
    """Read several 0-d device arrays (or Python numbers) to the host in one transfer: one
    synchronisation instead of one per ``float(x)``."""
    from svmgpu.backend._device import to_numpy  # noqa: PLC0415

    arrs = [v for v in values if not isinstance(v, (int, float))]
    if not arrs:
        return [float(v) for v in values]
    if not (is_numpy(xp) or is_cupy(xp)):  # no standard bulk read: one scalar read each
        return [float(v) for v in values]
    dev = getattr(arrs[0], "device", None)
    stacked = xp.stack([xp.asarray(v, dtype=xp.float64, device=dev) if isinstance(v, (int, float))
                        else xp.astype(xp.reshape(v, ()), xp.float64) for v in values])
    return [float(v) for v in to_numpy(stacked).tolist()]


def clip(x, *, min=None, max=None, xp):  # noqa: A002 - the standard's names
    """``clip(x, min, max)`` for Python-number bounds, as ``maximum`` then ``minimum``.

    array-api-compat's ``clip`` for CuPy assigns through boolean masks, and each masked read or
    write is a ``nonzero``: a device synchronisation. Measured on an H100, that was four of the
    Newton loop's ~6.5 device→host reads per iteration (two clips a step). ``maximum``/
    ``minimum`` with a Python scalar are one elementwise kernel each; NaN propagates as in clip.
    """
    if min is not None:
        x = xp.maximum(x, min)
    if max is not None:
        x = xp.minimum(x, max)
    return x


def set_rows(base, rows, values, *, xp):
    """``base`` with ``base[rows] = values`` (rows along the first axis); returns the result.

    NumPy and CuPy assign in place. The array API standard has no integer-array assignment, so
    other namespaces gather instead: each position finds its entry of the sorted ``rows`` with
    ``searchsorted`` and takes ``values`` where it hits (a new array; O(size of base)).
    ``rows``: distinct integer indices on ``base``'s device.
    """
    if is_numpy(xp) or is_cupy(xp):
        base[rows, ...] = values
        return base
    if rows.shape[0] == 0:
        return base
    order = xp.argsort(rows)
    rows, values = xp.take(rows, order), xp.take(values, order, axis=0)
    i = xp.arange(base.shape[0], dtype=rows.dtype, device=base.device)
    pos = xp.minimum(xp.searchsorted(rows, i), rows.shape[0] - 1)
    hit = xp.take(rows, pos) == i
    if base.ndim > 1:
        hit = xp.reshape(hit, (-1,) + (1,) * (base.ndim - 1))
    return xp.where(hit, xp.take(values, pos, axis=0), base)
