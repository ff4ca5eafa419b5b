"""Checkerboard data (the "tried and true" 4x4 XOR problem) and label noise."""

from __future__ import annotations

import numbers
import operator

import numpy as np

from ._common import check_float_dtype, check_random_state

__all__ = ["make_checkerboard", "checkerboard_grid", "flip_labels"]


def _check_count(value, name: str, *, minimum: int) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a bool")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if out < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {out}")
    return out


def _check_fraction(fraction, name: str) -> float:
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {fraction!r}")
    value = float(fraction)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {fraction!r}")
    return value


def _parity_labels(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """+1 where the cell indices ``cx + cy`` are even, -1 where odd (int64)."""
    return 1 - 2 * ((cx + cy) & 1).astype(np.int64)


def flip_labels(y, fraction, *, random_state=None):
    """Flip a fraction of binary labels to the other class.

    Exactly ``round(fraction * n_samples)`` labels (Python's ``round``, ties to even) are
    chosen uniformly at random without replacement and replaced by the other class value.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Binary labels: at most two distinct values of any kind (e.g. -1/+1, 0/1, 1/2).
    fraction : float
        Fraction of labels to flip, in [0, 1].
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness (see :func:`numpy.random.default_rng`); a ``Generator`` is
        advanced in place.

    Returns
    -------
    y_new : ndarray of shape (n_samples,)
        A new array of the same dtype as ``np.asarray(y)``; ``y`` is not modified.

    Raises
    ------
    ValueError
        If ``y`` is not one-dimensional, has more than two distinct values, has a single
        distinct value while labels must be flipped, or ``fraction`` is outside [0, 1].
    """
    fraction = _check_fraction(fraction, "fraction")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    classes = np.unique(y)
    if classes.size > 2:
        shown = ", ".join(repr(c) for c in classes[:5].tolist())
        more = ", ..." if classes.size > 5 else ""
        raise ValueError(f"flip_labels needs binary labels, got {classes.size} classes ({shown}{more})")
    n = y.shape[0]
    k = int(round(fraction * n))
    rng = check_random_state(random_state)
    y_new = y.copy()
    if k == 0:
        return y_new
    if classes.size < 2:
        raise ValueError(
            f"flip_labels needs two classes to flip between, but y holds only {classes.tolist()!r}"
        )
    idx = rng.choice(n, size=k, replace=False)
    a, b = classes[0], classes[1]
    y_new[idx] = np.where(y[idx] == a, b, a)
    return y_new


def make_checkerboard(n_samples, *, grid=4, flip=0.0, dtype=np.float64, random_state=None):
    """Random Checkerboard data: uniform points in the unit square, labelled by cell parity.

    Points are drawn uniformly in ``[0, 1)^2``. The square is cut into ``grid x grid``
    cells of side ``1 / grid``; the point ``x`` lies in cell
    ``(i, j) = (floor(grid * x[0]), floor(grid * x[1]))`` (computed in float64, so it is
    exact for float32 data too) and gets label ``+1`` if ``i + j`` is even, ``-1`` if odd.
    With ``grid=4`` this is the "tried and true" Checkerboard of the papers (UniSVM's
    Checkerboard3M uses ``n_samples=3_000_000``, gamma = 2**4 on these coordinates).

    Parameters
    ----------
    n_samples : int
        Number of points, >= 0.
    grid : int, default=4
        Number of cells along each axis, >= 1.
    flip : float, default=0.0
        Fraction of labels flipped to the other class (label noise), in [0, 1]; exactly
        ``round(flip * n_samples)`` labels are flipped, see :func:`flip_labels`.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Floating dtype of ``X``.
    random_state : None, int or numpy.random.Generator, default=None
        Source of randomness; the same int gives the same data.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), dtype ``dtype``
        Coordinates in ``[0, 1)``.
    y : ndarray of shape (n_samples,), dtype int64
        Labels in {-1, +1} (after flipping, if ``flip > 0``).
    """
    n_samples = _check_count(n_samples, "n_samples", minimum=0)
    grid = _check_count(grid, "grid", minimum=1)
    flip = _check_fraction(flip, "flip")
    dt = check_float_dtype(dtype)
    rng = check_random_state(random_state)

    X = rng.random((n_samples, 2), dtype=dt)
    # Cell indices from the exact float64 product; the clip guards grid * x == grid.
    cells = np.floor(X.astype(np.float64, copy=False) * grid).astype(np.int64)
    np.minimum(cells, grid - 1, out=cells)
    y = _parity_labels(cells[:, 0], cells[:, 1])
    if flip > 0.0:
        y = flip_labels(y, flip, random_state=rng)
    return X, y


def checkerboard_grid(side, *, grid=4, dtype=np.float64, unit_square=False):
    """The papers' discretized Checkerboard: all ``side x side`` integer grid points.

    Point ``(i, j)`` for ``i, j = 0, ..., side - 1`` (row-major: row ``k`` holds
    ``i = k // side``, ``j = k % side``) lies in cell
    ``(i * grid // side, j * grid // side)``, i.e. cells of ``side / grid`` points, and
    gets label ``+1`` if the sum of the cell indices is even, ``-1`` if odd.

    By default the coordinates are the raw integers ``0 .. side - 1``, so the kernel width
    of a paper applies unchanged: Zhou (2013) uses ``side=200`` (40,000 points on
    ``[0, 199]^2``, 4x4 cells of 50x50 points) with gamma = 0.001. With
    ``unit_square=True`` the coordinates are divided by ``side - 1`` so the points
    discretize ``[0, 1]^2``, as in UniSVM's Checkerboard3M (``side=2000``: 4,000,000
    points, gamma = 2**4); the labels are the same in both cases (they come from the
    integer indices, so every cell holds the same number of points when ``grid`` divides
    ``side``).

    Parameters
    ----------
    side : int
        Number of grid points along each axis, >= 1.
    grid : int, default=4
        Number of cells along each axis, between 1 and ``side``.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Floating dtype of ``X``.
    unit_square : bool, default=False
        Scale the coordinates to ``[0, 1]`` (divide by ``side - 1``; no-op when ``side == 1``).

    Returns
    -------
    X : ndarray of shape (side * side, 2), dtype ``dtype``
        Integer coordinates ``0 .. side - 1`` (or scaled to [0, 1]).
    y : ndarray of shape (side * side,), dtype int64
        Labels in {-1, +1}.
    """
    side = _check_count(side, "side", minimum=1)
    grid = _check_count(grid, "grid", minimum=1)
    if grid > side:
        raise ValueError(f"grid must be <= side, got grid={grid}, side={side}")
    dt = check_float_dtype(dtype)
    ticks = np.arange(side, dtype=np.int64)
    cell = ticks * grid // side
    ii = np.repeat(ticks, side)
    jj = np.tile(ticks, side)
    y = _parity_labels(cell[ii], cell[jj])
    coords = ticks.astype(np.float64)
    if unit_square and side > 1:
        coords = coords / (side - 1)
    X = np.empty((side * side, 2), dtype=dt)
    X[:, 0] = coords[ii]
    X[:, 1] = coords[jj]
    return X, y
