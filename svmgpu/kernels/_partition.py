"""A spatial partition of rows into blocks, to skip kernel evaluations that are negligible.

For a kernel that decays with distance (RBF, Laplacian), a kernel column ``K(X, z)`` is below
a threshold on every row farther than ``r = kernel.negligible_distance(threshold)`` from ``z``.
:class:`RowPartition` orders the rows along a balanced k-d tree (median splits on the
coordinate of largest variance) so that each leaf is a contiguous block of nearby rows, and
keeps every block's bounding box. A block whose box lies entirely beyond ``r`` from ``z`` can be
skipped. Boxes (rather than balls) keep one-hot features exact: two rows in different
categories are √2 apart, and a block of one category is skipped for the others.

Host (NumPy) only: on a GPU the per-column block list would need a device-to-host copy per
column, and evaluating the full column is cheap there.
"""

from __future__ import annotations

from numbers import Integral

# NumPy by design: the k-d tree is built and walked on the host (GS-SVM's pruned columns, a
# named host exception of the device-residency tests); device data never comes here.
import numpy as np

#: Default rows per block: large enough that a block is one efficient kernel evaluation, small
#: enough that a local kernel skips most of them.
DEFAULT_LEAF_SIZE = 512

#: Ranges of rows closer than this are evaluated as one (a kernel evaluation costs a few
#: microseconds of overhead, a row a few nanoseconds).
DEFAULT_MERGE_GAP = 2048


class RowPartition:
    """Rows ordered so that the leaves of a balanced k-d tree are contiguous blocks.

    Parameters
    ----------
    X : NumPy array of shape (n, d)
        The rows (any real float dtype; bounds are computed in float64).
    leaf_size : int
        Blocks hold between ``leaf_size // 2`` and ``leaf_size`` rows (one block when
        ``n <= leaf_size``).

    Attributes
    ----------
    perm : int array of shape (n,)
        Row ``k`` of the partitioned order is row ``perm[k]`` of ``X``; inside a block the
        original order is kept (ascending ``perm``).
    starts : int array of shape (n_blocks + 1,)
        Block ``b`` holds the partitioned rows ``starts[b]:starts[b + 1]``.
    lower, upper : float64 arrays of shape (n_blocks, d)
        Each block's bounding box.
    """

    def __init__(self, X, leaf_size=DEFAULT_LEAF_SIZE):
        if isinstance(leaf_size, bool) or not isinstance(leaf_size, Integral) or leaf_size < 1:
            raise ValueError(f"leaf_size must be an integer >= 1, got {leaf_size!r}")
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"X must be a 2-D array with at least one row, got shape {X.shape}")
        n = X.shape[0]
        perm = np.arange(n)
        bounds = []
        stack = [(0, n)]
        while stack:  # depth first, left child last on the stack: leaves come out in order
            s, e = stack.pop()
            if e - s <= leaf_size:
                perm[s:e].sort()
                bounds.append(s)
                continue
            idx = perm[s:e]
            rows = X[idx]
            k = int(np.argmax(rows.var(axis=0)))
            half = (e - s) // 2
            perm[s:e] = idx[np.argpartition(rows[:, k], half)]
            stack.append((s + half, e))
            stack.append((s, s + half))
        self.perm = perm
        self.starts = np.asarray(bounds + [n], dtype=np.int64)
        Xp = X[perm]
        self.lower = np.minimum.reduceat(Xp, self.starts[:-1], axis=0).astype(np.float64)
        self.upper = np.maximum.reduceat(Xp, self.starts[:-1], axis=0).astype(np.float64)
        self._keep = np.zeros(self.n_blocks + 2, dtype=np.int8)

    @property
    def n_blocks(self) -> int:
        return len(self.starts) - 1

    def near(self, z, r, merge_gap=DEFAULT_MERGE_GAP):
        """Row ranges ``[(start, stop), …]`` (partitioned order) covering the blocks that may
        hold a row within distance ``r`` of the point ``z``. Adjacent blocks are merged, and so
        are two ranges less than ``merge_gap`` rows apart (one longer evaluation costs less than
        two short ones)."""
        z = np.asarray(z, dtype=np.float64)
        # distance from z to each block's bounding box, squared (slightly shrunk for rounding)
        out = np.maximum(self.lower - z, z - self.upper)
        np.maximum(out, 0.0, out=out)
        np.multiply(out, out, out=out)
        keep = self._keep
        np.less(out.sum(axis=1) * (1 - 1e-9), r * r, out=keep[1:-1], casting="unsafe")
        edges = self.starts[np.flatnonzero(np.diff(keep))].tolist()  # runs: start, stop, ...
        ranges = [(edges[0], edges[1])] if edges else []
        for j in range(2, len(edges), 2):
            if edges[j] - ranges[-1][1] < merge_gap:
                ranges[-1] = (ranges[-1][0], edges[j + 1])
            else:
                ranges.append((edges[j], edges[j + 1]))
        return ranges

    @staticmethod
    def worthwhile(X, r, leaf_size=DEFAULT_LEAF_SIZE):
        """Whether partitioning ``X`` can skip anything: more than two blocks' worth of rows
        and ``r`` shorter than the diagonal of the bounding box."""
        X = np.asarray(X)
        if r is None or X.shape[0] <= 2 * leaf_size:
            return False
        span = X.max(axis=0).astype(np.float64) - X.min(axis=0)
        return bool(r < np.sqrt(np.sum(span * span)))
