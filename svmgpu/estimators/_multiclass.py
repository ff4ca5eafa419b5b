"""Multi-class problems as binary ones: one-vs-rest or one-vs-one (LIBSVM's), and the votes of
one-vs-one with scikit-learn's confidence squashing."""

from __future__ import annotations

import itertools


def class_pairs(n_classes, multi):
    """The pairs ``(i, j)``, ``i < j``, of one-vs-one (None for two classes or one-vs-rest)."""
    if multi == "ovo" and n_classes > 2:
        return list(itertools.combinations(range(n_classes), 2))
    return None


def binary_problems(y_idx, n_classes, pairs, sample_weight, *, xp, dtype, dask=False):
    """``(rows or None, labels ±1, weights)`` of each binary problem, in the order of the fitted
    models: one for two classes (positive: class 1), one per class for one-vs-rest (positive:
    that class), one per pair for one-vs-one (the two classes' rows; positive: the first)."""
    def labels(mask):
        if dask:  # (a Dask array: its own astype)
            return 2.0 * mask.astype(dtype) - 1.0
        return 2.0 * xp.astype(mask, dtype) - 1.0

    if n_classes == 2:
        yield None, labels(y_idx == 1), sample_weight
    elif pairs is None:
        for k in range(n_classes):
            yield None, labels(y_idx == k), sample_weight
    else:
        for i, j in pairs:
            rows = xp.nonzero((y_idx == i) | (y_idx == j))[0]
            yield (rows, labels(xp.take(y_idx, rows) == i),
                   None if sample_weight is None else xp.take(sample_weight, rows, axis=0))


def ovo_vote_counts(scores, pairs, n_classes, *, xp):
    """Each class's one-vs-one votes, shape (n, n_classes) in the scores' dtype: the pair
    (i, j) votes for i where its decision value is positive, else for j (LIBSVM's vote)."""
    n = scores[0].shape[0]
    votes = xp.zeros((n, n_classes), dtype=scores[0].dtype,
                     device=getattr(scores[0], "device", None))
    one, zero = xp.ones_like(scores[0]), xp.zeros_like(scores[0])
    for (i, j), s in zip(pairs, scores):
        pos = xp.where(s > 0, one, zero)
        votes[:, i] += pos
        votes[:, j] += 1 - pos
    return votes


def ovo_votes(scores, pairs, n_classes, *, xp):
    """One-vs-one decision values as scikit-learn's "ovr" shape: each class's votes plus its
    summed pairwise confidences squashed into (−⅓, ⅓), so that ``argmax`` is the class with the
    most votes, ties broken by confidence. ``scores``: one (n,) array per pair."""
    votes = ovo_vote_counts(scores, pairs, n_classes, xp=xp)
    conf = xp.zeros_like(votes)
    for (i, j), s in zip(pairs, scores):
        conf[:, i] += s
        conf[:, j] -= s
    return votes + conf / (3 * (xp.abs(conf) + 1))
