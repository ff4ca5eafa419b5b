"""Loader of the Covertype (Covtype) data set: UCI ``covtype.data(.gz)`` or LIBSVM binary."""

from __future__ import annotations

import numbers
import os

import numpy as np

from ._common import check_float_dtype, fromstring_strict, read_bytes
from ._svmlight import load_svmlight_bytes

__all__ = [
    "load_covtype",
    "COVTYPE_UCI_URL",
    "COVTYPE_LIBSVM_URL",
    "COVTYPE_N_SAMPLES",
    "COVTYPE_N_FEATURES",
]

COVTYPE_UCI_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/covtype/covtype.data.gz"
COVTYPE_LIBSVM_URL = (
    "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/covtype.libsvm.binary.bz2"
)
COVTYPE_N_SAMPLES = 581_012
COVTYPE_N_FEATURES = 54
_N_COLUMNS = COVTYPE_N_FEATURES + 1

_MISSING_HINT = (
    "Download the Covertype data from UCI: "
    f"{COVTYPE_UCI_URL} (pass the .gz file as is), or LIBSVM's binary version: "
    f"{COVTYPE_LIBSVM_URL}"
)


def _first_data_line(data: bytes) -> bytes:
    for line in data[:65536].split(b"\n"):
        line = line.split(b"#", 1)[0].strip()
        if line:
            return line
    return b""


def _parse_uci_slow(lines: list[bytes], name: str):
    rows = []
    row_lines = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split(b",")
        if len(fields) != _N_COLUMNS:
            raise ValueError(
                f"{name} line {lineno}: expected {_N_COLUMNS} comma-separated columns "
                f"({COVTYPE_N_FEATURES} features and the label), got {len(fields)}"
            )
        row = []
        for col, field in enumerate(fields, start=1):
            text = field.strip().decode("latin-1")
            try:
                if "_" in text:
                    raise ValueError(text)
                row.append(float(text))
            except ValueError:
                raise ValueError(f"{name} line {lineno}, column {col}: {text!r} is not a number") from None
        rows.append(row)
        row_lines.append(lineno)
    table = np.asarray(rows, dtype=np.float64).reshape(-1, _N_COLUMNS)
    return table, np.asarray(row_lines, dtype=np.int64)


def _parse_uci(data: bytes, name: str):
    """Parse the UCI table; returns (table of shape (n, 55), file line of each row)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    data = data.rstrip()
    b = np.frombuffer(data, dtype=np.uint8)
    line_starts = np.concatenate(([0], np.flatnonzero(b == 10) + 1))
    n_lines = line_starts.size
    commas = np.add.reduceat(b == 44, line_starts, dtype=np.int64) if b.size else line_starts
    del b
    table = None
    if np.all(commas == _N_COLUMNS - 1):
        joined = data.replace(b"\n", b",")
        for num_dtype in (np.int64, np.float64):  # integers (the real file) parse faster
            try:
                nums = fromstring_strict(joined, num_dtype, ",")
            except ValueError:
                continue
            if num_dtype is np.int64 and nums.size:
                info = np.iinfo(np.int64)
                if nums.max() == info.max or nums.min() == info.min:
                    continue  # np.fromstring saturates on overflow: reparse as floats
            if nums.size == n_lines * _N_COLUMNS:
                table = nums.reshape(-1, _N_COLUMNS)
            break
    if table is None:
        return _parse_uci_slow(data.split(b"\n"), name)
    return table, None


def load_covtype(path, *, binary=True, positive_class=2, dtype=np.float64):
    """Load the Covertype data set (581,012 samples, 54 features, 7 classes).

    Two files are understood, told apart by their content (compression by the first
    bytes, so names do not matter):

    * UCI's ``covtype.data`` or ``covtype.data.gz``: 55 comma-separated integer columns,
      the 54 features (10 quantitative, 4 wilderness-area and 40 soil-type indicators)
      then the cover type 1-7. Class 2 (Lodgepole Pine) is 48.76% of the rows.
    * LIBSVM's ``covtype.libsvm.binary`` or ``covtype.libsvm.binary.bz2`` (also its
      ``.scale`` variant): the same rows in the svmlight format with labels 1 and 2,
      "class 2 versus the rest". Assumption: LIBSVM's label 2 is UCI class 2 (Lodgepole
      Pine, 283,301 rows) and label 1 the six other classes (297,711 rows), so
      ``positive_class=2`` means the same task for both files. Zero features are
      omitted in that file; ``X`` always has 54 columns.

    Parameters
    ----------
    path : str or os.PathLike
        The downloaded file (see :data:`COVTYPE_UCI_URL`, :data:`COVTYPE_LIBSVM_URL`).
    binary : bool, default=True
        Return ``y`` in {-1, +1}, +1 for ``positive_class`` (UniSVM's "class 2 vs rest").
        ``False`` returns the cover types 1-7; only possible with the UCI file.
    positive_class : int, default=2
        The cover type (1-7) labelled +1 when ``binary=True``; ignored otherwise. With
        the LIBSVM file only 2 is possible.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Floating dtype of ``X`` (the features are integers, exact in both).

    Returns
    -------
    X : ndarray of shape (n_samples, 54), dtype ``dtype``
        Raw (unscaled) features.
    y : ndarray of shape (n_samples,), dtype int64
        -1/+1 if ``binary``, else the cover types 1-7.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist; the message gives the download addresses.
    ValueError
        On a malformed file (message with the line number), labels out of range, or
        ``binary=False`` / ``positive_class != 2`` with the LIBSVM file.
    """
    dt = check_float_dtype(dtype)
    if (
        isinstance(positive_class, bool)
        or not isinstance(positive_class, numbers.Integral)
        or not 1 <= positive_class <= 7
    ):
        raise ValueError(f"positive_class must be a cover type 1-7, got {positive_class!r}")
    positive_class = int(positive_class)
    name = os.fspath(path)
    data = read_bytes(name, missing_hint=_MISSING_HINT)
    first = _first_data_line(data)
    if not first:
        raise ValueError(f"{name}: the file holds no data")

    if b"," in first and b":" not in first:
        table, row_lines = _parse_uci(data, name)
        X = np.ascontiguousarray(table[:, :COVTYPE_N_FEATURES], dtype=dt)
        labels = table[:, COVTYPE_N_FEATURES]
        bad = np.flatnonzero((labels < 1) | (labels > 7) | (labels != np.round(labels)))
        if bad.size:
            k = int(bad[0])
            lineno = int(row_lines[k]) if row_lines is not None else k + 1
            raise ValueError(f"{name} line {lineno}: label {labels[k]:g} is not a cover type 1-7")
    else:
        if not binary:
            raise ValueError(
                f"{name} is in the svmlight format (LIBSVM's covtype.libsvm.binary), which "
                "keeps only 'class 2 vs rest' (labels 1/2); binary=False needs UCI's "
                f"covtype.data(.gz) from {COVTYPE_UCI_URL}"
            )
        if positive_class != 2:
            raise ValueError(
                f"{name} is LIBSVM's binary Covtype file, which only separates class 2 from "
                f"the rest; positive_class={positive_class} needs UCI's covtype.data(.gz) "
                f"from {COVTYPE_UCI_URL}"
            )
        X, labels = load_svmlight_bytes(data, name, COVTYPE_N_FEATURES, True, dt, False)
        bad = np.flatnonzero((labels != 1) & (labels != 2))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"{name}: sample {k + 1} has label {labels[k]:g}; LIBSVM's binary Covtype "
                "file has labels 1 and 2 only"
            )

    if binary:
        y = np.where(labels == positive_class, 1, -1).astype(np.int64)
    else:
        y = labels.astype(np.int64)
    return X, y
