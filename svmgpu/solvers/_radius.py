"""The smallest ball enclosing the points of a kernel ``P Pᵀ + c I``: the radius ``R²(λ)`` of the
radius-margin bound (Theorem 1 of ``papers/l2svm-regularization-path-loo.txt``).

:func:`svmgpu.solvers.path.l2svm_path` evaluates the bound ``4 R²(λ) ‖w̃‖² / m`` at every λ of
the path; the points lie in the feature space of ``κ_λ = κ + λ/2 δ`` (Problem 2), i.e. they are
``(pᵢ, √c eᵢ)`` with ``c = (λ − ε)/2``. :class:`EnclosingBall` solves the dual QP of the ball,
warm-started from one λ to the next. With sample weights ``s`` a point stands for ``sᵢ`` copies
(their multipliers merged), which turns ``c`` into ``c/sᵢ`` per point (the user guide's l2-SVM
path page, section "Derivation", docs/path.md).
"""

from __future__ import annotations

import math

from svmgpu.backend import cho_solve, cholesky, clip


def project_simplex(v, w=None, *, xp):
    """The point ``β = (v − θ w)₊`` of the probability simplex (``w > 0``, shape (m,); None:
    1): the Euclidean projection of ``v`` for ``w = 1``, in general the maximizer of
    ``Σ βᵢ aᵢ − Σ βᵢ²/(2wᵢ)`` with ``v = w ⊙ a`` (the weighted ball of :class:`EnclosingBall`)."""
    m = v.shape[0]
    if w is None:
        u = xp.sort(v, descending=True, stable=False)
        css = xp.cumulative_sum(u)
        k = xp.arange(1, m + 1, dtype=v.dtype, device=getattr(v, "device", None))
        n_pos = int(xp.count_nonzero(u - (css - 1.0) / k > 0))
        n_pos = max(n_pos, 1)
        theta = (css[n_pos - 1] - 1.0) / n_pos
        return clip(v - theta, min=0.0, xp=xp)
    order = xp.argsort(v / w, descending=True)  # the breakpoints θᵢ = vᵢ/wᵢ, largest first
    cv, cw = xp.cumulative_sum(xp.take(v, order)), xp.cumulative_sum(xp.take(w, order))
    n_pos = max(int(xp.count_nonzero(xp.take(v / w, order) - (cv - 1.0) / cw > 0)), 1)
    theta = (cv[n_pos - 1] - 1.0) / cw[n_pos - 1]
    return clip(v - theta * w, min=0.0, xp=xp)


class EnclosingBall:
    """Squared radius of the smallest ball enclosing ``{(pᵢ, √c eᵢ)}`` (kernel ``PPᵀ + cI``).

    The dual QP is ``max_{β ∈ simplex} Φ(β) = Σ βᵢ (‖pᵢ‖² + c) − ‖Pᵀβ‖² − c‖β‖²``; with
    weights ``s`` (``sᵢ`` copies of each point, their β merged) the last term is
    ``c Σ βᵢ²/sᵢ`` and below ``c/sᵢ`` replaces c per point. Two methods share the work, both
    warm-started from the previous call (the previous λ of the path):

    * while the support of β is large (large c: β is nearly uniform) the problem is smooth in
      the centre ``z ∈ R^r``: ``g(z) = max_β Σ βᵢ‖pᵢ − z‖² + c (1 − ‖β‖²)`` with the maximizer
      ``β(z) = Π_simplex(‖pᵢ − z‖² / (2c))``, ``∇g = 2 (z − Pᵀβ)`` and the generalized Hessian
      ``2 (I + M_S / c)`` (``M_S``: scatter matrix of the support); damped Newton on ``g``
      converges in a few steps, and ``g(z) − Φ(β(z)) = ‖z − Pᵀβ‖²`` is the duality gap;
    * once a Newton step has to be cut (small c: few support points, g nearly the
      non-smooth ``maxᵢ ‖pᵢ − z‖²``), the pairwise Frank–Wolfe method (Lacoste-Julien &
      Jaggi 2015) takes over from ``β(z)``: weight moves from the support point nearest to
      the centre to the farthest point with exact line search, O(m r) per step, until the
      Frank–Wolfe gap ``max dist² − Φ(β)`` is below ``tol · Φ(β)``.

    Parameters
    ----------
    P : array of shape (m, r)
        The kernel features (float64), ``P Pᵀ`` the kernel without the ``c I`` term.
    xp : namespace
        The array namespace of ``P``.
    weights : array of shape (m,), optional
        Positive sample weights ``s`` (point i counted ``sᵢ`` times); None: 1 each.
    tol : float, default 1e-4
        Relative Frank–Wolfe gap at which :meth:`__call__` stops (the Newton phase stops at
        a duality gap of ``1e-2 · tol`` relative).
    max_newton, max_fw : int
        Iteration limits of the two phases per call.

    Attributes
    ----------
    n_newton, n_fw : int
        Newton and Frank–Wolfe steps taken over all calls.
    """

    def __init__(self, P, *, xp, weights=None, tol=1e-4, max_newton=30, max_fw=100_000):
        self.P, self.xp, self.tol, self.s = P, xp, tol, weights
        self.max_newton, self.max_fw = max_newton, max_fw
        self.pn = xp.sum(P * P, axis=1)
        self.z = xp.mean(P, axis=0)
        self.n_newton = self.n_fw = 0

    def _sq(self, beta):
        """``Σ βᵢ²/sᵢ`` (``‖β‖²`` without weights)."""
        return float(self.xp.vecdot(beta, beta if self.s is None else beta / self.s))

    def _beta(self, z, c):
        xp = self.xp
        a = clip(self.pn - 2.0 * xp.matmul(self.P, z) + xp.vecdot(z, z), min=0.0, xp=xp)
        if self.s is None:
            beta = project_simplex(a / (2.0 * c), xp=xp)
        else:  # βᵢ = sᵢ (aᵢ − θ)₊ / (2c)
            w = self.s / (2.0 * c)
            beta = project_simplex(w * a, w, xp=xp)
        return beta, float(xp.vecdot(beta, a)) + c * (1.0 - self._sq(beta))

    def __call__(self, c):
        """``R²`` for the shift ``c > 0``: the optimal value of the dual QP (a lower bound
        within the relative gap ``tol``); the centre is kept for the next call."""
        xp, P = self.xp, self.P
        eye = xp.eye(P.shape[1], dtype=P.dtype, device=getattr(P, "device", None))
        z = self.z
        beta, g = self._beta(z, c)
        for _ in range(self.max_newton):
            res = z - xp.matmul(beta, P)
            gap = float(xp.vecdot(res, res))
            if gap <= 1e-2 * self.tol * g:
                self.z = z
                return g - gap
            self.n_newton += 1
            on = xp.nonzero(beta > 0)[0]
            D = xp.take(P, on, axis=0)
            if self.s is None:
                D = D - xp.mean(D, axis=0)
            else:  # the support's scatter with weights sᵢ about its weighted mean
                s_on = xp.take(self.s, on)
                D = (D - xp.matmul(s_on, D) / xp.sum(s_on)) * xp.sqrt(s_on)[:, None]
            Hn = eye + xp.matmul(xp.matrix_transpose(D), D) / c
            step = -cho_solve((cholesky(Hn, xp=xp), True), res, xp=xp)
            slope = 2.0 * float(xp.vecdot(res, step))
            t = 1.0
            while True:
                beta_t, g_t = self._beta(z + t * step, c)
                if g_t <= g + 1e-4 * t * slope or t < 1e-3:
                    break
                t *= 0.5
            if g_t >= g or t < 1e-3:
                break
            z, beta, g = z + t * step, beta_t, g_t
        return self._frank_wolfe(beta, c)

    def _frank_wolfe(self, beta, c):
        xp, P = self.xp, self.P
        z = xp.matmul(beta, P)
        Pz = xp.matmul(P, z)
        inf = xp.full_like(beta, math.inf)
        phi = 0.0
        inv_s = 1.0 if self.s is None else 1.0 / self.s
        for _ in range(self.max_fw):
            zz = float(xp.vecdot(z, z))
            bb = self._sq(beta)
            dist = self.pn - 2.0 * Pz + zz + c * (1.0 - 2.0 * beta * inv_s + bb)  # ‖φᵢ − centre‖²
            phi = float(xp.vecdot(beta, self.pn)) + c - zz - c * bb
            j = int(xp.argmax(dist))
            dj = float(dist[j])
            if dj - phi <= self.tol * phi:
                break
            self.n_fw += 1
            k = int(xp.argmin(xp.where(beta > 0, dist, inf)))
            bk = float(beta[k])
            diff = P[j, :] - P[k, :]
            curv = float(xp.vecdot(diff, diff)) + (2.0 * c if self.s is None else
                                                   c * float(inv_s[j] + inv_s[k]))
            t = min(max((dj - float(dist[k])) / (2.0 * curv), 0.0), bk)
            if t == 0.0:
                break
            beta[j] += t
            beta[k] = 0.0 if t == bk else beta[k] - t
            z = z + t * diff
            Pz = Pz + t * xp.matmul(P, diff)
        self.z = z
        return phi


__all__ = ["EnclosingBall", "project_simplex"]
