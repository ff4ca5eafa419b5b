"""Class probabilities from decision values (``probability=True``), on the decision values' device.

* Platt's sigmoid ``P(positive | f) = 1 / (1 + exp(A f + B))`` (Platt 1999), fitted by the Newton
  method with backtracking of Lin, Lin and Weng (2007), "A note on Platt's probabilistic outputs
  for support vector machines", Algorithm 1, on regularized targets ``(N₊ + 1)/(N₊ + 2)`` and
  ``1/(N₋ + 2)``; on held-out decision values, as LIBSVM does.
* One-vs-one: pairwise coupling by Wu, Lin and Weng (2004), "Probability estimates for
  multi-class classification by pairwise coupling", method 2 (their (21)): ``p`` minimizes
  ``Σ_i Σ_{j≠i} (r_ji p_i − r_ij p_j)²`` with ``Σ p = 1``, the linear system of their (18) solved
  for every sample at once.
* One-vs-rest: the per-class sigmoids, normalised to sum to one.
* :func:`fit_platt`: the sigmoids of a fitted classifier from held-out decision values (LIBSVM's
  internal 5-fold cross-validation).
"""

from __future__ import annotations

import math
import warnings

# NumPy here is the host edge: the folds' random permutation is drawn on the host and uploaded.
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from svmgpu.backend import (
    check_fits,
    clip,
    fetch_scalars,
    host_array,
    is_sparse,
    numpy_dtype,
    take_rows,
    to_device,
)

#: Folds of the internal cross-validation that fits Platt's sigmoids (``probability=True``), as
#: in LIBSVM.
PROBABILITY_FOLDS = 5

#: LIBSVM's clamp of the pairwise probabilities before coupling (keeps the system regular).
_MIN_PROB = 1e-7


def _softplus(z, *, xp):
    return xp.logaddexp(xp.zeros_like(z), z)


def fit_sigmoid(f, positive, weight=None, *, xp, max_iter=100, min_step=1e-10, sigma=1e-12,
                eps=1e-5):
    """Platt's ``(A, B)`` for decision values ``f`` (shape (n,)) and the boolean ``positive``.

    Maximizes the (``weight``-weighted) likelihood of the targets ``(N₊ + 1)/(N₊ + 2)`` for
    positive samples and ``1/(N₋ + 2)`` for the others (Lin, Lin and Weng 2007, Algorithm 1;
    ``N`` are weighted counts; zero weight leaves a sample out). One device read per Newton
    iteration and one per backtracking step.

    Returns
    -------
    (A, B) : floats
    """
    f = xp.astype(f, xp.float64)
    pos = xp.astype(positive, xp.float64)
    w = xp.ones_like(f) if weight is None else xp.astype(weight, xp.float64)
    n1, n0 = fetch_scalars(xp.sum(w * pos), xp.sum(w * (1.0 - pos)), xp=xp)
    if not (n1 > 0 and n0 > 0):
        raise ValueError("Platt scaling needs held-out decision values of both classes")
    T = pos * ((n1 + 1.0) / (n1 + 2.0)) + (1.0 - pos) * (1.0 / (n0 + 2.0))

    def objective(A, B):  # the negative log-likelihood, Σ w (softplus(z) + (T − 1) z)
        z = f * A + B
        return xp.sum(w * (_softplus(z, xp=xp) + (T - 1.0) * z))

    A, B = 0.0, math.log((n0 + 1.0) / (n1 + 1.0))
    fval = fetch_scalars(objective(A, B), xp=xp)[0]
    for _ in range(max_iter):
        z = f * A + B
        sp = _softplus(z, xp=xp)
        p, q = xp.exp(-sp), xp.exp(z - sp)  # P(positive) and 1 − p, without overflow
        d2, d1 = w * p * q, w * (T - p)
        h11, h22, h21, g1, g2 = fetch_scalars(
            xp.sum(f * f * d2), xp.sum(d2), xp.sum(f * d2), xp.sum(f * d1), xp.sum(d1), xp=xp)
        if abs(g1) < eps and abs(g2) < eps:
            break
        h11, h22 = h11 + sigma, h22 + sigma
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            new = fetch_scalars(objective(A + step * dA, B + step * dB), xp=xp)[0]
            if new < fval + 1e-4 * step * gd:
                A, B, fval = A + step * dA, B + step * dB, new
                break
            step /= 2.0
        else:  # no decrease along the Newton direction: at the optimum to rounding
            break
    return float(A), float(B)


def sigmoid(f, A, B, *, xp):
    """``1 / (1 + exp(A f + B))`` in float64."""
    return xp.exp(-_softplus(xp.astype(f, xp.float64) * A + B, xp=xp))


def class_probabilities(scores, prob_a, prob_b, *, pairs, n_classes, xp):
    """Probabilities of shape (n, n_classes) from the binary problems' decision values
    ``scores`` (a list of (n,) arrays) and their sigmoids; ``pairs`` as ``SVCBase.pairs_``
    (None: one model for two classes, or one-vs-rest)."""
    # each sigmoid within [1e-7, 1 − 1e-7], as LIBSVM: far points get a probability of 1e-7,
    # not 0, so predict_log_proba stays finite
    probs = [clip(sigmoid(s, a, b, xp=xp), min=_MIN_PROB, max=1.0 - _MIN_PROB, xp=xp)
             for s, a, b in zip(scores, prob_a, prob_b)]
    if len(probs) == 1:  # two classes: the model's positive class is classes_[1]
        return xp.stack([1.0 - probs[0], probs[0]], axis=1)
    if pairs is None:
        P = xp.stack(probs, axis=1)
        return P / xp.sum(P, axis=1, keepdims=True)
    return _couple(probs, pairs, n_classes, xp=xp)


def check_platt_classes(counts, classes):
    """The folds of Platt's cross-validation (at most :data:`PROBABILITY_FOLDS`, at least 2);
    a ValueError naming the class when one has fewer than 2 samples (checked before the fit)."""
    n_folds = min(PROBABILITY_FOLDS, int(min(counts)))
    if n_folds < 2:
        k = min(range(len(counts)), key=lambda c: counts[c])
        label = classes[k]
        label = label.item() if hasattr(label, "item") else label  # (a NumPy scalar's repr)
        raise ValueError(
            f"probability=True fits Platt's sigmoid on held-out decision values (a "
            f"cross-validation within the training set) and needs at least 2 samples of "
            f"each class; class {label!r} has {int(counts[k])}: use probability=False "
            "or more data")
    return n_folds


def _couple(probs, pairs, k, *, xp):
    """Wu, Lin and Weng (2004) method 2: for each sample, solve
    ``[[Q, 1], [1ᵀ, 0]] [p; b] = [0; 1]`` with ``Q_ii = Σ_{j≠i} r_ji²``, ``Q_ij = −r_ji r_ij``."""
    r = {}
    for (i, j), p in zip(pairs, probs):  # the pair's model is positive for class i
        p = clip(p, min=_MIN_PROB, max=1.0 - _MIN_PROB, xp=xp)
        r[i, j], r[j, i] = p, 1.0 - p
    ref = probs[0]
    zero, one = xp.zeros_like(ref), xp.ones_like(ref)
    rows = []
    for i in range(k):
        row = []
        for j in range(k):
            if i == j:
                diag = zero
                for s in range(k):
                    if s != i:
                        diag = diag + r[s, i] * r[s, i]
                row.append(diag)
            else:
                row.append(-r[j, i] * r[i, j])
        row.append(one)
        rows.append(xp.stack(row, axis=1))
    rows.append(xp.stack([one] * k + [zero], axis=1))
    M = xp.stack(rows, axis=1)  # (n, k + 1, k + 1)
    rhs = xp.stack([zero] * k + [one], axis=1)[:, :, None]
    p = xp.linalg.solve(M, rhs)[:, :k, 0]
    p = clip(p, min=0.0, max=1.0, xp=xp)
    return p / xp.sum(p, axis=1, keepdims=True)


#: Per-row vectors of the folds' bookkeeping, counted as float64 (see :func:`fit_platt`).
_FOLD_VECTORS = 8


def fit_platt(est, X, y_idx, sample_weight, *, n_folds, ctx):
    """Platt's sigmoids (``probA_``, ``probB_``, one per binary problem) on held-out
    decision values: LIBSVM's internal cross-validation in ``n_folds`` folds
    (:func:`check_platt_classes`, checked before the main fit), stratified by class. Each
    fold refits the estimator (``probability=False``) on the other folds, so the fit costs
    about five more fits. Everything stays on the fit's device; the folds come from a
    random permutation drawn on the host (``random_state``) and uploaded once."""
    xp = ctx.xp
    k, m = int(est.classes_.shape[0]), int(X.shape[0])
    seed = est.random_state if isinstance(est.random_state, (int, np.integer)) else 0
    key = to_device(np.random.default_rng(seed).permutation(m), ctx.device)
    # by class, shuffled within (distinct keys: no stable sort needed), then each class dealt
    # round-robin to the folds
    order = xp.argsort(xp.astype(y_idx, xp.int64) * m + key, stable=False)
    fold = xp.argsort(order, stable=False) % n_folds
    held_rows, held_scores = [], []
    # the folds' copies of X's rows (training and held-out: all of X once) come out of the
    # budget first; each fold's fit gets the rest
    copies = X.data.nbytes + X.indices.nbytes if is_sparse(X) else \
        int(X.shape[0]) * int(X.shape[1]) * numpy_dtype(X.dtype).itemsize
    # with the folds' per-row bookkeeping (permutation, order, folds, their indices, labels,
    # weights, held-out scores) and the main model, which stays while the folds fit
    model = sum(int(getattr(v, "nbytes", 0)) for v in vars(est).values())
    reserved = copies + _FOLD_VECTORS * 8 * m + model
    check_fits(reserved, ctx.budget_bytes, what="probability=True's cross-validation folds (a "
               "copy of X's rows, their per-row vectors and the main model)",
               hint="use probability=False")
    fold_params = {"memory_budget": ctx.budget_bytes - reserved, **est._fold_params()}
    # (the folds' labels are the class indices: a dict of class weights follows them)
    if isinstance(getattr(est, "class_weight", None), dict):
        fold_params["class_weight"] = dict(enumerate(est.class_weight_.tolist()))
    for f in range(n_folds):
        train, held = xp.nonzero(fold != f)[0], xp.nonzero(fold == f)[0]
        fold_est = clone(est).set_params(probability=False, **fold_params)
        with warnings.catch_warnings():  # the model itself warned already, if at all (the
            warnings.simplefilter("ignore", ConvergenceWarning)  # same configuration on more
            warnings.simplefilter("ignore", UserWarning)  # rows): no second copy per fold
            kw = {} if sample_weight is None else \
                {"sample_weight": xp.take(sample_weight, train)}
            fold_est.fit(take_rows(X, train, xp=xp), xp.take(y_idx, train), **kw)
        if int(fold_est.classes_.shape[0]) != k:  # pragma: no cover - stratified folds
            raise RuntimeError("a cross-validation fold lost a class")
        held_rows.append(held)
        held_scores.append(xp.stack(fold_est._raw_decision(take_rows(X, held, xp=xp))[0], axis=1))
    rows = xp.concat(held_rows)
    F, y_h = xp.concat(held_scores, axis=0), xp.take(y_idx, rows)
    w_h = None if sample_weight is None else xp.take(sample_weight, rows)
    prob_a, prob_b = [], []
    for j in range(int(F.shape[1])):
        if est.pairs_ is None:  # binary (positive: class 1) or one-vs-rest (class j)
            positive, w = y_h == (1 if k == 2 else j), w_h
        else:  # one-vs-one (i, l): positive i, rows of the two classes only
            i, l = est.pairs_[j]
            both = xp.astype((y_h == i) | (y_h == l), xp.float64)
            positive, w = y_h == i, both if w_h is None else both * xp.astype(w_h, xp.float64)
        a, b = fit_sigmoid(F[:, j], positive, w, xp=xp)
        prob_a.append(a)
        prob_b.append(b)
    est.probA_ = host_array(prob_a, "float64")
    est.probB_ = host_array(prob_b, "float64")
