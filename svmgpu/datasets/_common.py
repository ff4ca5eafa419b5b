"""Shared helpers of :mod:`svmgpu.datasets`: random state, file reading, number parsing."""

from __future__ import annotations

import bz2
import gzip
import lzma
import numbers
import os
import warnings

import numpy as np

__all__ = ["check_random_state", "read_bytes", "fromstring_strict", "check_float_dtype"]

_GZIP_MAGIC = b"\x1f\x8b"
_BZ2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.BitGenerator,
        numpy.random.Generator or numpy.random.RandomState
        ``None`` draws fresh entropy; an int (or seed sequence, bit generator) seeds a new
        generator; a ``Generator`` is used as is (and advanced); a legacy ``RandomState``
        seeds a new generator with one draw from it.

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        seed = random_state.randint(0, np.iinfo(np.int64).max, dtype=np.int64)
        return np.random.default_rng(int(seed))
    if random_state is None or isinstance(
        random_state, (numbers.Integral, np.random.SeedSequence, np.random.BitGenerator)
    ):
        if isinstance(random_state, bool):
            raise TypeError("random_state must be None, an int or a numpy random generator, got a bool")
        return np.random.default_rng(random_state)
    raise TypeError(
        "random_state must be None, an int, a numpy.random.Generator, SeedSequence, "
        f"BitGenerator or RandomState; got {type(random_state).__name__}"
    )


def check_float_dtype(dtype) -> np.dtype:
    """Return ``np.dtype(dtype)`` if it is float32 or float64, else raise ``ValueError``."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dt}")
    return dt


def read_bytes(path, *, missing_hint: str = "") -> bytes:
    """Read a whole file, decompressing gzip, bzip2 or xz data (detected by magic bytes).

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    missing_hint : str, optional
        Appended to the message of the ``FileNotFoundError`` raised when the file is absent.

    Returns
    -------
    bytes
        The (decompressed) content.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file looks compressed but cannot be decompressed.
    """
    name = os.fspath(path)
    if not os.path.exists(name):
        msg = f"no such file: {name!r}"
        if missing_hint:
            msg = f"{msg}. {missing_hint}"
        raise FileNotFoundError(msg)
    with open(name, "rb") as fh:
        raw = fh.read()
    try:
        if raw.startswith(_GZIP_MAGIC):
            return gzip.decompress(raw)
        if raw.startswith(_BZ2_MAGIC):
            return bz2.decompress(raw)
        if raw.startswith(_XZ_MAGIC):
            return lzma.decompress(raw)
    except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:
        raise ValueError(f"{name}: cannot decompress the file ({exc})") from exc
    return raw


def open_text_for_writing(path):
    """Open ``path`` for writing text, compressing by suffix (``.gz``, ``.bz2``, ``.xz``)."""
    name = os.fspath(path)
    lower = name.lower()
    if lower.endswith(".gz"):
        return gzip.open(name, "wt", encoding="utf-8", newline="\n")
    if lower.endswith(".bz2"):
        return bz2.open(name, "wt", encoding="utf-8", newline="\n")
    if lower.endswith(".xz"):
        return lzma.open(name, "wt", encoding="utf-8", newline="\n")
    return open(name, "w", encoding="utf-8", newline="\n")


def fromstring_strict(data, dtype, sep: str):
    """``np.fromstring(data, dtype, sep=sep)`` that raises ``ValueError`` on unparsable text.

    Older NumPy versions only warn (``DeprecationWarning``) and returns the numbers read so far;
    the warning is turned into an error here so that every NumPy version behaves alike.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.fromstring(data, dtype=dtype, sep=sep)
        except DeprecationWarning as exc:
            raise ValueError(str(exc)) from exc
