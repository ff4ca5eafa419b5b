"""Regularization path of the l2-SVM with leave-one-out span estimate and radius-margin bound.

Bonidal, Tindel & Guermeur, *Model selection for the ℓ2-SVM by following the regularization
path* (``papers/l2svm-regularization-path-loo.txt``), sections 2 and 3.
:func:`l2svm_path` follows the solutions of Problem 1 (the squared hinge, ``C = 1/λ``) from
``lambda_max`` down to ``lambda_min``:

* each λ solves the LS-SVM system (7) on the partition E by (10)–(11), in the r × r form of
  Proposition 3 (one Cholesky factorization of ``S(λ) = c I + R_Eᵀ R_E``, ``c = (λ − ε)/2``,
  ``R_Eᵀ R_E`` updated with the rows that enter or leave E; :class:`_PathState`) or, given the
  Gram matrix, in the m_E × m_E space of E (:class:`_GramPathState`);
* the next λ comes from the first-order prediction (12)–(13) of the margins' crossings
  (section 2.5), the partition is corrected by the active-set iteration, with a finite Newton
  method as the fallback; the path starts at (14), every point in E;
* every λ records the leave-one-out span estimate (15)–(16) through (20) and the diagonal
  (23)–(24), and optionally the radius-margin bound of Theorem 1 (the enclosing ball:
  :class:`svmgpu.solvers._radius.EnclosingBall`).

Sample weights scale the loss terms (``H(λ) = Y K Y + λ/2 D⁻¹``) and carry over to every
equation in scaled variables. The derivation of all of it, the low-rank and weighted forms
included, is the section "Derivation" of the user guide's l2-SVM path page (``docs/path.md``).
"""

from __future__ import annotations

import logging
import math
import time
from numbers import Integral

from svmgpu._log import fields, get_logger, honours_verbose, progress
from svmgpu.backend import (
    check_positive,
    cho_solve,
    cholesky,
    clip,
    jittered_cholesky,
    set_rows,
    solve_triangular,
    tri_inv,
)
from svmgpu.lowrank import FeatureOperator
from svmgpu.solvers._radius import EnclosingBall
from svmgpu.solvers._result import SolverResult

_log = get_logger("path")

#: Model-selection criteria the path can minimize.
CRITERIA = ("loo_span", "radius_margin")

#: Rows of E processed at once by the leave-one-out diagonal (bounds its r × rows temporary).
_LOO_BLOCK = 1 << 14


def check_path_params(*, eps=1e-8, lambda_min=1e-6, lambda_max=1e7, step_fraction=0.02,
                      tol=1e-6, max_iter=1000, criterion="loo_span"):
    """Validate the path parameters (raises ``ValueError`` with the reason).

    Requires ``0 < eps < lambda_min < lambda_max`` (finite), ``0 < step_fraction <= 1``,
    ``tol > 0``, an integer ``max_iter >= 1`` and a known criterion (or None).
    """
    eps = check_positive("eps", eps)
    lambda_min = check_positive("lambda_min", lambda_min)
    lambda_max = check_positive("lambda_max", lambda_max)
    if lambda_min >= lambda_max:
        raise ValueError(
            f"lambda_min must be smaller than lambda_max, got lambda_min={lambda_min!r} >= "
            f"lambda_max={lambda_max!r}"
        )
    if eps >= lambda_min:
        raise ValueError(
            f"eps must be smaller than lambda_min (the systems use the shift (λ − eps)/2 > 0), "
            f"got eps={eps!r} >= lambda_min={lambda_min!r}"
        )
    step_fraction = check_positive("step_fraction", step_fraction)
    if step_fraction > 1:
        raise ValueError(f"step_fraction must be in (0, 1], got {step_fraction!r}")
    check_positive("tol", tol)
    if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if criterion is not None and criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}; valid criteria: {list(CRITERIA)}")


class _Solution:
    """The solution of (7) for one partition E at one λ (docs/path.md, "Derivation")."""

    __slots__ = ("lam", "c", "idx", "L", "w", "b", "margins", "q", "Ssy", "sigma", "n_active",
                 "size", "nu", "alpha_E")

    def __init__(self, **kw):
        self.nu = self.alpha_E = None  # set by the m_E-space solves of _GramPathState only
        self.size = None  # Σ_E sᵢ (m_E without weights)
        for k, v in kw.items():
            setattr(self, k, v)


class _PathState:
    """Partition E, the incrementally updated ``G = R_Eᵀ R_E``, and the solves of (7)–(13).

    With weights (all positive here), ``R_E`` stands for the scaled rows ``√sᵢ rᵢ``
    (docs/path.md, "Sample weights"): ``G = Σ_E sᵢ pᵢ pᵢᵀ``, ``q`` is ``q̃`` and α the
    unscaled multipliers."""

    def __init__(self, P, y, *, xp, eps, tol, max_corrections, sample_weight=None):
        self.xp = xp
        self.dev = getattr(P, "device", None)
        self.P = xp.astype(P, xp.float64)
        self.y = xp.astype(y, xp.float64)
        self.s = None if sample_weight is None else xp.astype(sample_weight, xp.float64)
        self.rs = None if self.s is None else xp.sqrt(self.s)
        self.R = self.P * self.y[:, None]
        self.m, self.r = self.P.shape
        self.eps, self.tol, self.max_corrections = eps, tol, max_corrections
        self.eye = xp.eye(self.r, dtype=xp.float64, device=self.dev)
        self.E = xp.ones((self.m,), dtype=xp.bool, device=self.dev)
        self.n_active = self.m
        self._regram()
        self.n_gram_updates = 0
        self.n_regram = 1
        self.n_fallback = 0

    # ------------------------------------------------------------- R_Eᵀ R_E
    def _rows_gram(self, rows):
        """``Σ_{i ∈ rows} sᵢ pᵢ pᵢᵀ`` (= R_rowsᵀ R_rows of the scaled rows, since yᵢ² = 1)."""
        xp = self.xp
        Pr = xp.take(self.P, rows, axis=0)
        Ps = Pr if self.s is None else Pr * xp.take(self.s, rows)[:, None]
        return xp.matmul(xp.matrix_transpose(Pr), Ps)

    def _scaled(self, v, idx):
        """``√s_idx ⊙ v`` (v without weights): the scaled variables (docs/path.md, "Sample weights")."""
        return v if self.rs is None else v * self.xp.take(self.rs, idx)

    def alpha_E(self, sol):
        """The multipliers on E, ``αᵢ = sᵢ ξᵢ / c`` ((1); ``ξᵢ/c`` without weights)."""
        xp = self.xp
        xi = 1.0 - xp.take(sol.margins, sol.idx)
        return (xi if self.s is None else xi * xp.take(self.s, sol.idx)) / sol.c

    def loo_from_leverage(self, sol, idx, one_minus_lev):
        """The leave-one-out margins (20) of the rows ``idx`` of E from ``1 − levᵢ``
        (``levᵢ`` the leverage of (23)–(24)): ``1 − sᵢ ξᵢ / (sᵢ − u levᵢ)``, u = min(sᵢ, 1)
        (one unit of weight left out; ``1 − ξᵢ / (1 − levᵢ)`` without weights)."""
        xp = self.xp
        xi = 1.0 - xp.take(sol.margins, idx)                          # c αᵢ / sᵢ
        den = one_minus_lev
        if self.s is not None:
            s = xp.take(self.s, idx)
            u = xp.minimum(s, 1.0)
            den = (s - u + u * one_minus_lev) / s                     # (sᵢ − u levᵢ)/sᵢ
        tiny = xp.full_like(den, 1e-300)
        return xp.where(den > 0, 1.0 - xi / xp.where(den > 0, den, tiny),
                        xp.full_like(den, -math.inf))

    def _regram(self):
        self.G = self._rows_gram(self.xp.nonzero(self.E)[0])
        self._changed = 0

    def set_partition(self, E_new):
        """Move to partition ``E_new`` (bool array of shape (m,)), updating ``R_Eᵀ R_E``."""
        xp = self.xp
        add = xp.nonzero(E_new & ~self.E)[0]
        rem = xp.nonzero(self.E & ~E_new)[0]
        n_add, n_rem = int(add.shape[0]), int(rem.shape[0])
        if n_add + n_rem == 0:
            return
        self.E = E_new
        self.n_active = int(xp.count_nonzero(E_new))
        self._changed += n_add + n_rem
        if self._changed > self.n_active:
            self._regram()
            self.n_regram += 1
            return
        self.n_gram_updates += 1
        if n_add:
            self.G = self.G + self._rows_gram(add)
        if n_rem:
            self.G = self.G - self._rows_gram(rem)

    # ------------------------------------------------------------- (7) by SMW
    def solve(self, lam):
        """Solve (7) for the current E at ``lam``: (10)–(11) through ``S(λ)``."""
        xp = self.xp
        c = 0.5 * (lam - self.eps)
        idx = xp.nonzero(self.E)[0]
        n_E = int(idx.shape[0])
        if n_E == 0:  # no active point: h = 0 (only reachable inside the finite Newton method)
            zero = xp.zeros((self.r,), dtype=xp.float64, device=self.dev)
            return _Solution(lam=lam, c=c, idx=idx, L=None, w=zero, b=0.0,
                             margins=xp.zeros_like(self.y), q=None, Ssy=zero, sigma=1.0,
                             n_active=0, size=0.0)
        S = self.G + c * self.eye
        try:
            L = cholesky(S, lower=True, xp=xp)
        except Exception:  # noqa: BLE001 - rounding in the up/down-dates: recompute, then jitter
            self._regram()
            self.n_regram += 1
            L, _ = jittered_cholesky(self.G + c * self.eye, lower=True, xp=xp)
        # R_Eᵀ y_E = P_Eᵀ 1 and R_Eᵀ 1 = P_Eᵀ y_E as one product over all rows (no gather);
        # weighted: s_y = P_Eᵀ s_E, s_1 = P_Eᵀ (s ⊙ y)_E.
        Ef = xp.astype(self.E, xp.float64)
        Es = Ef if self.s is None else Ef * self.s
        s = xp.matmul(xp.stack([Es, Es * self.y], axis=0), self.P)
        sy, s1 = s[0, :], s[1, :]
        V = cho_solve((L, True), xp.stack([sy, s1], axis=1), xp=xp)
        Ssy, Ss1 = V[:, 0], V[:, 1]
        sum_yE = float(xp.vecdot(Es, self.y))                        # ỹᵀ√s = Σ_E sᵢ yᵢ
        RV = xp.matmul(self.R, V)                                    # R S⁻¹ [s_y, s_1]
        q = self._scaled(xp.take(self.y - RV[:, 0], idx), idx)       # c ν̃ = ỹ − R̃_E S⁻¹ s_y
        # σ = c ỹᵀν̃ = Σ_E sᵢ − s_yᵀS⁻¹s_y, evaluated as a sum of squares (no cancellation).
        sigma = float(xp.vecdot(q, q)) + c * float(xp.vecdot(Ssy, Ssy))
        b = (sum_yE - float(xp.vecdot(sy, Ss1))) / sigma             # α₀ (11)
        w = Ss1 - b * Ssy                                            # R_Eᵀ α_E
        margins = RV[:, 1] - b * RV[:, 0] + b * self.y               # (3)
        return _Solution(lam=lam, c=c, idx=idx, L=L, w=w, b=b, margins=margins, q=q, Ssy=Ssy,
                         sigma=sigma, n_active=n_E, size=float(xp.sum(Es)))

    def violations(self, sol):
        """Boolean mask of the points whose side of the partition is inconsistent."""
        t = self.tol
        return (self.E & (sol.margins > 1.0 + t)) | (~self.E & (sol.margins < 1.0 - t))

    def kkt_violation(self, sol):
        """Largest violation of ``αᵢ >= 0`` (as ``c αᵢ``) on E and of ``margin >= 1`` on I."""
        xp = self.xp
        zero = xp.zeros_like(sol.margins)
        v = xp.where(self.E, clip(sol.margins - 1.0, min=0.0, xp=xp),
                     clip(1.0 - sol.margins, min=0.0, xp=xp))
        return float(xp.max(xp.where(xp.isfinite(v), v, zero + math.inf)))

    def primal(self, w, b, margins, c):
        """The primal objective ``½‖w‖² + (1/(2c)) Σ sᵢ (1 − marginᵢ)₊²`` (Problem 1 divided
        by λ, with the shift ``c = (λ − ε)/2``)."""
        xp = self.xp
        xi = clip(1.0 - margins, min=0.0, xp=xp)
        sxi = xi if self.s is None else self.s * xi
        return 0.5 * float(xp.vecdot(w, w)) + 0.5 * float(xp.vecdot(xi, sxi)) / c

    def solve_consistent(self, lam, prev):
        """Active-set correction at ``lam`` from the current E (section 2.5).

        Flips every inconsistent point and solves again, at most ``max_corrections`` times;
        if the partition is still inconsistent (the plain iteration can cycle when the
        systems are ill-conditioned, near ``λ_min``), the finite Newton method takes over from
        the best primal point seen (``prev``, the previous solution, or one of the iterates).
        Returns the solution and the number of solves beyond the first.
        """
        xp = self.xp
        c = 0.5 * (lam - self.eps)
        start, f_start = None, math.inf
        if prev is not None:
            start, f_start = (prev.w, prev.b), self.primal(prev.w, prev.b, prev.margins, c)
        for k in range(self.max_corrections + 1):
            sol = self.solve(lam)
            flip = self.violations(sol)
            if not bool(xp.any(flip)):
                return sol, k
            f = self.primal(sol.w, sol.b, sol.margins, c)
            if f < f_start:
                start, f_start = (sol.w, sol.b), f
            E_new = self.E ^ flip
            if k == self.max_corrections or not bool(xp.any(E_new)):
                break
            self.set_partition(E_new)
        self.n_fallback += 1
        sol, k2 = self._finite_newton(lam, start)
        return sol, self.max_corrections + 1 + k2

    def _finite_newton(self, lam, start, max_iter=200):
        """Finite Newton method with exact line search on the primal
        ``½‖w‖² + (1/(2c)) Σ sᵢ (1 − rᵢᵀw − yᵢb)₊²`` from ``start = (w, b)`` (terminates;
        Keerthi & DeCoste 2005). Each iteration solves (7) for the active set of the current
        point and searches the segment to that solution."""
        xp = self.xp
        c = 0.5 * (lam - self.eps)
        if start is None:
            w = xp.zeros((self.r,), dtype=xp.float64, device=self.dev)
            b = 0.0
        else:
            w, b = start
        sol = None
        for k in range(max_iter):
            marg = xp.matmul(self.R, w) + b * self.y
            self.set_partition(marg < 1.0)
            sol = self.solve(lam)
            if not bool(xp.any(self.violations(sol))):
                return sol, k
            dw, db = sol.w - w, sol.b - b
            dm = sol.margins - marg
            sdm = dm if self.s is None else self.s * dm
            xi = 1.0 - marg
            a0, a1 = float(xp.vecdot(w, dw)), float(xp.vecdot(dw, dw))

            def dphi(t, xi=xi, dm=dm, sdm=sdm, a0=a0, a1=a1):
                return a0 + t * a1 - float(xp.vecdot(sdm, clip(xi - t * dm, min=0.0, xp=xp))) / c

            t = 1.0
            if dphi(1.0) > 0:
                lo, hi = 0.0, 1.0
                for _ in range(60):
                    t = 0.5 * (lo + hi)
                    if dphi(t) > 0:
                        hi = t
                    else:
                        lo = t
                t = max(lo, 1e-12)
            w, b = w + t * dw, b + t * db
        return sol, max_iter

    # ------------------------------------------------------------- (13) and (12)
    def margin_derivative(self, sol):
        """``∂(yᵢ h_λ(xᵢ))/∂λ`` for every point, from (13) with E fixed (weighted: in the
        scaled variables, ``∂α₀/∂λ = −½ ν̃ᵀα̃ / ỹᵀν̃``)."""
        xp = self.xp
        alpha_t = self._scaled(1.0 - xp.take(sol.margins, sol.idx), sol.idx) / sol.c  # α̃
        dalpha0 = -0.5 * float(xp.vecdot(sol.q, alpha_t)) / sol.sigma
        Sw = cho_solve((sol.L, True), sol.w, xp=xp)
        dw = -0.5 * Sw - dalpha0 * sol.Ssy                            # R_Eᵀ ∂α_E/∂λ
        return xp.matmul(self.R, dw) + dalpha0 * self.y

    # ------------------------------------------------------------- (16), (23)–(24)
    def loo_margins(self, sol):
        """Leave-one-out margins ``yᵢ hⁱ(xᵢ)`` predicted by (20) for every point, shape (m,).

        On E, ``1 − αᵢ / (A_E(λ)⁻¹)ᵢᵢ = 1 − ξᵢ / (1 − levᵢ)`` with the diagonal (23)–(24),
        ``levᵢ = ‖L⁻¹ rᵢ‖² + qᵢ² / σ = 1 − c (A_E⁻¹)ᵢᵢ`` (weighted: the scaled rows, and one
        unit of weight left out, :meth:`loo_from_leverage`); on I the margin itself (removing a
        point with αᵢ = 0 leaves the solution unchanged). O(m_E r²).
        """
        xp = self.xp
        out = xp.asarray(sol.margins, copy=True)
        idx = sol.idx
        for s in range(0, sol.n_active, _LOO_BLOCK):
            e = min(s + _LOO_BLOCK, sol.n_active)
            ib = idx[s:e]
            RE = xp.take(self.R, ib, axis=0)
            if self.rs is not None:
                RE = RE * xp.take(self.rs, ib)[:, None]                # r̃ᵢ = √sᵢ rᵢ
            U = solve_triangular(sol.L, xp.matrix_transpose(RE), lower=True, xp=xp)
            qb = sol.q[s:e]
            lev = xp.sum(U * U, axis=0) + qb * qb / sol.sigma          # 1 − c (Ã_E⁻¹)ᵢᵢ
            out = set_rows(out, ib, self.loo_from_leverage(sol, ib, 1.0 - lev), xp=xp)
        return out

    def alpha(self, sol):
        """The multipliers α of shape (m,) (zero on I): ``sᵢ ξᵢ / c`` on E (1)."""
        xp = self.xp
        xi = 1.0 - sol.margins
        a = (xi if self.s is None else self.s * xi) / sol.c
        return xp.where(self.E, a, xp.zeros_like(sol.margins))


class _GramPathState(_PathState):
    """The same path with the systems (7) solved in the m_E × m_E space of E, from the Gram
    matrix ``K = P Pᵀ``: ``H_EE(λ) = Y_E K_EE Y_E + c I`` by Cholesky, O(m_E³) per solve and no
    ``R_Eᵀ R_E`` to maintain. Cheaper than the r × r form of Proposition 3 whenever
    ``m_E < r``, as always for an exact (full-rank) factor.

    With ``H = L_H L_Hᵀ``: ``ν = H⁻¹ y_E``, ``ρ = H⁻¹ 1`` (10), ``α₀ = y_Eᵀρ / y_Eᵀν`` and
    ``α_E = ρ − α₀ ν`` (11), ``w = R_Eᵀ α_E``; (13) needs one more solve ``H⁻¹ α_E``; the
    leave-one-out diagonal is ``(A_E⁻¹)ᵢᵢ = (H⁻¹)ᵢᵢ − νᵢ² / y_Eᵀν`` (the E block of the inverse
    of the bordered matrix of (7)), with ``diag(H⁻¹)`` the column norms of ``L_H⁻¹``. With
    weights the same in the scaled variables: ``H̃ = Δ Y_E K_EE Y_E Δ + c I``, right-hand sides
    ``ỹ`` and ``√s``, ``α_E = Δ α̃`` (``nu`` and ``alpha_E`` of the solution are ``ν̃``, ``α̃``).
    """

    def __init__(self, P, y, K, *, xp, eps, tol, max_corrections, sample_weight=None):
        super().__init__(P, y, xp=xp, eps=eps, tol=tol, max_corrections=max_corrections,
                         sample_weight=sample_weight)
        self.Q = xp.astype(K, xp.float64) * (self.y[:, None] * self.y[None, :])  # Y K Y

    def _regram(self):
        self._changed = 0  # nothing to maintain: each solve gathers K_EE

    def set_partition(self, E_new):
        xp = self.xp
        if bool(xp.any(E_new != self.E)):
            self.E = E_new
            self.n_active = int(xp.count_nonzero(E_new))

    def solve(self, lam):
        xp = self.xp
        idx = xp.nonzero(self.E)[0]
        n_E = int(idx.shape[0])
        if n_E == 0:
            return super().solve(lam)
        c = 0.5 * (lam - self.eps)
        yE = self._scaled(xp.take(self.y, idx), idx)                 # ỹ
        H = xp.take(xp.take(self.Q, idx, axis=0), idx, axis=1)
        if self.rs is not None:                                      # Δ Y K Y Δ
            rs = xp.take(self.rs, idx)
            H = H * (rs[:, None] * rs[None, :])
        H = H + c * xp.eye(n_E, dtype=xp.float64, device=self.dev)
        try:
            L = cholesky(H, lower=True, xp=xp)
        except Exception:  # noqa: BLE001 - c near 0 and K_EE singular in floating point
            L, _ = jittered_cholesky(H, lower=True, xp=xp)
        ones = self._scaled(xp.ones_like(yE), idx)                   # √s
        V = cho_solve((L, True), xp.stack([yE, ones], axis=1), xp=xp)
        nu, rho = V[:, 0], V[:, 1]
        s_nu = float(xp.vecdot(yE, nu))                              # y_Eᵀν > 0
        b = float(xp.vecdot(yE, rho)) / s_nu                         # α₀ (11)
        alpha_E = rho - b * nu                                       # (11)
        w = self._RE_t(idx, self._scaled(alpha_E, idx))              # R_Eᵀ α_E
        margins = xp.matmul(self.R, w) + b * self.y                  # (3)
        return _Solution(lam=lam, c=c, idx=idx, L=L, w=w, b=b, margins=margins, q=None,
                         Ssy=None, sigma=s_nu, n_active=n_E, size=float(xp.sum(ones * ones)),
                         nu=nu, alpha_E=alpha_E)

    def margin_derivative(self, sol):
        xp = self.xp
        dalpha0 = -0.5 * float(xp.vecdot(sol.nu, sol.alpha_E)) / sol.sigma
        dA = -0.5 * cho_solve((sol.L, True), sol.alpha_E, xp=xp) - dalpha0 * sol.nu  # (13)
        return xp.matmul(self.R, self._RE_t(sol.idx, self._scaled(dA, sol.idx))) + \
            dalpha0 * self.y

    def _RE_t(self, idx, v):
        """``R_Eᵀ v`` as ``Rᵀ v̄`` with ``v̄`` = v on E, 0 elsewhere (no (m_E, r) gather)."""
        xp = self.xp
        full = xp.zeros((self.m,), dtype=xp.float64, device=self.dev)
        full = set_rows(full, idx, v, xp=xp)
        return xp.matmul(full, self.R)

    def loo_margins(self, sol):
        xp = self.xp
        out = xp.asarray(sol.margins, copy=True)
        Linv = tri_inv(sol.L, lower=True, xp=xp)
        den = sol.c * (xp.sum(Linv * Linv, axis=0) - sol.nu * sol.nu / sol.sigma)  # c (Ã_E⁻¹)ᵢᵢ
        return set_rows(out, sol.idx, self.loo_from_leverage(sol, sol.idx, den), xp=xp)


def _kth_largest(v, k, weights, *, xp):
    """The k-th largest entry of ``v`` with entry i counted ``weights[i]`` times (None: once):
    the largest t such that the entries >= t weigh at least k. None when they weigh less."""
    if weights is None:
        return float(xp.sort(v, descending=True, stable=False)[k - 1]) if v.shape[0] >= k else None
    order = xp.argsort(v, descending=True)
    cw = xp.cumulative_sum(xp.take(weights, order))
    j = int(xp.count_nonzero(cw < k))
    return float(xp.take(v, order)[j]) if j < v.shape[0] else None


def _check_weights(sample_weight, y, *, xp):
    """Validated weights (float64) and the rows of positive weight (None: all)."""
    if sample_weight is None:
        return None, None
    if sample_weight.ndim != 1 or sample_weight.shape[0] != y.shape[0]:
        raise ValueError(f"sample_weight must have shape ({y.shape[0]},), got "
                         f"{tuple(sample_weight.shape)}")
    sw = xp.astype(sample_weight, xp.float64)
    if not bool(xp.all(xp.isfinite(sw))):
        raise ValueError("sample_weight contains NaN or infinity")
    if bool(xp.any(sw < 0)):
        raise ValueError("sample_weight must be non-negative")
    pos = sw > 0
    if not (bool(xp.any(pos & (y == 1))) and bool(xp.any(pos & (y == -1)))):
        raise ValueError("y has only one class among the rows of positive sample_weight; the "
                         "path needs both labels -1 and +1")
    keep = None if bool(xp.all(pos)) else xp.nonzero(pos)[0]
    return sw, keep


@honours_verbose
def l2svm_path(P, y, *, xp, sample_weight=None, eps=1e-8, lambda_min=1e-6, lambda_max=1e7,
               step_fraction=0.02, criterion="loo_span", radius_margin=False, tol=1e-6,
               max_iter=1000, max_corrections=3, store_alphas=False, gram=None, verbose=0):
    """Follow the l2-SVM solutions from ``lambda_max`` down to ``lambda_min`` (section 2).

    Parameters
    ----------
    P : FeatureOperator or array of shape (m, r)
        Kernel features: ``P Pᵀ`` is taken as ``K + ε/2 I`` (the factor of ``H(ε)`` up to the
        signs ``y``), e.g. ``LowRankFactor.features()`` or the Cholesky factor of
        ``K + ε/2 I``. The path gathers and updates rows of ``P`` at every λ (the rows of E,
        the crossings), so it holds ``P`` as one array: a FeatureOperator whose rows are
        recomputed is materialized here.
    y : array of shape (m,)
        Labels in {−1, +1}, both present.
    xp : namespace
        The array namespace of ``P`` and ``y``.
    sample_weight : array of shape (m,), optional
        Non-negative weights ``sᵢ`` of the loss terms: Problem 1 becomes
        ``min Σ sᵢ ξᵢ² + λ/2 ‖h̄‖²`` ((1), (7), (13), (14), (20) and the radius-margin bound
        with weights: docs/path.md, "Derivation"); ``P Pᵀ`` then stands for
        ``K + ε/2 D⁻¹``. Rows of weight 0 are left out of the path, as if removed. None: 1
        each (the paper).
    eps : float
        The paper's ε: the systems use ``H_EE(λ) ≈ R_E R_Eᵀ + (λ − ε)/2 I``.
    lambda_min, lambda_max : float
        The path runs from ``lambda_max`` (the starting point (14)) down to ``lambda_min``.
    step_fraction : float
        The next λ is chosen so that this fraction of m_E predicted crossings (12) lies in
        between (the paper's 2 %; with weights, of ``Σ_E sᵢ``, each crossing counted ``sᵢ``
        times), but never below half the current λ.
    criterion : {"loo_span", "radius_margin"} or None
        Which recorded criterion selects the returned solution (ties: the largest λ).
    radius_margin : bool
        Also compute the radius-margin bound at every λ (forced by
        ``criterion="radius_margin"``).
    tol : float
        Consistency tolerance on the margins: a point of E is inconsistent when its margin
        exceeds ``1 + tol`` (α < 0), a point of I when its margin is below ``1 − tol``.
    max_iter : int
        Maximum number of λ steps.
    max_corrections : int
        Active-set corrections per λ before the finite Newton method takes over.
    store_alphas : bool
        Keep α at every step (``info["alphas"]``, shape (n_steps, m)).
    gram : array of shape (m, m), optional
        The Gram matrix ``P Pᵀ`` (e.g. the kernel matrix whose Cholesky factor is ``P``). Given,
        every system (7) is solved in the m_E × m_E space of E (O(m_E³) per solve) instead of
        the r × r form of Proposition 3 (O(r³ + m r) plus the updates of ``R_Eᵀ R_E``): the
        faster choice when ``m_E < r``, as always for an exact factor (r = m).
    verbose : int
        1: a summary line (and a progress bar with tqdm); 2: also a line per breakpoint
        (λ, active-set size ``m_E``, offset, leave-one-out and radius-margin estimates),
        through the ``svmgpu.path`` logger (:mod:`svmgpu._log`).

    Returns
    -------
    SolverResult
        ``coef``: α of shape (m,) at the selected λ (float64, zero outside E).
        ``n_iter``: number of λ steps; ``converged``: whether ``lambda_min`` was reached.
        ``objective_history``: the dual objective (Problem 2) at every λ.
        ``info`` (lists of Python floats/ints, one entry per λ, largest λ first):
        ``lambdas``, ``intercepts`` (α₀ = b), ``n_active`` (m_E), ``loo_error`` (fraction,
        (16); with weights ``Σ sᵢ 1{error} / Σ sᵢ``), ``radius_margin`` (``4 R² Σα / m``, with
        weights ``/ Σ sᵢ``, or None), ``radius2``, ``sum_alpha``,
        ``n_corrections``, ``kkt_violation``; ``W`` (array (n_steps, r): ``w`` at every λ,
        ``h(x) = p(x)ᵀ w + b``); for the selected step ``best`` (index), ``best_lambda``,
        ``intercept``, ``w``, ``active`` (bool array (m,)), ``loo_margins`` (array (m,): the
        predicted leave-one-out margins (20)); ``alphas`` when stored;
        counters ``n_gram_updates``, ``n_regram``, ``n_fallback``.

    Raises
    ------
    ValueError
        For bad parameters, shapes, labels other than ±1, a single class (among the rows of
        positive weight), or negative, non-finite or misshapen weights.
    """
    check_path_params(eps=eps, lambda_min=lambda_min, lambda_max=lambda_max,
                      step_fraction=step_fraction, tol=tol, max_iter=max_iter,
                      criterion=criterion)
    if isinstance(P, FeatureOperator):
        P = P.to_array()
    if P.ndim != 2 or y.ndim != 1 or P.shape[0] != y.shape[0]:
        raise ValueError(f"P must have shape (m, r) and y shape (m,), got {tuple(P.shape)} and "
                         f"{tuple(y.shape)}")
    n_pos = int(xp.count_nonzero(y == 1))
    n_neg = int(xp.count_nonzero(y == -1))
    if n_pos + n_neg != y.shape[0]:
        raise ValueError("y must contain only the labels -1 and +1")
    if n_pos == 0 or n_neg == 0:
        raise ValueError("y has only one class; the path needs both labels -1 and +1")
    t0 = time.perf_counter()
    radius_margin = radius_margin or criterion == "radius_margin"
    if gram is not None and tuple(gram.shape) != (P.shape[0], P.shape[0]):
        raise ValueError(f"gram must have shape (m, m) = {(P.shape[0], P.shape[0])}, got "
                         f"{tuple(gram.shape)}")
    sw, keep = _check_weights(sample_weight, y, xp=xp)
    m_all, P_all, y_all = y.shape[0], P, y
    if keep is not None:  # weight 0: a free slack, never in E; the path runs without the row
        P, y, sw = xp.take(P, keep, axis=0), xp.take(y, keep), xp.take(sw, keep)
        if gram is not None:
            gram = xp.take(xp.take(gram, keep, axis=0), keep, axis=1)
    opts = dict(xp=xp, eps=float(eps), tol=float(tol), max_corrections=int(max_corrections),
                sample_weight=sw)
    st = _PathState(P, y, **opts) if gram is None else _GramPathState(P, y, gram, **opts)
    m = st.m
    s_total = float(m) if sw is None else float(xp.sum(sw))  # Σ sᵢ
    rad = EnclosingBall(st.P, xp=xp, weights=sw) if radius_margin else None
    rec = {k: [] for k in ("lambdas", "intercepts", "n_active", "loo_error", "radius_margin",
                           "radius2", "sum_alpha", "n_corrections", "kkt_violation")}
    W, alphas, objective = [], [], []
    best = {"score": math.inf}
    t_loo = t_rad = 0.0

    def record(sol, n_corr):
        nonlocal t_loo, t_rad
        alpha_E = st.alpha_E(sol)
        sum_alpha = float(xp.sum(alpha_E))
        # the dual objective: Σα − ½ αᵀH(λ)α, with αᵀ(c D⁻¹)α = c Σ αᵢ²/sᵢ
        a_over_s = alpha_E if sw is None else alpha_E / xp.take(sw, sol.idx)
        dual = sum_alpha - 0.5 * (float(xp.vecdot(sol.w, sol.w))
                                  + sol.c * float(xp.vecdot(alpha_E, a_over_s)))
        t1 = time.perf_counter()
        loo_m = st.loo_margins(sol)
        err = loo_m <= 0
        loo = (int(xp.count_nonzero(err)) / m if sw is None
               else float(xp.sum(xp.where(err, sw, xp.zeros_like(sw)))) / s_total)  # (16)
        t2 = time.perf_counter()
        t_loo += t2 - t1
        R2 = rm = None
        if rad is not None:
            R2 = rad(sol.c)
            rm = 4.0 * R2 * sum_alpha / s_total
            t_rad += time.perf_counter() - t2
        for k, v in (("lambdas", sol.lam), ("intercepts", sol.b), ("n_active", sol.n_active),
                     ("loo_error", loo), ("radius_margin", rm), ("radius2", R2),
                     ("sum_alpha", sum_alpha), ("n_corrections", n_corr),
                     ("kkt_violation", st.kkt_violation(sol))):
            rec[k].append(v)
        W.append(sol.w)
        objective.append(dual)
        if store_alphas:
            alphas.append(st.alpha(sol))
        score = None if criterion is None else (loo if criterion == "loo_span" else rm)
        if score is not None and score < best["score"]:
            best.update(score=score, index=len(objective) - 1, sol=sol, E=st.E,
                        alpha=st.alpha(sol), loo_margins=loo_m)
        bar.update(1, **{"lambda": sol.lam, "m_E": sol.n_active})
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(fields(step=len(objective) - 1, **{"lambda": sol.lam}, m_E=sol.n_active,
                              b=sol.b, loo=loo, rm=rm, corrections=n_corr))

    bar = progress("path steps", unit="step")
    lam = float(lambda_max)
    sol, n_corr = st.solve_consistent(lam, None)
    record(sol, n_corr)
    converged = False
    n_steps = 0
    while n_steps < max_iter:
        if lam <= lambda_min:
            converged = True
            break
        # (12)–(13): first-order prediction of the λ at which each margin crosses 1.
        dm = st.margin_derivative(sol)
        gap = 1.0 - sol.margins
        nz = dm != 0
        lam_i = xp.where(nz, lam + gap / xp.where(nz, dm, xp.ones_like(dm)),
                         xp.full_like(dm, -math.inf))
        between = (lam_i < lam) & (lam_i > 0)
        cand = lam_i[between]
        k = max(1, math.ceil(step_fraction * sol.size))
        kth = _kth_largest(cand, k, None if sw is None else sw[between], xp=xp)
        lam_new = 0.0 if kth is None else kth * (1.0 - 1e-9)
        lam_new = min(max(lam_new, 0.5 * lam, float(lambda_min)), lam * (1.0 - 1e-3))
        lam_new = max(lam_new, float(lambda_min))
        E_pred = (sol.margins + dm * (lam_new - lam)) < 1.0
        if bool(xp.any(E_pred)):
            st.set_partition(E_pred)
        prev = sol
        sol, n_corr = st.solve_consistent(lam_new, prev)
        lam = lam_new
        n_steps += 1
        record(sol, n_corr)
    else:
        converged = lam <= lambda_min

    info = dict(rec)
    info["W"] = xp.stack(W, axis=0)
    info["n_gram_updates"] = st.n_gram_updates
    info["n_regram"] = st.n_regram
    info["n_fallback"] = st.n_fallback
    if store_alphas:
        info["alphas"] = xp.stack(alphas, axis=0)
    if criterion is None:
        best.update(index=len(objective) - 1, sol=sol, E=st.E, alpha=st.alpha(sol),
                    loo_margins=st.loo_margins(sol))
    bsol = best["sol"]
    info.update(best=best["index"], best_lambda=bsol.lam, intercept=bsol.b, w=bsol.w,
                active=best["E"], loo_margins=best["loo_margins"])
    if keep is not None:  # back to all rows: weight-0 rows inactive, α = 0, LOO margin = margin
        y64 = xp.astype(y_all, xp.float64)
        dev = getattr(y64, "device", None)
        margins = xp.matmul(xp.astype(P_all, xp.float64), bsol.w) * y64 + bsol.b * y64  # (3)
        info.update(active=set_rows(xp.zeros((m_all,), dtype=xp.bool, device=dev), keep,
                                    best["E"], xp=xp),
                    loo_margins=set_rows(margins, keep, best["loo_margins"], xp=xp))
        best["alpha"] = set_rows(xp.zeros((m_all,), dtype=xp.float64, device=dev), keep,
                                 best["alpha"], xp=xp)
        if store_alphas:
            full = xp.zeros((m_all, len(alphas)), dtype=xp.float64, device=dev)
            info["alphas"] = xp.matrix_transpose(
                set_rows(full, keep, xp.matrix_transpose(info["alphas"]), xp=xp))
    bar.close()
    total = time.perf_counter() - t0
    timings = {"path": total - t_loo - t_rad, "loo": t_loo, "radius": t_rad}
    _log.info(fields(steps=n_steps, converged=converged, best_lambda=float(bsol.lam),
                     m_E=bsol.n_active, seconds=total))
    return SolverResult(coef=best["alpha"], n_iter=n_steps, converged=converged,
                        objective_history=objective, timings=timings, info=info)


__all__ = ["CRITERIA", "check_path_params", "l2svm_path"]
