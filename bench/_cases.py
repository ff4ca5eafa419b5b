"""The benchmarks' set-ups and data splits, defined once for every script in ``bench/``.

Papers' set-ups (hyper-parameters and sizes):

* :data:`CHECKERBOARD`: UniSVM's Checkerboard (4 × 4 cells in the unit square), 1,000,000
  training and 200,000 test points, RBF γ = 16, λ = 1e-7 (``C = 1/(λ m)``), rank r = 300.
* :data:`COVTYPE`: UniSVM's Covtype (section 5, Table 4): class 2 against the rest, 381,012
  training and 200,000 test rows (:func:`covtype_split`), γ = 2⁻², λ = 1e-8, r = 1000; the
  truncated squared hinge's a = 2 (:data:`TRUNCATION`).
* :data:`ZHOU_TABLES` and :data:`ZHOU_MILLION`: the reduced-SVM Newton set-ups of Zhou (2013)
  (``bench_newton.py``).
* :func:`mixture`: the two-class mixture of Bonidal, Tindel & Guermeur (2013), section 4.4
  (``bench_path.py``).

Data sets and splits:

* :func:`checkerboard_split`: Checkerboard training rows (seed 0) and test rows (seed 1).
* :func:`covtype_split`: UniSVM's Covtype split (a permutation of seed 0; the first 381,012 rows
  train, the other 200,000 test; features scaled to [0, 1] by the training rows' range).
* :func:`covtype_first_rows`: the first m rows of the file, unpermuted, scaled by their own
  range (the feature-building benchmark ``bench_lowrank.py``, which needs no labels).
* :class:`CovtypeRows`: disjoint rows of the same permutation handed out in order
  (``bench_greedy.py``'s tuning, validation, test and training sets).
* :func:`covtype_like`: a synthetic 54-column set shaped like Covtype (no file needed).
* :func:`a9a_like`: a synthetic set of a9a's shape (123 binary features, 14 ones per row).
* :func:`adult_like`: Covtype rows as a9a-style one-hot features, a9a's sizes (32,561 /
  16,281), CSR.
* :func:`digits28_split`: an image-like 10-class set of 784 pixels in [0, 1] (scikit-learn's
  8 × 8 digits enlarged to 28 × 28 and moved, turned, thickened and noised; training and test
  images from disjoint originals), a stand-in for a 60,000 × 784 image set (none is here).

The Covtype file (UCI ``covtype.data.gz``) is read from a path the caller gives; in this
project's checkouts it is at ``../shared/data/covtype.data.gz`` (:data:`COVTYPE_DEFAULT_PATH`).
LIBSVM's ijcnn1 (:func:`ijcnn1_split`, ``bench_svc.py``) is read from
``../shared/data`` (:data:`IJCNN1_DEFAULT_DIR`). Everything imports NumPy and svmgpu lazily, so that
``bench_regression.py`` can run these functions against an earlier source tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Where the project's checkouts keep the Covtype file (scripts still take ``--covtype PATH``).
COVTYPE_DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "covtype.data.gz"
#: LIBSVM's ijcnn1 (49,990 training / 91,701 test rows, 22 features), bzip2 svmlight files.
IJCNN1_DEFAULT_DIR = COVTYPE_DEFAULT_PATH.parent


@dataclass(frozen=True)
class Setup:
    """A paper's hyper-parameters: RBF ``gamma``, regularization ``lam`` (``C = 1/(λ m)``),
    Nyström ``rank``, training and test sizes."""

    name: str
    gamma: float
    lam: float
    rank: int
    m: int
    m_test: int

    def C(self, m: int | None = None) -> float:
        """UniSVM's ``C = 1/(λ m)`` at ``m`` training points (default: the set-up's m)."""
        return 1.0 / (self.lam * (self.m if m is None else m))

    def C_gsvm(self, m: int | None = None) -> float:
        """``C = 1/(2 λ m)``: the same λ for ReducedSVC's GSVM squared hinge, whose loss
        carries no factor ½."""
        return 1.0 / (2.0 * self.lam * (self.m if m is None else m))

    def describe(self) -> dict:
        """The set-up for a result file (the sizes the paper used; a run's own are in its
        rows)."""
        return {"setup": self.name, "gamma": self.gamma, "lambda": self.lam,
                "C": "1/(lambda m)", "rank": self.rank, "paper_m_train": self.m,
                "paper_m_test": self.m_test}


CHECKERBOARD = Setup("UniSVM Checkerboard", gamma=16.0, lam=1e-7, rank=300, m=1_000_000,
                     m_test=200_000)
COVTYPE = Setup("UniSVM Covtype", gamma=0.25, lam=1e-8, rank=1000, m=381_012, m_test=200_000)
#: The truncated squared hinge's a in UniSVM's Covtype runs (UniSVM4).
TRUNCATION = 2.0
#: The label of :func:`covtype_split` in result files.
COVTYPE_SPLIT = "UniSVM: 381,012 / 200,000, permutation seed 0"

#: Hyper-parameters chosen on validation splits by earlier runs, used by the Covtype frontier:
#: GreedySVC's γ and SVC's (γ, C) from ``bench_greedy.py``, UniSVC's γ from the GPU frontier.
COVTYPE_TUNED = {"greedy_gamma": 32.0, "unisvc_gamma": 4.0, "svc_gamma": 8.0, "svc_C": 10.0}

#: Zhou (2013) Tables 2-3: the 200 × 200 integer Checkerboard grid, RBF γ = 0.001, the rank r
#: for each training size, λ = 0.1 and 0.01.
ZHOU_TABLES = {"grid": 200, "gamma": 0.001, "lambdas": (0.1, 0.01),
               "ranks": {4000: 300, 8000: 600, 15000: 1000, 20000: 1000, 25000: 1000}}
#: The 1M Checkerboard fit of bench_newton.py: GSVM squared hinge, C = 100 (λ = 0.005).
ZHOU_MILLION = {"m": 1_000_000, "m_test": 200_000, "gamma": 16.0, "rank": 300, "C": 100.0}


# ----------------------------------------------------------------------------- Checkerboard
def checkerboard_split(m: int = CHECKERBOARD.m, m_test: int = CHECKERBOARD.m_test, *,
                       dtype="float64", flip: float = 0.0):
    """``(X, y, Xt, yt)``: ``m`` Checkerboard training points (seed 0, ``flip`` of the labels
    flipped) and ``m_test`` test points (seed 1)."""
    import numpy as np

    from svmgpu.datasets import make_checkerboard

    # only the keywords in use: an earlier tree (bench_regression.py) may lack them
    kw = {} if np.dtype(dtype) == np.float64 else {"dtype": dtype}
    X, y = make_checkerboard(m, random_state=0, **({"flip": flip} if flip else {}), **kw)
    Xt, yt = make_checkerboard(m_test, random_state=1, **kw)
    return X, y, Xt, yt


# ----------------------------------------------------------------------------- Covtype
def scale01(X_train, *others):
    """Min-max scaling to [0, 1] with the training rows' range (constant columns unscaled);
    returns the list ``[X_train, *others]`` scaled, in ``X_train``'s dtype."""
    import numpy as np

    lo, hi = X_train.min(0), X_train.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return [((X - lo) / span).astype(X_train.dtype) for X in (X_train, *others)]


def _covtype_permuted(path, binary=True):
    """All rows of the file, class 2 against the rest (±1; ``binary=False``: the 7 classes),
    in the permutation of seed 0."""
    import numpy as np

    from svmgpu.datasets import load_covtype

    X, y = load_covtype(path, binary=binary)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    return X[perm], y[perm]


def covtype_split(path, dtype="float64"):
    """UniSVM's split: ``(X, y, Xt, yt)``, 381,012 training and 200,000 test rows of a fixed
    random permutation, features scaled to [0, 1] with the training minima and maxima (in
    float64), then cast to ``dtype``."""
    import numpy as np

    X, y = _covtype_permuted(path)
    n = COVTYPE.m
    lo, hi = X[:n].min(axis=0), X[:n].max(axis=0)
    X = ((X - lo) / np.where(hi > lo, hi - lo, 1.0)).astype(dtype)
    return X[:n], y[:n], X[n:], y[n:]


#: DC-SVM's Covtype set-up (Hsieh, Si and Dhillon 2014): an 80/20 split, features scaled to
#: [0, 1], class 2 against the rest, C = 32, γ = 32 (the exact SVM: 96.15 %).
DCSVM_COVTYPE = {"m": 464_810, "m_test": 116_202, "C": 32.0, "gamma": 32.0}
DCSVM_SPLIT = "DC-SVM's 80/20: 464,810 / 116,202 rows of the permutation of seed 0"


def covtype_dcsvm_split(path, dtype="float64", binary=True):
    """DC-SVM's 80/20 split of the permutation of :func:`covtype_split`: ``(X, y, Xt, yt)``,
    464,810 training and 116,202 test rows, scaled to [0, 1] with the training minima and
    maxima (``binary=False``: the 7 classes)."""
    import numpy as np

    X, y = _covtype_permuted(path, binary)
    n = DCSVM_COVTYPE["m"]
    lo, hi = X[:n].min(axis=0), X[:n].max(axis=0)
    X = ((X - lo) / np.where(hi > lo, hi - lo, 1.0)).astype(dtype)
    return X[:n], y[:n], X[n:], y[n:]


def covtype_first_rows(path, m: int, dtype="float64"):
    """The first ``m`` rows of the file (no permutation, no labels), scaled to [0, 1] by their
    own range."""
    from svmgpu.datasets import load_covtype

    X, _ = load_covtype(path)
    X = X[:m]
    return scale01(X.astype("float64"))[0].astype(dtype)


class CovtypeRows:
    """Disjoint rows of Covtype in the permutation of :func:`covtype_split` (unscaled, labels
    ±1 as float64), handed out in order by :meth:`take`."""

    def __init__(self, path, dtype="float64"):
        X, y = _covtype_permuted(path)
        self.X, self.y, self.dtype, self.used = X, y.astype("float64"), dtype, 0

    def take(self, n):
        if self.used + n > len(self.y):
            raise ValueError(f"Covtype has {len(self.y)} rows; asked for {self.used + n}")
        s = slice(self.used, self.used + n)
        self.used += n
        return self.X[s], self.y[s]


def covtype_like(n, seed, dtype="float64"):
    """A 54-dimensional synthetic set shaped like Covtype: 10 quantitative features in [0, 1],
    one-hot wilderness area (4) and soil type (40), a nonlinear label (about half positive)
    with 3% of the labels flipped."""
    import numpy as np

    rng = np.random.default_rng(seed)
    gen = np.random.default_rng(12345)  # the labelling function is the same for every seed
    A = gen.normal(size=(10, 10)) / np.sqrt(10)
    wild_p = np.array([0.45, 0.05, 0.44, 0.06])
    soil_p = 1.0 / np.arange(1, 41) ** 1.1
    soil_p /= soil_p.sum()
    w_wild = gen.normal(0, 0.6, 4)
    w_soil = gen.normal(0, 0.6, 40)
    q = 1 / (1 + np.exp(-rng.normal(size=(n, 10)) @ A))  # correlated, in (0, 1)
    wild = rng.choice(4, size=n, p=wild_p)
    soil = (rng.choice(40, size=n, p=soil_p) + 7 * wild) % 40
    f = (np.sin(3 * np.pi * q[:, 0]) + 8 * (q[:, 1] - 0.5) * (q[:, 2] - 0.5)
         + 0.8 * np.cos(6 * q[:, 3] + 2 * q[:, 4]) + 2 * (q[:, 5] - 0.5) + w_wild[wild]
         + w_soil[soil])
    y = np.where(f > np.median(f), 1.0, -1.0)
    flip = rng.random(n) < 0.03
    y[flip] = -y[flip]
    X = np.zeros((n, 54))
    X[:, :10] = q
    X[np.arange(n), 10 + wild] = 1.0
    X[np.arange(n), 14 + soil] = 1.0
    return X.astype(dtype), y


# ----------------------------------------------------------------------------- a9a / Adult
#: a9a's (LIBSVM's encoding of Adult) training and test sizes.
A9A_SIZES = (32_561, 16_281)


def ijcnn1_split(directory=IJCNN1_DEFAULT_DIR):
    """``(X, y, Xt, yt)`` of LIBSVM's ijcnn1 (``ijcnn1.bz2`` / ``ijcnn1.t.bz2`` in
    ``directory``), dense float64, labels ±1, features as LIBSVM ships them (in [-1, 1])."""
    import numpy as np

    from svmgpu.datasets import load_svmlight

    X, y = load_svmlight(Path(directory) / "ijcnn1.bz2")
    Xt, yt = load_svmlight(Path(directory) / "ijcnn1.t.bz2", n_features=X.shape[1])
    return np.asarray(X), y, np.asarray(Xt), yt


def digits28_split(m: int = 60_000, m_test: int = 10_000, seed: int = 0, hard: bool = False):
    """``(X, y, X_test, y_test)``: m and m_test images of 28 × 28 pixels in [0, 1] (float32,
    flattened to 784 columns), labels 0–9. Each is one of scikit-learn's 1,797 digits (8 × 8,
    ``/ 16``): 1,400 originals serve the training images and the other 397 the test images,
    drawn with replacement, enlarged 2.5 times (linear), turned by up to 15°, thickened by a
    2 × 2 dilation blended in by a random weight (half of them), put at a random offset of 2–6
    pixels in the 28 × 28 frame and noised by N(0, 0.05²), clipped to [0, 1]. scikit-learn's
    ``SVC()`` reaches 99.07 % on 60,000 of them in 147 s on this project's 2-core CPU.

    ``hard=True``: a harder set for the same pipeline, turned by up to 25°, thickened or
    thinned (a 2 × 2 dilation or erosion blended in), blurred (σ up to 0.6 pixels), put at an
    offset of 0–8 pixels and noised by N(0, 0.12²): scikit-learn's ``SVC()`` 96.66 % in 413 s
    (30,903 support vectors), nearer its 97.9 % on a real 60,000 × 784 digit set."""
    import numpy as np
    from scipy import ndimage
    from sklearn.datasets import load_digits

    D, labels = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(labels.shape[0])
    turn, noise, (lo, hi) = (25, 0.12, (0, 9)) if hard else (15, 0.05, (2, 7))

    def make(originals, n):
        out, lab = np.empty((n, 784), np.float32), np.empty(n, np.int64)
        for k, i in enumerate(rng.choice(originals, n)):
            img = ndimage.zoom(D[i].reshape(8, 8) / 16.0, 2.5, order=1)  # 20 × 20
            img = ndimage.rotate(img, rng.uniform(-turn, turn), reshape=False, order=1)
            if hard:
                w = rng.uniform(0.5, 1.5)
                img = ndimage.grey_dilation(img, size=(2, 2)) * (w - 1) + img * (2 - w) \
                    if w > 1 else ndimage.grey_erosion(img, size=(2, 2)) * (1 - w) + img * w
                img = ndimage.gaussian_filter(img, rng.uniform(0, 0.6))
            else:
                w = rng.uniform(0.6, 1.4)
                if w > 1:
                    img = ndimage.grey_dilation(img, size=(2, 2)) * (w - 1) + img * (2 - w)
            frame = np.zeros((28, 28))
            dx, dy = rng.integers(lo, hi, size=2)
            frame[dy:dy + 20, dx:dx + 20] = img
            out[k] = np.clip(frame + rng.normal(0, noise, frame.shape), 0, 1).ravel()
            lab[k] = labels[i]
        return out, lab

    X, y = make(perm[:1400], m)
    X_test, y_test = make(perm[1400:], m_test)
    return X, y, X_test, y_test


def a9a_like(n, seed):
    """``n`` rows of 123 binary features, 14 ones per row in 14 groups (a9a's one-hot layout),
    labels from a fixed nonlinear rule plus 10 % flips (``bench_regression.py``'s case, with
    30,000 / 10,000 rows of seeds 0 / 1)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    groups = np.array_split(np.arange(123), 14)
    X = np.zeros((n, 123))
    for g in groups:
        X[np.arange(n), rng.choice(g, size=n)] = 1.0
    w = np.random.default_rng(12345).standard_normal(123)  # the same rule for every split
    s = X @ w
    y = np.where(np.sin(s) + 0.3 * s > 0.3, 1, -1)
    flip = rng.random(n) < 0.10
    return X, np.where(flip, -y, y)


def adult_like(path, seed=0, bins=8):
    """``(X, y, Xt, yt)``: Covtype rows as a9a-style one-hot CSR features, labels ±1 (class 2
    against the rest). a9a's sizes (:data:`A9A_SIZES`), rows drawn by ``seed``; the 44 binary
    columns plus each of the 10 numeric columns cut into ``bins`` quantile bins of the
    training rows (one-hot): 124 columns, 12 ones per row."""
    import numpy as np
    import scipy.sparse as sp

    from svmgpu.datasets import load_covtype

    n_train, n_test = A9A_SIZES
    X, y = load_covtype(path)
    rng = np.random.default_rng(seed)
    rows = rng.choice(X.shape[0], size=n_train + n_test, replace=False)
    X, y = X[rows], y[rows]
    cols = []
    for j in range(10):  # numeric columns: quantile bins from the training rows, one-hot
        edges = np.quantile(X[:n_train, j], np.linspace(0, 1, bins + 1)[1:-1])
        b = np.searchsorted(edges, X[:, j], side="right")
        cols.append(np.eye(bins)[b])
    cols.append(X[:, 10:] != 0)  # 4 wilderness + 40 soil indicators
    A = sp.csr_matrix(np.hstack(cols).astype(np.float64))
    return A[:n_train], y[:n_train], A[n_train:], y[n_train:]


# ----------------------------------------------------------------------------- mixture
def mixture(n: int, rng):
    """The two-class mixture of Bonidal, Tindel & Guermeur (2013), section 4.4: positives
    N((1, 1), [[8, −6], [−6, 8]]), negatives ½ N((0, 0), ¼ I) + ½ N((5, −2), I), equiprobable
    classes (Bayes error ≈ 12.11 %); n points, labels in {−1, +1}."""
    import numpy as np

    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = np.empty((n, 2))
    pos = np.flatnonzero(y == 1)
    neg = np.flatnonzero(y == -1)
    X[pos] = rng.multivariate_normal([1.0, 1.0], [[8.0, -6.0], [-6.0, 8.0]], size=pos.size)
    first = rng.random(neg.size) < 0.5
    X[neg[first]] = rng.multivariate_normal([0.0, 0.0], 0.25 * np.eye(2), size=int(first.sum()))
    X[neg[~first]] = rng.multivariate_normal([5.0, -2.0], np.eye(2), size=int((~first).sum()))
    return X, y


# ----------------------------------------------------------------------------- regression
#: The regression set-up of bench_losses.py: the Checkerboard's square, γ, λ and rank.
SURFACE = Setup("smooth surface with outliers", gamma=16.0, lam=1e-7, rank=300, m=1_000_000,
                m_test=200_000)


def surface_split(m: int = SURFACE.m, m_test: int = SURFACE.m_test, *, dtype="float64",
                  outliers: float = 0.05):
    """``(X, y, Xt, yt)``: points uniform in the unit square with targets
    ``sin(2π x₁) cos(2π x₂) + N(0, 0.1²)``; ``outliers`` of the training targets (seed 0) are
    replaced by uniform values in [−3, 3] (the robust losses' case), the test targets (seed 1)
    are clean."""
    import numpy as np

    def draw(n, seed):
        rng = np.random.default_rng(seed)
        X = rng.random((n, 2))
        f = np.sin(2 * np.pi * X[:, 0]) * np.cos(2 * np.pi * X[:, 1])
        return X.astype(dtype), f, rng

    X, f, rng = draw(m, 0)
    y = f + 0.1 * rng.standard_normal(m)
    bad = rng.random(m) < outliers
    y[bad] = rng.uniform(-3.0, 3.0, int(bad.sum()))
    Xt, yt, _ = draw(m_test, 1)
    return X, y, Xt, yt
