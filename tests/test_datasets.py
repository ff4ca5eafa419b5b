"""Tests of svmgpu.datasets: Checkerboard generators, label noise, Covtype and svmlight I/O."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from svmgpu.datasets import (
    COVTYPE_LIBSVM_URL,
    COVTYPE_N_FEATURES,
    COVTYPE_N_SAMPLES,
    COVTYPE_UCI_URL,
    checkerboard_grid,
    dump_svmlight,
    flip_labels,
    load_covtype,
    load_svmlight,
    make_checkerboard,
)
from svmgpu.datasets._svmlight import _parse_fast, _parse_slow

SHARED_COVTYPE = Path(__file__).resolve().parents[2] / "shared" / "data" / "covtype.data.gz"


def parity(X, grid):
    """Reference labels: +1 on cells whose index sum is even, -1 on odd ones."""
    cells = np.minimum(np.floor(np.asarray(X, dtype=np.float64) * grid), grid - 1)
    return np.where((cells.sum(axis=1) % 2) == 0, 1, -1)


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, compressed by suffix (.gz, .bz2)."""
    raw = text.encode()
    if path.suffix == ".gz":
        raw = gzip.compress(raw)
    elif path.suffix == ".bz2":
        raw = bz2.compress(raw)
    path.write_bytes(raw)
    return path


# --------------------------------------------------------------------------- checkerboard


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grid", [4, 3, 1, 7])
def test_make_checkerboard_labels_follow_cell_parity(dtype, grid):
    X, y = make_checkerboard(5000, grid=grid, dtype=dtype, random_state=0)
    assert X.shape == (5000, 2) and X.dtype == dtype
    assert y.shape == (5000,) and y.dtype == np.int64
    assert X.min() >= 0.0 and X.max() < 1.0
    np.testing.assert_array_equal(y, parity(X, grid))
    assert set(np.unique(y)) <= {-1, 1}


def test_make_checkerboard_is_balanced_and_covers_every_cell():
    X, y = make_checkerboard(64_000, random_state=1)
    assert abs(y.mean()) < 0.02
    cells = np.floor(X * 4).astype(int)
    counts = np.bincount(cells[:, 0] * 4 + cells[:, 1], minlength=16)
    assert counts.size == 16 and counts.min() > 3500  # about 4000 each


@pytest.mark.parametrize("n, flip", [(1000, 0.1), (1001, 0.25), (999, 1.0), (10, 0.05)])
def test_make_checkerboard_flips_exactly_round_fraction(n, flip):
    X, y = make_checkerboard(n, flip=flip, random_state=3)
    assert np.count_nonzero(y != parity(X, 4)) == round(flip * n)


def test_make_checkerboard_reproducible():
    a = make_checkerboard(300, flip=0.2, random_state=7)
    b = make_checkerboard(300, flip=0.2, random_state=7)
    c = make_checkerboard(300, flip=0.2, random_state=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    # A Generator is used (and advanced) in place; a RandomState is accepted too.
    rng = np.random.default_rng(7)
    d = make_checkerboard(300, random_state=rng)
    e = make_checkerboard(300, random_state=rng)
    assert not np.array_equal(d[0], e[0])
    f = make_checkerboard(10, random_state=np.random.RandomState(0))
    g = make_checkerboard(10, random_state=np.random.RandomState(0))
    np.testing.assert_array_equal(f[0], g[0])


def test_make_checkerboard_float32_and_float64_draw_the_same_kind_of_data():
    X32, y32 = make_checkerboard(2000, dtype=np.float32, random_state=0)
    assert X32.dtype == np.float32
    np.testing.assert_array_equal(y32, parity(X32, 4))


def test_make_checkerboard_empty():
    X, y = make_checkerboard(0, random_state=0)
    assert X.shape == (0, 2) and y.shape == (0,)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"n_samples": -1}, ValueError, "n_samples"),
        ({"n_samples": 2.5}, TypeError, "n_samples"),
        ({"n_samples": 10, "grid": 0}, ValueError, "grid"),
        ({"n_samples": 10, "flip": 1.5}, ValueError, "flip"),
        ({"n_samples": 10, "flip": -0.1}, ValueError, "flip"),
        ({"n_samples": 10, "flip": float("nan")}, ValueError, "flip"),
        ({"n_samples": 10, "dtype": np.int32}, ValueError, "float32 or float64"),
        ({"n_samples": 10, "random_state": "seed"}, TypeError, "random_state"),
    ],
)
def test_make_checkerboard_rejects_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_checkerboard(**kwargs)


def test_checkerboard_grid_zhou2013_200x200():
    X, y = checkerboard_grid(200)
    assert X.shape == (40_000, 2) and X.dtype == np.float64 and y.dtype == np.int64
    # Integer coordinates 0..199, every grid point exactly once, row-major.
    assert np.array_equal(X, np.round(X))
    assert X.min() == 0 and X.max() == 199
    assert np.unique(X[:, 0] * 200 + X[:, 1]).size == 40_000
    np.testing.assert_array_equal(X[:3], [[0, 0], [0, 1], [0, 2]])
    np.testing.assert_array_equal(X[200], [1, 0])
    # Label: parity of the 4x4 cell (cells of 50x50 points).
    cells = X.astype(int) // 50
    np.testing.assert_array_equal(y, np.where(cells.sum(axis=1) % 2 == 0, 1, -1))
    assert np.count_nonzero(y == 1) == 20_000
    assert y[0] == 1 and y[50] == -1  # (0, 0) in cell (0, 0); (0, 50) in cell (0, 1)


def test_checkerboard_grid_options():
    X, y = checkerboard_grid(10, grid=2, dtype=np.float32)
    assert X.shape == (100, 2) and X.dtype == np.float32
    cells = X.astype(int) * 2 // 10
    np.testing.assert_array_equal(y, np.where(cells.sum(axis=1) % 2 == 0, 1, -1))
    Xu, yu = checkerboard_grid(10, grid=2, unit_square=True)
    np.testing.assert_allclose(Xu, X / 9.0, rtol=1e-6)
    assert Xu.max() == 1.0 and Xu.min() == 0.0
    np.testing.assert_array_equal(yu, y)
    # Cells of unequal size when grid does not divide side: still i * grid // side.
    X3, y3 = checkerboard_grid(7, grid=3)
    c3 = X3.astype(int) * 3 // 7
    np.testing.assert_array_equal(y3, np.where(c3.sum(axis=1) % 2 == 0, 1, -1))
    with pytest.raises(ValueError, match="grid must be <= side"):
        checkerboard_grid(3, grid=4)
    with pytest.raises(ValueError, match="side"):
        checkerboard_grid(0)


# --------------------------------------------------------------------------- flip_labels


@pytest.mark.parametrize("classes", [(-1, 1), (0, 1), (1, 2), (0.5, 2.5), ("cat", "dog"), (False, True)])
def test_flip_labels_flips_exactly_and_to_the_other_class(classes):
    rng = np.random.default_rng(0)
    y = np.asarray(classes)[rng.integers(0, 2, size=501)]
    y_before = y.copy()
    y_new = flip_labels(y, 0.3, random_state=0)
    np.testing.assert_array_equal(y, y_before)  # input untouched
    assert y_new.dtype == y.dtype and y_new.shape == y.shape
    changed = y_new != y
    assert np.count_nonzero(changed) == round(0.3 * 501)
    assert set(np.unique(y_new).tolist()) <= set(np.asarray(classes).tolist())
    a, b = np.asarray(classes)
    np.testing.assert_array_equal(y_new[changed], np.where(y[changed] == a, b, a))


def test_flip_labels_edges_and_reproducibility():
    y = np.array([-1, 1] * 50)
    np.testing.assert_array_equal(flip_labels(y, 0.0), y)
    np.testing.assert_array_equal(flip_labels(y, 1.0), -y)
    np.testing.assert_array_equal(flip_labels(y, 0.37, random_state=5), flip_labels(y, 0.37, random_state=5))
    # A single class is fine when nothing is flipped.
    np.testing.assert_array_equal(flip_labels(np.ones(4), 0.1), np.ones(4))
    # round(0.5 * 3) == 2 labels flipped; a list is accepted.
    assert np.count_nonzero(flip_labels([1, -1, 1], 0.5) != [1, -1, 1]) == 2


@pytest.mark.parametrize(
    "y, fraction, match",
    [
        ([1, 2, 3], 0.1, "binary labels, got 3 classes"),
        ([1, 1, 1, 1], 0.5, "two classes"),
        ([1, -1], 1.5, "fraction"),
        ([1, -1], -0.5, "fraction"),
        ([[1, -1]], 0.5, "one-dimensional"),
    ],
)
def test_flip_labels_errors(y, fraction, match):
    with pytest.raises(ValueError, match=match):
        flip_labels(y, fraction)


# --------------------------------------------------------------------------- svmlight

SVMLIGHT_TEXT = """\
# a comment line, then a blank line

+1 1:0.5 3:-2 10:1e-3
-1\t2:4.25\t3:1E2   # trailing comment
2 qid:7 1:1 4:-0.125
-1
0.5 5:.5 6:5. 7:+3 8:-inf 9:nan
1 1:0 10:3
"""


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_load_svmlight_matches_sklearn(tmp_path, suffix):
    path = write_text(tmp_path / f"small.txt{suffix}", SVMLIGHT_TEXT)
    X, y = load_svmlight(path)
    Xr, yr = load_svmlight_file(str(path))
    assert isinstance(X, np.ndarray) and X.dtype == np.float64
    assert X.shape == (6, 10)
    np.testing.assert_array_equal(y, yr)
    np.testing.assert_array_equal(X, Xr.toarray())  # NaN positions compare equal
    Xs, ys = load_svmlight(path, dense=False, dtype=np.float32)
    assert sp.issparse(Xs) and Xs.format == "csr" and Xs.dtype == np.float32
    np.testing.assert_array_equal(Xs.toarray(), Xr.toarray().astype(np.float32))
    np.testing.assert_array_equal(ys, yr)


def test_load_svmlight_crlf_and_no_final_newline(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"1 1:2 3:4\r\n-1 2:5\r\n\r\n1 3:1")
    X, y = load_svmlight(path)
    np.testing.assert_array_equal(y, [1, -1, 1])
    np.testing.assert_array_equal(X, [[2, 0, 4], [0, 5, 0], [0, 0, 1]])


def test_load_svmlight_compression_detected_from_content(tmp_path):
    path = tmp_path / "no_suffix"
    path.write_bytes(bz2.compress(b"1 1:3\n"))
    X, y = load_svmlight(path)
    np.testing.assert_array_equal(X, [[3.0]])


def test_load_svmlight_zero_based_and_n_features(tmp_path):
    path = write_text(tmp_path / "z.txt", "1 0:1 2:3\n-1 1:2\n")
    X, _ = load_svmlight(path)  # auto: an index 0 means zero-based
    np.testing.assert_array_equal(X, [[1, 0, 3], [0, 2, 0]])
    X, _ = load_svmlight(path, n_features=5, zero_based=True)
    assert X.shape == (2, 5)
    with pytest.raises(ValueError, match=r"z\.txt line 1: feature index 0 found"):
        load_svmlight(path, zero_based=False)
    one = write_text(tmp_path / "one.txt", "1 1:1 3:3\n")
    np.testing.assert_array_equal(load_svmlight(one)[0], [[1, 0, 3]])
    np.testing.assert_array_equal(load_svmlight(one, zero_based=True)[0], [[0, 1, 0, 3]])
    with pytest.raises(ValueError, match=r"line 1: feature index 3 exceeds n_features=2"):
        load_svmlight(one, n_features=2)
    with pytest.raises(ValueError, match="zero_based"):
        load_svmlight(one, zero_based="yes")


def test_load_svmlight_empty_file(tmp_path):
    path = write_text(tmp_path / "empty.txt", "# nothing\n\n")
    X, y = load_svmlight(path)
    assert X.shape == (0, 0) and y.shape == (0,)
    X, y = load_svmlight(path, n_features=3, dense=False)
    assert X.shape == (0, 3)


@pytest.mark.parametrize(
    "line, message",
    [
        ("1 x:3", "feature index 'x' is not an integer"),
        ("1 1.5:3", "feature index '1.5' is not an integer"),
        ("1 -2:3", "feature index '-2' is negative"),
        ("1 2:abc", "feature value 'abc' (feature 2) is not a number"),
        ("1 2:", "missing feature value in '2:'"),
        ("1 :3", "missing feature index in ':3'"),
        ("1 2 3", "expected 'index:value', got '2'"),
        ("1 2:3:4", "feature value '3:4' (feature 2) is not a number"),
        ("abc 1:2", "label 'abc' is not a number"),
        ("1,2 1:2", "multi-label files are not supported"),
        ("1 3:1 2:1", "feature indices must be strictly increasing, got 3 then 2"),
        ("1 2:1 2:1", "feature indices must be strictly increasing, got 2 then 2"),
        ("1 qid:a 1:2", "query id 'a' is not an integer"),
        ("1 1:2 qid:3", "'qid:' must come right after the label"),
        ("1 1:1_0", "feature value '1_0'"),
    ],
)
def test_load_svmlight_malformed_line_names_file_and_line(tmp_path, line, message):
    text = "# header\n1 1:1 2:2\n\n-1 3:0.5\n" + line + "\n1 1:1\n"
    path = write_text(tmp_path / "covtype.txt", text)
    with pytest.raises(ValueError) as info:
        load_svmlight(path)
    msg = str(info.value)
    assert "covtype.txt line 5: " in msg, msg
    assert message in msg, msg


def test_load_svmlight_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.txt"):
        load_svmlight(tmp_path / "absent.txt")


def test_load_svmlight_bad_arguments(tmp_path):
    path = write_text(tmp_path / "ok.txt", "1 1:1\n")
    with pytest.raises(ValueError, match="float32 or float64"):
        load_svmlight(path, dtype=np.int64)
    with pytest.raises(ValueError, match="n_features"):
        load_svmlight(path, n_features=0)


def _random_problem(rng, n=200, d=15, density=0.3, dtype=np.float64):
    X = rng.standard_normal((n, d)).astype(dtype)
    X[rng.random((n, d)) > density] = 0
    X[3] = 0  # a row without features
    X[5, 2] = 7.0  # an integral value among floats
    X[:, -1][::7] = 1.0  # make the last column used
    return X


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_dump_load_round_trip(tmp_path, suffix):
    rng = np.random.default_rng(0)
    X = _random_problem(rng)
    y = rng.choice([-1.0, 1.0], size=X.shape[0])
    path = tmp_path / f"rt.svm{suffix}"
    dump_svmlight(X, y, path, comment="svmgpu test\nsecond line")
    raw = path.read_bytes()
    if suffix == ".gz":
        assert raw[:2] == b"\x1f\x8b"
    elif suffix == ".bz2":
        assert raw[:3] == b"BZh"
    else:
        assert raw.startswith(b"# svmgpu test\n# second line\n")
    X2, y2 = load_svmlight(path, n_features=X.shape[1])
    np.testing.assert_array_equal(X2, X)  # exact: shortest round-trip text
    np.testing.assert_array_equal(y2, y)
    Xr, yr = load_svmlight_file(str(path), n_features=X.shape[1])
    np.testing.assert_array_equal(Xr.toarray(), X)
    np.testing.assert_array_equal(yr, y)


def test_dump_load_round_trip_float32_sparse_and_real_targets(tmp_path):
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(_random_problem(rng, dtype=np.float32))
    y = rng.standard_normal(X.shape[0])  # regression targets
    path = tmp_path / "rt32.txt"
    dump_svmlight(X, y, path, zero_based=True)
    X2, y2 = load_svmlight(path, n_features=X.shape[1], dense=False, dtype=np.float32, zero_based=True)
    assert X2.dtype == np.float32
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(y2, y)
    text = path.read_text()
    assert "7:" not in text.splitlines()[3]  # all-zero row written as a bare label
    assert text.splitlines()[3] == repr(float(y[3]))


def test_dump_svmlight_integer_labels_and_values(tmp_path):
    path = tmp_path / "ints.txt"
    dump_svmlight(np.array([[0, 2.0, -3.5], [1, 0, 0]]), np.array([1.0, -1.0]), path)
    assert path.read_text() == "1 2:2 3:-3.5\n-1 1:1\n"


def test_dump_svmlight_validates(tmp_path):
    with pytest.raises(ValueError, match="rows"):
        dump_svmlight(np.ones((3, 2)), np.ones(2), tmp_path / "a.txt")
    with pytest.raises(ValueError, match="two-dimensional"):
        dump_svmlight(np.ones(3), np.ones(3), tmp_path / "a.txt")


@pytest.mark.parametrize("seed", range(4))
def test_fast_and_line_by_line_parsers_agree(seed):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(60):
        kind = rng.integers(0, 10)
        if kind == 0:
            lines.append("")
            continue
        if kind == 1:
            lines.append("   # just a comment")
            continue
        label = rng.choice(["1", "-1", "+1", "2.5", "0", "-3e2"])
        idx = np.sort(rng.choice(np.arange(1, 40), size=rng.integers(0, 8), replace=False))
        vals = rng.choice(["0.25", "-1", "3", "1e-5", "-2.5E+3", "7.", ".5", "0"], size=idx.size)
        sep = rng.choice([" ", "\t", "  "])
        tail = rng.choice(["", " ", "\t# c", "\r"])
        lines.append(sep.join([label] + [f"{i}:{v}" for i, v in zip(idx, vals, strict=True)]) + tail)
    data = "\n".join(lines).encode()
    fast = _parse_fast(data)
    slow = _parse_slow(data, "gen")
    assert fast is not None
    for field in ("labels", "indptr", "indices", "values", "row_lines"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)


# --------------------------------------------------------------------------- covtype


def _uci_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = np.zeros((n, 54), dtype=np.int64)
    X[:, :10] = rng.integers(-200, 4000, size=(n, 10))
    X[np.arange(n), 10 + rng.integers(0, 4, size=n)] = 1
    X[np.arange(n), 14 + rng.integers(0, 40, size=n)] = 1
    labels = rng.integers(1, 8, size=n)
    labels[:7] = np.arange(1, 8)
    return X, labels


def _uci_text(X, labels):
    return "".join(",".join(map(str, row)) + f",{lab}\n" for row, lab in zip(X, labels, strict=True))


@pytest.mark.parametrize("name", ["covtype.data", "covtype.data.gz"])
def test_load_covtype_uci(tmp_path, name):
    X0, labels = _uci_rows(40)
    path = write_text(tmp_path / name, _uci_text(X0, labels))
    X, y = load_covtype(path)
    assert X.shape == (40, COVTYPE_N_FEATURES) and X.dtype == np.float64
    np.testing.assert_array_equal(X, X0)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.where(labels == 2, 1, -1))
    X7, y7 = load_covtype(path, binary=False, dtype=np.float32)
    assert X7.dtype == np.float32 and X7.flags.c_contiguous
    np.testing.assert_array_equal(X7, X0)
    np.testing.assert_array_equal(y7, labels)
    _, y3 = load_covtype(path, positive_class=3)
    np.testing.assert_array_equal(y3, np.where(labels == 3, 1, -1))


def test_load_covtype_uci_blank_lines_and_crlf(tmp_path):
    X0, labels = _uci_rows(8)
    text = _uci_text(X0, labels).replace("\n", "\r\n")
    lines = text.split("\r\n")
    text = "\r\n".join(lines[:3] + [""] + lines[3:]) + "\n\n"
    path = write_text(tmp_path / "covtype.data", text)
    X, y = load_covtype(path, binary=False)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, labels)


@pytest.mark.parametrize("name", ["covtype.libsvm.binary", "covtype.libsvm.binary.bz2"])
def test_load_covtype_libsvm_binary(tmp_path, name):
    X0, labels = _uci_rows(30)
    path = tmp_path / name
    dump_svmlight(X0, np.where(labels == 2, 2, 1), path)  # LIBSVM: label 2 = class 2
    X, y = load_covtype(path, dtype=np.float32)
    assert X.shape == (30, 54) and X.dtype == np.float32
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, np.where(labels == 2, 1, -1))
    # Same data from the UCI file gives the same binary problem.
    uci = write_text(tmp_path / "covtype.data", _uci_text(X0, labels))
    Xu, yu = load_covtype(uci, dtype=np.float32)
    np.testing.assert_array_equal(Xu, X)
    np.testing.assert_array_equal(yu, y)
    with pytest.raises(ValueError, match="binary=False needs UCI"):
        load_covtype(path, binary=False)
    with pytest.raises(ValueError, match="positive_class=3"):
        load_covtype(path, positive_class=3)


def test_load_covtype_libsvm_bad_label(tmp_path):
    path = write_text(tmp_path / "cov.libsvm", "1 1:2\n3 1:4\n")
    with pytest.raises(ValueError, match="sample 2 has label 3"):
        load_covtype(path)


def test_load_covtype_missing_file_gives_download_addresses(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_covtype(tmp_path / "covtype.data.gz")
    msg = str(info.value)
    assert COVTYPE_UCI_URL in msg and COVTYPE_LIBSVM_URL in msg
    assert "archive.ics.uci.edu/ml/machine-learning-databases/covtype/covtype.data.gz" in msg
    assert "covtype.libsvm.binary.bz2" in msg


def test_load_covtype_malformed_uci(tmp_path):
    X0, labels = _uci_rows(10)
    lines = _uci_text(X0, labels).splitlines()
    short = lines.copy()
    short[5] = short[5].rsplit(",", 1)[0]
    with pytest.raises(ValueError, match=r"covtype.data line 6: expected 55 .* got 54"):
        load_covtype(write_text(tmp_path / "covtype.data", "\n".join(short)))
    bad = lines.copy()
    bad[3] = "abc," + bad[3].split(",", 1)[1]
    with pytest.raises(ValueError, match=r"line 4, column 1: 'abc' is not a number"):
        load_covtype(write_text(tmp_path / "covtype.data", "\n".join(bad)))
    lab = lines.copy()
    lab[8] = lab[8].rsplit(",", 1)[0] + ",8"
    with pytest.raises(ValueError, match=r"line 9: label 8 is not a cover type 1-7"):
        load_covtype(write_text(tmp_path / "covtype.data", "\n".join(lab)))
    with pytest.raises(ValueError, match="no data"):
        load_covtype(write_text(tmp_path / "covtype.data", "\n\n"))
    with pytest.raises(ValueError, match="positive_class"):
        load_covtype(tmp_path / "covtype.data", positive_class=8)


@pytest.fixture(scope="module")
def shared_covtype():
    if not SHARED_COVTYPE.is_file():
        pytest.skip(f"shared Covtype copy not found at {SHARED_COVTYPE}")
    return load_covtype(SHARED_COVTYPE, binary=False)


def test_load_covtype_shared_uci_file(shared_covtype):
    X, y = shared_covtype
    assert X.shape == (COVTYPE_N_SAMPLES, COVTYPE_N_FEATURES) and X.dtype == np.float64
    np.testing.assert_array_equal(np.unique(y), np.arange(1, 8))
    assert np.count_nonzero(y == 2) == 283_301
    assert round(np.mean(y == 2) * 100, 2) == 48.76
    # First row of covtype.data: 2596,51,3,258,0,510,221,232,148,6279,1,0,0,0,...,5
    np.testing.assert_array_equal(X[0, :11], [2596, 51, 3, 258, 0, 510, 221, 232, 148, 6279, 1])
    assert y[0] == 5
    # One-hot blocks: one wilderness area and one soil type per row.
    np.testing.assert_array_equal(X[:, 10:14].sum(axis=1), 1)
    np.testing.assert_array_equal(X[:, 14:].sum(axis=1), 1)


def test_svmlight_files_in_a_wide_encoding_say_so_and_a_utf8_bom_is_harmless(tmp_path):
    """Issue 26 item 6: a UTF-16 file (or one with a byte-order mark) failed with "label
    'ÿþ1\\x00' is not a number"."""
    text = "1 1:0.5 2:1\n-1 1:-0.25\n"
    (tmp_path / "u16.txt").write_bytes(text.encode("utf-16"))
    (tmp_path / "u16be.txt").write_bytes(text.encode("utf-16-be"))
    (tmp_path / "bom8.txt").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.txt").write_text(text)
    for f in ("u16.txt", "u16be.txt"):
        with pytest.raises(ValueError, match="UTF-16.*re-save it as ASCII or UTF-8"):
            load_svmlight(tmp_path / f)
    X, y = load_svmlight(tmp_path / "bom8.txt")
    X0, y0 = load_svmlight(tmp_path / "plain.txt")
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
