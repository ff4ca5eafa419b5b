"""Closed-form least-squares SVMs: LS-SVM, PSVM and WPSVM through one least-squares core.

All three minimize a weighted, regularized least-squares problem

    min  ½‖f‖² + C Σᵢ sᵢ (1 − yᵢ f(xᵢ))² = ½‖f‖² + C Σᵢ sᵢ (yᵢ − f(xᵢ))²       (yᵢ = ±1)

(ψ(u) = u², the library's convention) and differ only in the model of ``f``, the norm and the
weights; :func:`least_squares` solves every case in one of two forms:

* **Primal / feature form**, ``f(x) = φ(x)ᵀw (+ b)`` with ``m × r`` features ``P``:

      (λ B + Pᵀ S P) w = Pᵀ S y,   λ = 1/(2C),                                   (Zhou (21))

  with ``B = I`` or ``B = K_JJ`` (plus the ridge ``ε I`` on ``λB``); an offset ``b`` enters as
  a constant feature 1 regularized by ``½ b²`` and is accumulated analytically (no column of
  ones is materialized). ``PᵀSP`` and ``PᵀSy`` are sums over row blocks.

  - PSVM, linear (Fung & Mangasarian; WPSVM paper (3)–(10)): ``P = A`` (the data), ``B = I``
    with the offset. Their (9) is the SMW form of (7); both reduce ``(I/ν + HHᵀ)⁻¹`` (m × m)
    to the (n+1) × (n+1) system solved here: ``[w; −r] = (I/ν + HᵀH)⁻¹ Hᵀ e`` with
    ``H = D[A −e]``, i.e. this primal system with ``λ = 1/ν`` (``C = ν/2``).
  - PSVM, nonlinear with a reduced kernel (13)–(16): ``P = K(A, Ā)`` (m × m̄), ``B = I``.
  - WPSVM (17)–(29): as PSVM with weights ``sᵢ²``: (17) penalizes ``ν/2 ‖S ξ‖²``. (The
    printed (18) lacks the inverse and (26) has ``S e`` for ``e`` on the right; the forms
    here follow from the KKT conditions (19)/(24)–(25).)
  - reduced LS-SVM (Zhou (21)): ``P = K(X, X_J)``, ``B = K_JJ`` with the ridge.

* **Dual / kernel form** (LS-SVM, Zhou (8)/(9), the stable form): ``f = K α`` with
  ``α = S^½ (λ I + S^½ K S^½)⁻¹ S^½ y``, an m × m SPD system whose eigenvalues are >= λ;
  with an offset the kernel becomes ``K + 1`` (a constant feature) and ``b = Σ αᵢ``.

The per-class centre-distance weights of WPSVM (22) are :func:`center_distance_weights`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time

from svmgpu.backend import (
    block_rows,
    cho_solve,
    clip,
    is_sparse,
    native_device,
    parse_bytes,
    row_sq_norms,
    serial_blas,
    sparse_product_t,
    spd_factor,
)
from svmgpu.lowrank import as_operator
from svmgpu.solvers._result import SolverResult

#: Feature counts up to which the passes over P run on one BLAS thread (memory-bound).
_SERIAL_COLUMNS = 64


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def least_squares(y, *, C, P=None, K=None, B=None, ridge=1e-8,
                  fit_intercept=False, sample_weight=None, factor=None, memory_budget=None, xp):
    """The least-squares core shared by LS-SVM, PSVM and WPSVM.

    Minimizes ``½ wᵀBw (+ ½ b²) + C Σᵢ sᵢ (yᵢ − Fᵢ w (− b))²`` (primal, given ``P``), or
    ``½ ‖f‖²_K (+ ½ b²) + C Σᵢ sᵢ (yᵢ − f(xᵢ))²`` over ``f = K α (+ b)`` (dual, given ``K``).

    Parameters
    ----------
    y : array of shape (m,)
        Targets (labels ±1 for classification).
    C : float
        Loss weight; ``λ = 1/(2C)`` is the paper's regularization parameter (``ν = 2C`` of PSVM).
    P : FeatureOperator or array of shape (m, r), optional
        The features of the primal form (any float dtype; the r × r system is float64).
    K : array of shape (m, m), optional
        The kernel matrix of the dual form (exactly one of ``P`` / ``K``).
    B : array of shape (r, r), optional
        Regularizer of the primal form (None: identity). When given, ``ridge`` is added to
        ``λB`` (Zhou 2013's ε for M1).
    ridge : float
        ε of the RKHS regularizer (ignored for ``B = None`` and in the dual form).
    fit_intercept : bool
        Fit an offset ``b`` regularized by ``½ b²`` (PSVM's ``½ r²``).
    sample_weight : array of shape (m,), optional
        Non-negative weights ``sᵢ``.
    factor : object, optional
        The ``info["factor"]`` of an earlier call with the same ``P`` / ``K``,
        ``B``, ``C`` and weights: only the right-hand side is computed (one-vs-rest).
    memory_budget : int, str or None
        Bytes for the row blocks of ``PᵀSP`` and ``PᵀSy`` (None: half the free memory).
    xp : namespace

    Returns
    -------
    SolverResult
        ``coef``: w of shape (r,) (primal) or α of shape (m,) (dual), float64;
        ``info["intercept"]`` (float, 0 without an offset), ``info["method"]`` ("primal" or
        "dual"), ``info["lambda"]``, ``info["factor"]``. ``n_iter`` is 1.
    """
    t0 = time.perf_counter()
    C = _check_positive("C", C)
    if (P is None) == (K is None):
        raise ValueError("pass exactly one of P= (primal form) and K= (dual form)")
    if P is not None:
        P = as_operator(P, memory_budget=memory_budget)
    lam = 1.0 / (2.0 * C)
    f64 = xp.float64
    m = (P if P is not None else K).shape[0]
    dev = P.device.native_device if P is not None else getattr(K, "device", None)
    if tuple(y.shape) != (m,):
        raise ValueError(f"y must have shape ({m},), got {tuple(y.shape)}")
    s = sample_weight
    if sample_weight is not None:
        if tuple(s.shape) != (m,):
            raise ValueError(f"sample_weight must have shape ({m},), got {tuple(s.shape)}")
        if (P is None or not P.distributed) and not bool(xp.all(s >= 0)):
            raise ValueError("sample_weight must be non-negative")  # (Dask: the estimator's)
    info = {"lambda": lam, "method": "primal" if P is not None else "dual"}

    if P is not None:
        r = P.shape[1]
        if B is not None and tuple(B.shape) != (r, r):
            raise ValueError(f"B must have shape ({r}, {r}), got {tuple(B.shape)}")
        n = r + int(bool(fit_intercept))
        sums = functools.partial(primal_sums, fit_intercept=bool(fit_intercept),
                                 gram=factor is None)
        # the one pass over P (on Dask: on each partition, the sums added)
        c, q, Q, sum_sy, sum_s = P.reduce(sums, y, s)
        if fit_intercept:
            c = xp.concat([c, xp.reshape(xp.asarray(sum_sy, dtype=f64, device=dev), (1,))])
        if factor is None:
            reg = (xp.eye(r, dtype=f64, device=dev) if B is None
                   else xp.astype(B, f64) + (float(ridge) / lam) * xp.eye(r, dtype=f64, device=dev))
            M = xp.zeros((n, n), dtype=f64, device=dev)
            M[:r, :r] = Q + lam * reg
            if fit_intercept:
                M[:r, r] = q
                M[r, :r] = q
                M[r, r] = float(sum_s) + lam
            factor = spd_factor(M, xp=xp, allow_jitter=True,
                                what=f"the normal equations (λB + PᵀSP) of the primal form "
                                     f"(C={C:g})")
        w = cho_solve((factor, True), c, xp=xp)
        coef = w[:r]
        info["intercept"] = float(w[r]) if fit_intercept else 0.0
    else:
        if tuple(K.shape) != (m, m):
            raise ValueError(f"K must be square, got {tuple(K.shape)}")
        sq = None if s is None else xp.sqrt(xp.astype(s, f64))
        if factor is None:
            K = xp.astype(K, f64)  # a copy: K is kept by the caller
            if fit_intercept:
                K = K + 1.0
            if sq is not None:
                K = K * sq[:, None] * sq[None, :]
            K = K + lam * xp.eye(m, dtype=f64, device=dev)
            factor = spd_factor(K, xp=xp, allow_jitter=True,
                                what=f"the dual system λI + S½KS½ (C={C:g})")
            del K
        y = xp.astype(y, f64)
        rhs = y if sq is None else sq * y
        beta = cho_solve((factor, True), rhs, xp=xp)
        coef = beta if sq is None else sq * beta
        info["intercept"] = float(xp.sum(coef)) if fit_intercept else 0.0
    info["factor"] = factor
    return SolverResult(coef=coef, n_iter=1, converged=True, objective_history=[],
                        timings={"total": time.perf_counter() - t0}, info=info)


def primal_sums(P, y, s, *, fit_intercept, gram):
    """The sums over the rows of the primal least-squares system, in one pass over ``P``:
    ``(Pᵀ(s∘y), Pᵀs or None, PᵀSP or None, Σ s∘y, Σ s)`` (s = 1 without weights). Each adds
    over any split of the rows (a Dask fit adds those of its partitions)."""
    xp = P.xp
    f64 = xp.float64
    m = P.shape[0]
    y = xp.astype(y, f64)
    s = None if s is None else xp.astype(s, f64)
    sy = y if s is None else s * y
    # Few columns: the passes over P are memory-bound, and one BLAS thread is as fast (and far
    # faster on a loaded machine, see backend.serial_blas).
    passes = serial_blas(xp=xp) if P.shape[1] <= _SERIAL_COLUMNS else contextlib.nullcontext()
    with passes:
        if fit_intercept and gram:  # Pᵀ[Sy, s] in one pass over P
            ones = xp.ones((m,), dtype=f64, device=P.device.native_device)
            PW = P.rmatvec(xp.stack([sy, ones if s is None else s], axis=1))  # (r, 2)
            c, q = PW[:, 0], PW[:, 1]
        else:
            c, q = P.rmatvec(sy), None
        Q = P.gram(s, nonnegative=True) if gram else None
    return c, q, Q, xp.sum(sy), (m if s is None else xp.sum(s))


def center_distance_weights(X, y, *, q, sample_weight=None, memory_budget=None, xp):
    """WPSVM weights ``s = 1 − d / (R + q)`` (22), class by class.

    For each class (label −1 and +1): the centre is the mean of its points (weighted by
    ``sample_weight`` when given), ``d`` the Euclidean distance of a point to its class centre
    and ``R`` the largest such distance in the class (the class radius). Points far from their
    class centre — likely noise or outliers — get small weights; ``q > 0`` keeps them positive.

    Parameters
    ----------
    X : array or sparse matrix of shape (m, n_features)
        Sparse rows are never densified (distances from ``‖x‖² − 2xᵀc + ‖c‖²``).
    y : array of shape (m,)
        Labels −1 / +1.
    q : float
        Positive tuning constant (in the units of X).
    sample_weight : array of shape (m,), optional
        Rows of weight 0 do not count for centres and radii (their ``s`` is clipped at 0).
    memory_budget : int, str or None
        Bytes for the float64 rows of dense X converted a block at a time (None: all rows in
        one block, the Dask form's lazy formulas).

    Returns
    -------
    s : array of shape (m,), float64, in (0, 1] (in [0, 1] for rows of zero weight)

    Raises
    ------
    ValueError
        When ``q`` is not positive or a class has no point of positive weight.
    """
    q = _check_positive("q", q)
    f64 = xp.float64
    sparse = is_sparse(X)
    y = xp.astype(y, f64)
    m = X.shape[0]
    # dense rows a block at a time in float64 (three (rows, n) temporaries alive at once, in
    # half the budget: the features and vectors of the fit hold the rest)
    step = m if memory_budget is None or sparse else \
        block_rows(X.shape[1], 8, parse_bytes(memory_budget) // 2, n_buffers=3, max_rows=m)
    blocks = [(s0, min(s0 + step, m)) for s0 in range(0, m, step)]
    dev = native_device(X)
    sw = (xp.ones((m,), dtype=f64, device=dev) if sample_weight is None
          else xp.astype(sample_weight, f64))
    s = xp.zeros((m,), dtype=f64, device=dev)
    sq_x = row_sq_norms(X, xp=xp) if sparse else None
    for label in (-1.0, 1.0):
        cls = y == label
        wc = xp.where(cls, sw, xp.zeros_like(sw))
        total = float(xp.sum(wc))
        if not total > 0:
            raise ValueError(f"class {label:+.0f} has no sample with positive weight")
        if sparse:  # X never densified: ‖x − c‖² = ‖x‖² − 2 xᵀc + ‖c‖²
            center = xp.astype(sparse_product_t(X.T, wc[None, :])[:, 0], f64) / total
            d2 = sq_x - 2.0 * sparse_product_t(X, center[None, :])[:, 0] + \
                xp.sum(center * center)
            d = xp.sqrt(clip(xp.astype(d2, f64), min=0.0, xp=xp))
        else:
            center = sum(xp.sum(xp.astype(X[a:b, :], f64) * wc[a:b, None], axis=0)
                         for a, b in blocks) / total
            d = xp.concat([xp.linalg.vector_norm(xp.astype(X[a:b, :], f64) - center[None, :],
                                                 axis=1) for a, b in blocks]) \
                if len(blocks) > 1 else \
                xp.linalg.vector_norm(xp.astype(X, f64) - center[None, :], axis=1)
        R = float(xp.max(xp.where(wc > 0, d, xp.zeros_like(d))))
        s = xp.where(cls, 1.0 - d / (R + q), s)
    return clip(s, min=0.0, xp=xp)


__all__ = ["center_distance_weights", "least_squares"]
