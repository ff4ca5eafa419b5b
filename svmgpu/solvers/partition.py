"""Regions of the rows for the partitioned (divide-and-conquer) kernel SVM.

C.-J. Hsieh, S. Si and I. S. Dhillon, "A divide-and-conquer solver for kernel support vector
machines" (DC-SVM), ICML 2014: with a kernel that decays with distance, the SVM's dual is
nearly block-diagonal once the rows are clustered, so the SVMs of the clusters together are
close to the SVM of all rows (their Theorem 1 bounds the gap by the kernel mass between
clusters), and each test point is predicted by its cluster's model ("early prediction",
their Section 4). DC-SVM clusters with kernel k-means on a sample; here the clusters are
Euclidean k-means regions (:func:`kmeans`, which for the RBF kernel's monotone distance keeps
near rows together as well) whose sizes are bounded (:func:`bounded_regions`): a region's exact
solve holds its m_g × m_g kernel matrix. What differs from DC-SVM: one level (no multilevel
refinement, no conquer step yet), Euclidean rather than kernel k-means, and the test point's
region chosen by the nearest centre.

Everything is written against the array API (NumPy, CuPy, array-api-strict's device1); the
random choices are host indices drawn from ``random_state`` and uploaded
(:func:`~svmgpu.backend.random_subset`), the same on every backend.
"""

from __future__ import annotations

import math

from svmgpu.backend import (
    array_device,
    fetch_scalars,
    nonzero_indices,
    random_subset,
    random_uniforms,
    seed_from,
    set_rows,
)

#: Rows of the sample on which Lloyd's iterations run (all rows are assigned once at the end).
KMEANS_SAMPLE = 50_000

#: Rows of the sample (at least 8 per centre) from which k-means++ draws the first centres:
#: its cost is rows × centres × (2 + ln centres).
KMEANS_PP_SAMPLE = 16_384

#: Lloyd's iterations at most, and the relative change of the objective that ends them.
KMEANS_MAX_ITER = 10
KMEANS_TOL = 1e-4

#: Rows per block of the assignment's distance products.
_ASSIGN_BLOCK = 8192


def assign(X, centers, *, xp, second=False):
    """The index of the nearest centre of every row of ``X``, int64 array of shape (n,),
    computed over row blocks (``‖x − c‖² = ‖x‖² − 2 xᵀc + ‖c‖²``, the row's norm dropped),
    rows and centres less the centres' mean (features offset by 10⁸ otherwise rounded the
    distances of float64 by ~10, and their regions were noise).

    ``second=True`` returns ``(nearest, second, gap)``: also the second-nearest centre (the
    nearest one when there is one centre) and ``gap = ‖x − c_second‖² − ‖x − c_nearest‖²``
    (≥ 0; the row's norm cancels), in X's dtype.
    """
    n, k = X.shape[0], centers.shape[0]
    dev = getattr(X, "device", None)
    ref = xp.mean(centers, axis=0)
    centers = centers - ref
    c2 = xp.sum(centers * centers, axis=1)
    ids = xp.arange(k, dtype=xp.int64, device=dev)
    first, other, gaps = [], [], []
    for s in range(0, n, _ASSIGN_BLOCK):
        B = X[s:min(s + _ASSIGN_BLOCK, n), ...] - ref
        D = c2[None, :] - 2.0 * xp.matmul(B, xp.matrix_transpose(centers))
        near = xp.astype(xp.argmin(D, axis=1), xp.int64)
        first.append(near)
        if second and k > 1:
            rest = xp.where(ids[None, :] == near[:, None], xp.asarray(math.inf, dtype=D.dtype,
                                                                        device=dev), D)
            other.append(xp.astype(xp.argmin(rest, axis=1), xp.int64))
            gaps.append(xp.maximum(xp.min(rest, axis=1) - xp.min(D, axis=1),
                                   xp.zeros((), dtype=D.dtype, device=dev)))
        elif second:
            other.append(near)
            gaps.append(xp.zeros(near.shape, dtype=D.dtype, device=dev))

    def joined(parts, dtype):
        if not parts:
            return xp.zeros((0,), dtype=dtype, device=dev)
        return parts[0] if len(parts) == 1 else xp.concat(parts)

    labels = joined(first, xp.int64)
    if not second:
        return labels
    return labels, joined(other, xp.int64), joined(gaps, X.dtype)


def group_rows(labels, n_groups, *, xp):
    """``(order, bounds)``: the positions of ``labels`` (ints in 0..n_groups−1) sorted by label
    (stably: ascending inside a group) and, as Python ints (one batched read), where each
    group starts in that order (``order[bounds[j]:bounds[j + 1]]`` are group j's rows). One
    sort instead of a pass over all rows per group."""
    order = xp.argsort(labels, stable=True)
    edges = xp.searchsorted(xp.take(labels, order),
                            xp.arange(n_groups + 1, dtype=labels.dtype,
                                      device=getattr(labels, "device", None)))
    return order, [int(v) for v in fetch_scalars(*[edges[j] for j in range(n_groups + 1)],
                                                  xp=xp)]


def _centres_of(X, labels, k, old, *, xp):
    """The mean of each cluster's rows (a one-hot product per row block); an empty cluster
    keeps its old centre."""
    dev = getattr(X, "device", None)
    sums = xp.zeros((k, X.shape[1]), dtype=X.dtype, device=dev)
    counts = xp.zeros((k,), dtype=X.dtype, device=dev)
    ids = xp.arange(k, dtype=xp.int64, device=dev)
    for s in range(0, X.shape[0], _ASSIGN_BLOCK):
        e = min(s + _ASSIGN_BLOCK, X.shape[0])
        H = xp.astype(labels[s:e, None] == ids[None, :], X.dtype)
        sums = sums + xp.matmul(xp.matrix_transpose(H), X[s:e, ...])
        counts = counts + xp.sum(H, axis=0)
    safe = xp.where(counts > 0, counts, xp.ones_like(counts))
    return xp.where(counts[:, None] > 0, sums / safe[:, None], old)


def _kmeans_pp(X, k, *, seed, xp):
    """Greedy k-means++ centres (Arthur and Vassilvitskii 2007; the greedy variant scikit-learn
    uses): the first a random row; each next one the best, by the potential ``Σ min d²`` it
    leaves, of ``2 + ⌊ln k⌋`` rows drawn with probability proportional to their squared
    distance to the nearest centre so far. Drawn on the device (host uniform numbers times the
    cumulative sum, located by ``searchsorted``), with no host read."""
    m = X.shape[0]
    trials = 2 + int(math.log(k)) if k > 1 else 1
    u = random_uniforms(k * trials, seed=seed)
    first = random_subset(m, 1, seed=seed, device=array_device(X))
    centers = [xp.take(X, first, axis=0)]
    x2 = xp.sum(X * X, axis=1)
    d2 = xp.sum((X - centers[0]) ** 2, axis=1)
    for j in range(1, k):
        cum = xp.cumulative_sum(d2)
        draws = xp.asarray(u[j * trials:(j + 1) * trials], dtype=X.dtype,
                           device=getattr(X, "device", None))
        idx = xp.searchsorted(cum, cum[-1] * draws, side="right")
        idx = xp.minimum(idx, xp.full_like(idx, m - 1))
        cand = xp.take(X, idx, axis=0)  # (trials, d)
        D = x2[:, None] - 2.0 * xp.matmul(X, xp.matrix_transpose(cand)) \
            + xp.sum(cand * cand, axis=1)[None, :]
        D = xp.minimum(d2[:, None], xp.maximum(D, xp.zeros_like(D)))
        best = xp.argmin(xp.sum(D, axis=0))
        c = xp.take(cand, xp.reshape(best, (1,)), axis=0)
        centers.append(c)
        d2 = xp.take(D, xp.reshape(best, (1,)), axis=1)[:, 0]
    return xp.concat(centers, axis=0)


def kmeans(X, k, *, xp, random_state=0, sample=KMEANS_SAMPLE, max_iter=KMEANS_MAX_ITER,
           tol=KMEANS_TOL, second=False):
    """Lloyd's k-means: ``(centers, labels)``, centres of shape (k, d) and every row's nearest
    centre (int64, shape (m,)); with ``second=True``, ``(centers, (labels, second, gap))`` as
    :func:`assign` gives them.

    The centres start by k-means++ (:func:`_kmeans_pp`, seeded by ``random_state``, on
    :data:`KMEANS_PP_SAMPLE` rows of the sample, 8 per centre at least) and move by Lloyd's
    iterations on at most ``sample`` rows (drawn the same way), until the mean squared
    distance changes by less than ``tol`` (relative) or after ``max_iter``; then every row is
    assigned. Deterministic for a given ``random_state``. The iterations run on the sample
    less its mean (the expanded squared distances then round relative to the spread, not to
    an offset of the features).
    """
    m = X.shape[0]
    k = max(1, min(int(k), m))
    seed = seed_from(random_state)
    dev = array_device(X)
    sub = X if m <= sample else xp.take(X, random_subset(m, sample, seed=seed, device=dev),
                                        axis=0)
    ref = xp.mean(sub, axis=0)
    sub = sub - ref
    n_pp = min(sub.shape[0], max(KMEANS_PP_SAMPLE, 8 * k))
    pp = sub if n_pp == sub.shape[0] else xp.take(
        sub, random_subset(sub.shape[0], n_pp, seed=seed + 2, device=dev), axis=0)
    centers = _kmeans_pp(pp, k, seed=seed + 1, xp=xp)
    prev = math.inf
    for _ in range(max_iter):
        labels = assign(sub, centers, xp=xp)
        centers = _centres_of(sub, labels, k, centers, xp=xp)
        diff = sub - xp.take(centers, labels, axis=0)
        (obj,) = fetch_scalars(xp.mean(xp.sum(diff * diff, axis=1)), xp=xp)
        if prev - obj <= tol * obj:
            break
        prev = obj
    centers = centers + ref
    return centers, assign(X, centers, xp=xp, second=second)


def bounded_regions(X, n_regions, max_rows, *, xp, random_state=0, second=False):
    """``(centers, labels)`` of regions of at most ``max_rows`` rows each: :func:`kmeans` into
    ``n_regions`` regions, then every larger region split by 2-means, recursively (k-means
    regions of Covtype ranged from 838 to 27,802 rows for a mean of 7,263; a region's exact
    solve holds its kernel matrix). Regions are numbered 0..g−1 (g = ``centers.shape[0]``),
    none empty; ``labels`` (int64, shape (m,)) is each row's region. ``second=True`` returns
    ``(centers, labels, (nearest, second, gap))``, the last as :func:`assign` gives it for
    these centres (a row of a split region may lie nearer another region's centre than its
    own: ``nearest`` may differ from ``labels``), from k-means' own assignment when nothing
    was split."""
    centers, near = kmeans(X, n_regions, xp=xp, random_state=random_state, second=second)
    labels = near[0] if second else near
    dev = getattr(X, "device", None)
    order, b = group_rows(labels, int(centers.shape[0]), xp=xp)
    todo = [(centers[g, ...], order[b[g]:b[g + 1]])
            for g in range(int(centers.shape[0])) if b[g + 1] > b[g]]
    if all(int(rows.shape[0]) <= max_rows for _, rows in todo) and len(todo) == len(b) - 1:
        return (centers, labels, near) if second else (centers, labels)
    seed = seed_from(random_state)
    out_centers, parts = [], []
    while todo:
        c, rows = todo.pop()
        n = int(rows.shape[0])
        if n <= max_rows:
            out_centers.append(c)
            parts.append(rows)
            continue
        seed += 1
        sub_c, sub_l = kmeans(xp.take(X, rows, axis=0), 2, xp=xp, random_state=seed)
        (n1,) = (int(v) for v in fetch_scalars(xp.count_nonzero(sub_l == 1), xp=xp))
        if n1 in (0, n):  # identical rows: halve them in order
            todo += [(c, rows[:n // 2]), (c, rows[n // 2:])]
            continue
        for j, nj in ((0, n - n1), (1, n1)):
            todo.append((sub_c[j, ...], xp.take(rows, nonzero_indices(sub_l == j, nj, xp=xp))))
    labels = xp.zeros((X.shape[0],), dtype=xp.int64, device=dev)
    for j, rows in enumerate(parts):
        labels = set_rows(labels, rows, xp.full((int(rows.shape[0]),), j, dtype=xp.int64,
                                                device=dev), xp=xp)
    centers = xp.stack(out_centers, axis=0)
    if not second:
        return centers, labels
    return centers, labels, assign(X, centers, xp=xp, second=True)


__all__ = ["assign", "bounded_regions", "group_rows", "kmeans"]
