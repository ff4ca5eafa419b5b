"""Reader and writer of the LIBSVM / svmlight text format (plain, gzip, bzip2 or xz).

Format: one sample a line, ``<label> [qid:<int>] <index>:<value> <index>:<value> ...``,
tokens separated by spaces or tabs, indices strictly increasing integers (1-based unless
the file is zero-based), ``#`` starting a comment that runs to the end of the line, blank
lines ignored.
"""

from __future__ import annotations

import operator
import os
import re

import numpy as np
import scipy.sparse as sp

from ._common import (
    _BZ2_MAGIC,
    _GZIP_MAGIC,
    _XZ_MAGIC,
    check_float_dtype,
    fromstring_strict,
    open_text_for_writing,
    read_bytes,
)

__all__ = ["load_svmlight", "dump_svmlight"]

_COMMENT_RE = re.compile(rb"#[^\n]*")
_MAX_INDEX_DIGITS = 15  # below 2**53: exact in float64 and int64


class _Parsed:
    """Raw parse: labels, CSR structure with the indices as written, file line of each row."""

    __slots__ = ("labels", "indptr", "indices", "values", "row_lines")

    def __init__(self, labels, indptr, indices, values, row_lines):
        self.labels = labels
        self.indptr = indptr
        self.indices = indices
        self.values = values
        self.row_lines = row_lines


def _empty_parse() -> _Parsed:
    return _Parsed(
        np.empty(0, np.float64),
        np.zeros(1, np.int64),
        np.empty(0, np.int64),
        np.empty(0, np.float64),
        np.empty(0, np.int64),
    )


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True  # what np.fromstring(sep=" ") skips
_MAX_INT_DIGITS = 18  # np.fromstring saturates int64 silently beyond this


def _parse_numbers(buf: bytes, max_token_len: int):
    """Parse whitespace-separated numbers: fast int64 first, float64 when that fails."""
    if max_token_len <= _MAX_INT_DIGITS:
        try:
            return fromstring_strict(buf, np.int64, " ").astype(np.float64)
        except ValueError:
            pass  # not all integers: fall through to the float parser
    return fromstring_strict(buf, np.float64, " ")


def _parse_fast(data: bytes) -> _Parsed | None:
    """Vectorized parse of well-formed data; ``None`` when anything looks unusual.

    Never accepts malformed input: every token is checked to be a label (first token of a
    line, no ':') or ``digits:number`` (exactly one ':', not at either end); numbers are
    parsed by ``np.fromstring``, which fails on anything that is not a number. ``None``
    sends the caller to the line-by-line parser, which either parses the oddity or raises
    an error naming the line.
    """
    if b"#" in data:
        data = _COMMENT_RE.sub(b"", data)
    if b"qid:" in data:
        return None
    b = np.frombuffer(data, dtype=np.uint8)
    if b.size == 0:
        return _empty_parse()

    # Tokens: maximal runs of non-whitespace bytes.
    ws = _WHITESPACE[b]
    start_mask = ~ws
    start_mask[1:] &= ws[:-1]
    end_mask = ~ws
    end_mask[:-1] &= ws[1:]
    del ws
    starts = np.flatnonzero(start_mask)
    ends = np.flatnonzero(end_mask)  # inclusive
    del start_mask, end_mask
    n_tok = starts.size
    if n_tok == 0:
        return _empty_parse()

    # Lines and the tokens each holds; a row is a line with at least one token.
    line_starts = np.flatnonzero(b == 10) + 1
    line_starts = np.concatenate(([0], line_starts))
    line_tok = np.searchsorted(starts, line_starts)  # index of each line's first token
    per_line = np.diff(line_tok, append=n_tok)
    row_lines = np.flatnonzero(per_line) + 1
    per_row = per_line[row_lines - 1]
    first = np.zeros(n_tok, dtype=bool)
    first[np.cumsum(per_row) - per_row] = True
    pair = ~first

    # Exactly one ':' inside each pair token, none elsewhere: colons and pair tokens
    # are both sorted, so equal counts and colon k strictly inside pair token k suffice.
    colons = np.flatnonzero(b == 58)
    pstart = starts[pair]
    pend = ends[pair]
    if colons.size != pstart.size or np.any(colons <= pstart) or np.any(colons >= pend):
        return None

    # Feature indices: the digits before each colon.
    lens = colons - pstart
    if lens.size and lens.max() > _MAX_INDEX_DIGITS:
        return None
    total = int(lens.sum())
    offsets = np.cumsum(lens) - lens
    pos = np.arange(total, dtype=np.int64) - np.repeat(offsets - pstart, lens)
    digits = b[pos].astype(np.int64) - 48
    if np.any((digits < 0) | (digits > 9)):
        return None
    if total:
        place = np.repeat(colons, lens) - pos - 1
        indices = np.add.reduceat(digits * 10**place, offsets)
    else:
        indices = np.empty(0, dtype=np.int64)

    # Labels and values: blank out the 'index:' parts, parse one number per token.
    buf = b.copy()
    buf[pos] = 32
    buf[colons] = 32
    longest = 0
    if n_tok:
        longest = int((ends[first] - starts[first]).max()) + 1
    if colons.size:
        longest = max(longest, int((pend - colons).max()))
    try:
        numbers = _parse_numbers(buf.tobytes(), longest)
    except ValueError:
        return None
    if numbers.size != n_tok:
        return None
    indptr = np.zeros(row_lines.size + 1, dtype=np.int64)
    np.cumsum(per_row - 1, out=indptr[1:])
    return _Parsed(numbers[first], indptr, indices, numbers[pair], row_lines)


def _float_token(token: str) -> float:
    if "_" in token:  # Python's float() accepts '1_0'; the format does not
        raise ValueError(token)
    return float(token)


def _line_error(name: str, lineno: int, msg: str) -> ValueError:
    return ValueError(f"{name} line {lineno}: {msg}")


def _parse_slow(data: bytes, name: str) -> _Parsed:
    """Line-by-line parse with precise error messages (``name line N: ...``)."""
    text = data.decode("latin-1")
    labels: list[float] = []
    row_ends: list[int] = []
    indices: list[int] = []
    values: list[float] = []
    row_lines: list[int] = []

    for lineno, line in enumerate(text.split("\n"), start=1):
        cut = line.find("#")
        if cut >= 0:
            line = line[:cut]
        tokens = line.split()
        if not tokens:
            continue

        lab = tokens[0]
        try:
            label = _float_token(lab)
        except ValueError:
            hint = " (multi-label files are not supported)" if "," in lab else ""
            raise _line_error(name, lineno, f"label {lab!r} is not a number{hint}") from None
        rest = tokens[1:]
        if rest and rest[0].startswith("qid:"):
            qid = rest[0][4:]
            if not (qid.isascii() and qid.lstrip("+-").isdigit()):
                raise _line_error(name, lineno, f"query id {qid!r} is not an integer")
            rest = rest[1:]
        for tok in rest:
            idx_s, sep, val_s = tok.partition(":")
            if not sep:
                raise _line_error(name, lineno, f"expected 'index:value', got {tok!r}")
            if not idx_s:
                raise _line_error(name, lineno, f"missing feature index in {tok!r}")
            if not (idx_s.isascii() and idx_s.isdigit()):
                if idx_s.startswith("-") and idx_s[1:].isascii() and idx_s[1:].isdigit():
                    raise _line_error(name, lineno, f"feature index {idx_s!r} is negative")
                if idx_s == "qid":
                    raise _line_error(name, lineno, "'qid:' must come right after the label")
                raise _line_error(name, lineno, f"feature index {idx_s!r} is not an integer")
            if len(idx_s) > _MAX_INDEX_DIGITS:
                raise _line_error(name, lineno, f"feature index {idx_s} is too large")
            if not val_s:
                raise _line_error(name, lineno, f"missing feature value in {tok!r}")
            try:
                val = _float_token(val_s)
            except ValueError:
                raise _line_error(
                    name, lineno, f"feature value {val_s!r} (feature {idx_s}) is not a number"
                ) from None
            indices.append(int(idx_s))
            values.append(val)
        labels.append(label)
        row_ends.append(len(indices))  # cumulative number of pairs after this row
        row_lines.append(lineno)

    indptr = np.zeros(len(labels) + 1, dtype=np.int64)
    indptr[1:] = row_ends
    return _Parsed(
        np.asarray(labels, dtype=np.float64),
        indptr,
        np.asarray(indices, dtype=np.int64),
        np.asarray(values, dtype=np.float64),
        np.asarray(row_lines, dtype=np.int64),
    )


#: A dense X is refused when it would take more than this many times the bytes of the sparse
#: data (16 bytes a nonzero) and more than ``DENSE_LIMIT_BYTES``: one huge index in a small
#: file (a 33 KB file with one token ``450000:1``) must not allocate a gigabyte.
DENSE_LIMIT_FACTOR = 1000
DENSE_LIMIT_BYTES = 256 * 10**6


def _assemble(parsed: _Parsed, name, n_features, dense, dtype, zero_based):
    labels, indptr, indices, values, row_lines = (
        parsed.labels,
        parsed.indptr,
        parsed.indices,
        parsed.values,
        parsed.row_lines,
    )
    n_rows = labels.size
    row_of = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))

    if indices.size > 1:
        bad = (indices[1:] <= indices[:-1]) & (row_of[1:] == row_of[:-1])
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} line {row_lines[row_of[k + 1]]}: feature indices must be strictly "
                f"increasing, got {indices[k]} then {indices[k + 1]}"
            )

    if zero_based == "auto":
        zb = bool(indices.size) and int(indices.min()) == 0
    else:
        zb = bool(zero_based)
    if not zb:
        zeros = np.flatnonzero(indices == 0)
        if zeros.size:
            raise ValueError(
                f"{name} line {row_lines[row_of[zeros[0]]]}: feature index 0 found but "
                "zero_based=False (indices start at 1); pass zero_based=True or 'auto'"
            )
        cols = indices - 1
    else:
        cols = indices

    needed = int(cols.max()) + 1 if cols.size else 0
    if n_features is None:
        n_features = needed
    elif needed > n_features:
        k = int(np.flatnonzero(cols >= n_features)[0])
        raise ValueError(
            f"{name} line {row_lines[row_of[k]]}: feature index {indices[k]} exceeds "
            f"n_features={n_features} ({'zero' if zb else 'one'}-based indices)"
        )

    if dense:
        dense_bytes = n_rows * n_features * np.dtype(dtype).itemsize
        if dense_bytes > max(DENSE_LIMIT_FACTOR * 16 * max(values.size, 1), DENSE_LIMIT_BYTES):
            k = int(np.argmax(cols))  # the token that makes the matrix wide
            raise ValueError(
                f"{name} line {row_lines[row_of[k]]}: feature index {indices[k]} makes the dense "
                f"matrix {n_rows:,} x {n_features:,} ({dense_bytes / 1e9:.2f} GB) for "
                f"{values.size:,} nonzero values; load it with dense=False (a scipy.sparse "
                "matrix), or check the index")
        X = np.zeros((n_rows, n_features), dtype=dtype)
        X[row_of, cols] = values
    else:
        X = sp.csr_matrix((values.astype(dtype, copy=False), cols, indptr), shape=(n_rows, n_features))
    return X, labels


def load_svmlight(path, n_features=None, *, dense=True, dtype=np.float64, zero_based="auto",
                  chunks=None):
    """Load a LIBSVM / svmlight file (plain text, ``.gz``, ``.bz2`` or ``.xz``).

    Compression is detected from the file's first bytes, not its name. Lines are
    ``<label> [qid:<int>] <index>:<value> ...``; ``#`` starts a comment, blank lines are
    skipped, ``qid`` is ignored. Indices must be strictly increasing within a line.
    Features absent from a line are zero.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    n_features : int, optional
        Number of columns of ``X``. Default: the largest index found (plus one when the
        indices are zero-based). Needed when a file may not use the last feature (e.g.
        a test split), and must be at least that large.
    dense : bool, default=True
        Return a dense ndarray; ``False`` returns a ``scipy.sparse.csr_matrix``.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Floating dtype of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether the indices start at 0. ``"auto"`` assumes zero-based indices only when an
        index 0 occurs in the file (as scikit-learn does), one-based otherwise.
    chunks : int, optional
        Return Dask arrays (``dense`` only) of row chunks of about this many bytes of the
        file: each chunk is read and parsed by a task, on a worker when a
        ``distributed.Client`` is current, and stays there (a first pass finds each chunk's
        rows and the largest index; no process reads the whole file). Needs an uncompressed
        file that every worker can open at ``path``. Line numbers in errors then count from
        the chunk's first byte, which the message names.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse.csr_matrix
        Features, of dtype ``dtype`` (a ``dask.array.Array`` with ``chunks``).
    y : ndarray of shape (n_samples,), dtype float64
        Labels as written (class labels or regression targets).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        On a malformed line, with the file name, the line number and what is wrong, e.g.
        ``"data.txt line 17: feature index 'x' is not an integer"``; and for ``dense=True``
        when the dense matrix would be over 1000 times the size of the sparse data and over
        256 MB (one huge index), naming the line and ``dense=False``.
    """
    dt = check_float_dtype(dtype)
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be None or an int, got {n_features!r}")
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
        n_features = int(n_features)
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    name = os.fspath(path)
    if chunks is not None:
        return _load_chunked(name, n_features, dense, dt, zero_based, chunks)
    return load_svmlight_bytes(read_bytes(name), name, n_features, dense, dt, zero_based)


def _load_chunked(name, n_features, dense, dtype, zero_based, chunk_bytes):
    """:func:`load_svmlight`'s Dask form: byte ranges cut at line ends, parsed by tasks."""
    from svmgpu.distributed import require_dask  # noqa: PLC0415

    require_dask("load_svmlight(chunks=...)")
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415

    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, (int, np.integer)) \
            or chunk_bytes < 1:
        raise ValueError(f"chunks must be a positive number of bytes, got {chunk_bytes!r}")
    if not dense:
        raise ValueError("load_svmlight(chunks=...) returns dense chunks (the Dask fits take "
                         "dense chunks); pass dense=True")
    if not os.path.exists(name):
        raise FileNotFoundError(f"no such file: {name!r}")
    with open(name, "rb") as fh:
        head = fh.read(6)
        if head.startswith((_GZIP_MAGIC, _BZ2_MAGIC, _XZ_MAGIC)):
            raise ValueError(f"{name} is compressed: chunked reading needs byte ranges of the "
                             "text; decompress it first, or load it without chunks")
        size = os.fstat(fh.fileno()).st_size
        cuts = [0]
        for pos in range(int(chunk_bytes), size, int(chunk_bytes)):
            if pos <= cuts[-1]:
                continue
            fh.seek(pos)
            fh.readline()  # to the end of the line that crosses the cut
            if fh.tell() < size:
                cuts.append(fh.tell())
        cuts.append(size)
    parts = [dask.delayed(_parse_range, pure=True)(name, a, b)
             for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    parts = list(dask.persist(*parts))  # parsed once, where they will be used
    stats = dask.compute(*[dask.delayed(_range_stats)(p) for p in parts])
    rows = [int(n) for n, _, _ in stats]
    lo = min((a for _, a, _ in stats if a is not None), default=1)
    hi = max((b for _, _, b in stats if b is not None), default=0)
    zb = (lo == 0) if zero_based == "auto" else bool(zero_based)
    if not zb and lo == 0:
        raise ValueError(f"{name}: feature index 0 found but zero_based=False (indices start "
                         "at 1); pass zero_based=True or 'auto'")
    needed = hi + 1 if zb else hi
    if n_features is None:
        n_features = max(needed, 1)
    elif needed > n_features:
        raise ValueError(f"{name}: feature index {hi} exceeds n_features={n_features}")
    X = [dask.delayed(_assemble_range)(p, name, a, n_features, dtype, zb)
         for p, a in zip(parts, cuts)]
    X_parts = [da.from_delayed(x[0], shape=(n, n_features), dtype=dtype)
               for x, n in zip(X, rows)]
    y_parts = [da.from_delayed(x[1], shape=(n,), dtype=np.float64) for x, n in zip(X, rows)]
    if not X_parts:
        raise ValueError(f"{name} holds no samples")
    return da.concatenate(X_parts), da.concatenate(y_parts)


def _parse_range(name, start, end):
    with open(name, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    where = f"{name} (from byte {start})"
    parsed = _parse_fast(data)
    return parsed if parsed is not None else _parse_slow(data, where)


def _range_stats(parsed):
    """Rows, smallest and largest feature index of a parsed range (None: no features)."""
    idx = parsed.indices
    if not idx.size:
        return parsed.labels.size, None, None
    return parsed.labels.size, int(idx.min()), int(idx.max())


def _assemble_range(parsed, name, start, n_features, dtype, zero_based):
    return _assemble(parsed, f"{name} (from byte {start})", n_features, True, dtype, zero_based)


def load_svmlight_bytes(data: bytes, name: str, n_features, dense, dtype, zero_based):
    """Parse svmlight ``data`` (already decompressed) read from the file ``name``."""
    data = _check_encoding(data, name)
    parsed = _parse_fast(data)
    if parsed is None:
        parsed = _parse_slow(data, name)
    return _assemble(parsed, name, n_features, dense, dtype, zero_based)


#: Byte-order marks of the encodings a LIBSVM file must not be in (it is ASCII text).
_WIDE_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32",
              b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def _check_encoding(data: bytes, name: str) -> bytes:
    """``data`` without a UTF-8 byte-order mark (the text after it is ASCII); a ValueError that
    names the encoding for UTF-16/32 text (a byte-order mark, or NUL bytes near the start),
    which would otherwise fail as a label that is "not a number"."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:]
    head = data[:4096]
    enc = next((e for bom, e in _WIDE_BOMS.items() if head.startswith(bom)), None)
    if enc is None and b"\x00" in head:
        enc = "UTF-16 or UTF-32 (NUL bytes)"
    if enc is not None:
        raise ValueError(f"{name} is {enc} text, not the ASCII a LIBSVM/svmlight file is: "
                         "re-save it as ASCII or UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    return data


def _number_strings(a: np.ndarray) -> list[str]:
    """Shortest round-trip text of each number in ``a``'s dtype; integral values as ints."""
    if a.dtype.kind in "iub":
        return list(map(str, a.astype(np.int64).tolist()))
    if np.all(np.isfinite(a) & (a == np.round(a)) & (np.abs(a) < 2**53)):
        return list(map(str, a.astype(np.int64).tolist()))
    # float64: Python's repr is the shortest round-trip text; float32: NumPy's str is the
    # shortest text that reads back to the same float32.
    texts = list(map(repr, a.tolist())) if a.dtype == np.float64 else a.astype(str).tolist()
    return [t[:-2] if t.endswith(".0") else t for t in texts]


_DUMP_ROWS = 65536  # rows formatted at a time (bounds the memory of the text)


def dump_svmlight(X, y, path, *, zero_based=False, comment=None):
    """Write ``(X, y)`` in the LIBSVM / svmlight format; compress by suffix.

    Zero entries are omitted. Values are written with the shortest text that reads back
    to the same number in ``X``'s dtype; integral labels are written as integers.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or scipy sparse matrix
        Features.
    y : array-like of shape (n_samples,)
        Labels or targets (numbers).
    path : str or os.PathLike
        Output file; a name ending in ``.gz``, ``.bz2`` or ``.xz`` is compressed.
    zero_based : bool, default=False
        Write indices starting at 0 instead of LIBSVM's 1.
    comment : str, optional
        Text written at the top of the file, each line prefixed by ``#`` and a space.
    """
    if sp.issparse(X):
        Xc = sp.csr_matrix(X, copy=True)
    else:
        Xa = np.asarray(X)
        if Xa.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {Xa.shape}")
        Xc = sp.csr_matrix(Xa)
    Xc.eliminate_zeros()
    Xc.sort_indices()
    if Xc.dtype.kind not in "iufb":
        raise ValueError(f"X must hold real numbers, got dtype {Xc.dtype}")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if y.dtype.kind not in "iufb":
        raise ValueError(f"y must hold numbers, got dtype {y.dtype}")
    if y.shape[0] != Xc.shape[0]:
        raise ValueError(f"X has {Xc.shape[0]} rows but y has {y.shape[0]} labels")

    data = Xc.data
    if data.dtype.kind == "b":
        data = data.astype(np.int64)
    indices = Xc.indices
    indptr = Xc.indptr.astype(np.int64)
    offset = 0 if zero_based else 1
    n_rows, n_cols = Xc.shape
    prefixes = None
    if n_cols <= max(4096, indices.size):
        prefixes = np.array([f" {j + offset}:" for j in range(n_cols)], dtype=object)
    labels = _number_strings(y)

    with open_text_for_writing(path) as fh:
        if comment:
            for line in str(comment).splitlines():
                fh.write(f"# {line}".rstrip() + "\n")
        for r0 in range(0, n_rows, _DUMP_ROWS):
            r1 = min(r0 + _DUMP_ROWS, n_rows)
            a, b = int(indptr[r0]), int(indptr[r1])
            idx = indices[a:b]
            if prefixes is not None:
                pre = prefixes[idx].tolist()
            else:
                pre = [f" {j}:" for j in (idx.astype(np.int64) + offset).tolist()]
            pairs = list(map(operator.add, pre, _number_strings(data[a:b])))
            bounds = (indptr[r0 : r1 + 1] - a).tolist()
            lines = [
                label + "".join(pairs[bounds[k] : bounds[k + 1]]) for k, label in enumerate(labels[r0:r1])
            ]
            fh.write("\n".join(lines) + "\n")
