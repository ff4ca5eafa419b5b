"""Whether an input is a Dask collection, and Dask itself on demand: the two facts about Dask
that every layer may ask (the Dask engine is :mod:`svmgpu.distributed`). Dask is never
imported here unless the caller already did, or asks for it."""

from __future__ import annotations

import sys


def is_dask_collection(x) -> bool:
    """Whether ``x`` is a Dask collection (without importing Dask when it is not loaded)."""
    if "dask" not in sys.modules:
        return False
    from dask.base import is_dask_collection as _is  # noqa: PLC0415

    return bool(_is(x))


def require_dask(what="Dask input"):
    """Import ``dask.array``, or raise naming the extra that installs it."""
    try:
        import dask.array  # noqa: F401, PLC0415
    except ImportError as exc:  # pragma: no cover - the test extra installs Dask
        raise ImportError(f"{what} needs Dask, the `dask` extra: pip install -e \".[dask]\" in a "
                          "checkout of svmgpu, or pip install \"dask[array]\" distributed") from exc


__all__ = ["is_dask_collection", "require_dask"]
