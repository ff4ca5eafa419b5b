"""LS-DC losses of UniSVM (Zhou & Zhou, "Unified SVM algorithm based on LS-DC loss").

Every loss is written as a function ``psi(u)`` of one residual ``u`` per sample:

* classification: ``u = 1 - y f(x)`` with ``y in {-1, +1}``, so ``l(y, t) = psi(1 - y t)``
  and ``d l / d t = -y psi'(1 - y t)``;
* regression: ``u = y - f(x)``, so ``l(y, t) = psi(y - t)`` and ``d l / d t = -psi'(y - t)``.

These are the conventions of Section 3 and Table 5 (Appendix B) of the paper. The library's
objective is ``1/2 ||f||^2 + C sum_i psi(r_i)`` with ``psi`` exactly as in Table 5 (for example
the squared hinge is ``u_+^2``, without a factor 1/2).

A loss is *LS-DC* (Definition 1, eq. (15)) when there is ``A > 0`` with
``psi(u) = A u^2 - (A u^2 - psi(u))`` and ``A u^2 - psi(u)`` convex. ``Loss.A_min`` is the
smallest such ``A`` given by Table 5 / Propositions 1-2 for the loss's parameters; UniSVM's
DCA (eqs. (24)-(26)) uses it by default.

All array code goes through the Python array API (the namespace of the input, resolved with
:func:`array_api_compat.array_namespace`), so NumPy, CuPy and ``array_api_strict`` arrays work
alike. Parameters are Python floats, so float32 input stays float32.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import array_api_compat

from svmgpu.backend import clip

__all__ = [
    "LOSSES",
    "Huber",
    "HuberEpsilonInsensitive",
    "HuberHinge",
    "LeastSquares",
    "Loss",
    "NonconvexExp",
    "SmoothAbsolute",
    "SmoothEpsilonInsensitive",
    "SmoothHinge",
    "SmoothRamp",
    "SmoothRampLog",
    "SquaredHinge",
    "TruncatedHuber",
    "TruncatedLeastSquares",
    "TruncatedSquaredHinge",
    "ZHOU2013_LOSSES",
    "get_loss",
    "nonconvex_exp_M",
]

TASKS = ("classification", "regression")

# exp(-x) is exactly 0 in float32 and float64 for x >= 800: arguments of exp are clipped there so
# that ``p * |u|`` can never overflow, even for |u| near the largest float.
_EXP_CUT = 800.0


# ---------------------------------------------------------------------------------------------
# array helpers (pure array API; ``x`` is a real floating array, ``p`` a positive Python float)
# ---------------------------------------------------------------------------------------------
def _prepare(u, xp=None):
    """Namespace of ``u`` (looked up only when ``xp`` is None) and ``u`` as a real floating
    array (integers/bools are converted)."""
    if xp is None:
        xp = array_api_compat.array_namespace(u)
    if u.dtype == xp.float64 or u.dtype == xp.float32 or xp.isdtype(u.dtype, "real floating"):
        return xp, u  # (the two common dtypes first: isdtype takes microseconds a call)
    if xp.isdtype(u.dtype, ("integral", "bool")):
        info = xp.__array_namespace_info__()
        dtype = info.default_dtypes(device=array_api_compat.device(u))["real floating"]
        return xp, xp.astype(u, dtype)
    raise TypeError(f"losses need a real floating (or integer) array, got dtype {u.dtype}")


def _exp_neg(x, p, xp):
    """``exp(-p x)`` for ``x >= 0`` (or +inf) without overflow of ``p x``."""
    cut = min(_EXP_CUT / p, float(xp.finfo(x.dtype).max))
    return xp.exp(-p * clip(x, max=cut, xp=xp))


def _softplus(x, p, xp):
    """``log(1 + exp(p x)) / p`` computed as ``x_+ + log1p(exp(-p |x|)) / p``."""
    return clip(x, min=0.0, xp=xp) + xp.log1p(_exp_neg(xp.abs(x), p, xp)) * (1.0 / p)


def _sigmoids(x, p, xp):
    """``(sigma(p x), sigma(-p x))`` with ``sigma(z) = 1 / (1 + exp(-z))``, both accurate."""
    e = _exp_neg(xp.abs(x), p, xp)  # in (0, 1]
    r = 1.0 / (1.0 + e)  # sigma(p |x|), in [1/2, 1]
    small = e * r  # sigma(-p |x|), in (0, 1/2]
    pos = x >= 0.0
    return xp.where(pos, r, small), xp.where(pos, small, r)


def _zeros(u, xp):
    return xp.zeros_like(u)


def _full(u, value, xp):
    return xp.full_like(u, value)


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Param:
    """A loss parameter: its default and its valid range ``(low, +inf)`` or ``[low, +inf)``."""

    default: float
    low: float = 0.0
    closed: bool = False  # True: value >= low is valid; False: value > low
    doc: str = ""

    def range_text(self):
        return f"{'>=' if self.closed else '>'} {self.low:g}"

    def check(self, loss_name, name, value):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if ok:
            value = float(value)
            ok = math.isfinite(value) and (value >= self.low if self.closed else value > self.low)
        if not ok:
            raise ValueError(
                f"parameter {name!r} of loss {loss_name!r} must be a finite real number "
                f"{self.range_text()}, got {value!r}"
            )
        return value


# ---------------------------------------------------------------------------------------------
# base class
# ---------------------------------------------------------------------------------------------
class Loss:
    """Base class of the LS-DC losses ``psi(u)`` of UniSVM (Table 5 of the paper).

    Parameters
    ----------
    task : {"classification", "regression"}, optional
        The task the loss is used for; it fixes the residual convention: ``u = 1 - y f(x)``
        (classification) or ``u = y - f(x)`` (regression). Defaults to the first task the loss
        supports (classification for the losses used by both tasks).
    **params : float
        The loss's parameters (see each subclass); missing ones take the paper's defaults.

    Attributes
    ----------
    name : str
        Name used by :func:`get_loss`.
    task : str
        ``"classification"`` or ``"regression"``.
    params : dict
        All parameters (defaults filled in), as Python floats.
    convex : bool
        Whether ``psi`` is convex.
    A_min : float
        Smallest LS-DC constant of Table 5: ``A u^2 - psi(u)`` is convex for every
        ``A >= A_min`` (Definition 1, eq. (15)).
    zhou2013_scale : float or None
        κ with ``psi = κ L`` for the loss ``L`` of Zhou 2013's reduced SVMs (their λ is
        ``1 / (κ C)``); None for the losses that paper does not use.
    """

    name: str = ""
    tasks: tuple = ("classification",)
    convex: bool = False
    _params: dict = {}
    #: κ of the reduced SVMs of Zhou 2013 (Table 1): this ψ is κ times the paper's loss L, so
    #: the paper's λ is ``1 / (κ C)`` (2 for ψ = u² and u₊², whose L carries a ½); None for a
    #: loss that paper does not use (:data:`ZHOU2013_LOSSES`).
    zhou2013_scale: float | None = None

    def __init__(self, task=None, **params):
        if task is None:
            task = self.tasks[0]
        if task not in self.tasks:
            raise ValueError(
                f"loss {self.name!r} is for task {' or '.join(map(repr, self.tasks))}, "
                f"got task={task!r}"
            )
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            valid = ", ".join(self._params) or "none"
            raise ValueError(
                f"unknown parameter(s) {', '.join(map(repr, unknown))} for loss {self.name!r}; "
                f"valid parameters: {valid}"
            )
        self.task = task
        self._values = {
            key: spec.check(self.name, key, params.get(key, spec.default))
            for key, spec in self._params.items()
        }
        self.A_min = float(self._A_min(**self._values))

    # -- public API ----------------------------------------------------------------------------
    @property
    def params(self):
        """dict : the loss's parameters (a copy), defaults filled in."""
        return dict(self._values)

    def value(self, u, *, xp=None):
        """Loss value ``psi(u)``, elementwise.

        Parameters
        ----------
        u : array of any shape
            Residuals: ``1 - y f(x)`` (classification) or ``y - f(x)`` (regression). Any
            array-API array (NumPy, CuPy, ...); integers are converted to the default float.

        xp : namespace, optional
            The namespace of ``u``, when the caller has it (solvers resolve it once; without
            it every call looks it up).

        Returns
        -------
        array of the same shape, namespace, device and floating dtype as ``u``
        """
        xp, u = _prepare(u, xp)
        return self._value(u, xp, **self._values)

    def grad(self, u, *, xp=None):
        """A (sub)gradient ``psi'(u)``, elementwise (the ``dloss`` of Table 5 / Algorithm 1).

        Parameters
        ----------
        u : array of any shape
            Residuals, as for :meth:`value`.

        xp : namespace, optional
            As for :meth:`value`.

        Returns
        -------
        array of the same shape, namespace, device and floating dtype as ``u``
        """
        xp, u = _prepare(u, xp)
        return self._grad(u, xp, **self._values)

    #: Whether ψ' jumps (the truncated losses, where ψ meets its ceiling with a kink): their
    #: stationarity test cannot hold while rows sit near the kink, so solvers also stop on the
    #: relative decrease of the objective (:class:`~svmgpu.solvers.newton.NewtonOptions`).
    gradient_jumps = False

    #: Whether ψ is piecewise quadratic (or linear): its curvature is piecewise constant, so
    #: the Newton Hessian changes only with the rows that change piece (incremental updates
    #: (23)/(25) of Zhou 2013) and a full step that keeps every row on its piece is exact
    #: (finite termination). The other losses' curvature is rounded to levels by the solver.
    piecewise_quadratic = False

    def curvature(self, u, *, xp=None):
        """The curvature Newton uses: ``max(psi''(u), 0)``, elementwise.

        The generalized second derivative of the piecewise-quadratic losses (the jumps of
        ``psi'`` of the truncated losses, where the loss becomes flat, get curvature 0: the
        element of the generalized Hessian that semi-smooth Newton uses, Zhou 2013, (20)), the
        smooth second derivative of the others; clipped at 0 where ψ is concave (the
        smoothed ramps and the exponential loss beyond their inflection), so that the Newton
        Hessian ``I + C Pᵀ diag(s κ) P`` stays positive definite (a line search on the true
        objective then makes every step a descent). ``0 <= curvature <= 2 A_min``.
        """
        xp, u = _prepare(u, xp)
        return self._curvature(u, xp, **self._values)

    def knots(self):
        """The residuals at which a piecewise-quadratic ψ changes piece, ascending (a tuple of
        floats), or None where the loss does not give them. A solver places an intercept
        that the loss leaves free by them (:func:`~svmgpu.solvers.exact.exact_newton`: LIBSVM's
        choice, the middle of the interval of optimal intercepts)."""
        return self._knots(**self._values)

    def A(self, A=None):
        """Validate the LS-DC constant ``A`` of eq. (15).

        Parameters
        ----------
        A : float or None
            ``None`` gives :attr:`A_min`.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``A`` is not a finite real number or is smaller than :attr:`A_min`, for which
            ``A u^2 - psi(u)`` would not be convex.
        """
        if A is None:
            return self.A_min
        ok = isinstance(A, numbers.Real) and not isinstance(A, bool) and math.isfinite(float(A))
        if not ok or float(A) < self.A_min * (1.0 - 1e-12):
            raise ValueError(
                f"A must be a finite real number >= A_min = {self.A_min:.12g} for loss "
                f"{self!r} (A u^2 - psi(u) must be convex), got {A!r}"
            )
        return float(A)

    def __repr__(self):
        args = [f"task={self.task!r}"] + [f"{k}={v!r}" for k, v in self._values.items()]
        return f"get_loss({self.name!r}, {', '.join(args)})"

    # -- to implement --------------------------------------------------------------------------
    @staticmethod
    def _A_min(**params):
        raise NotImplementedError

    def _value(self, u, xp, **params):
        raise NotImplementedError

    def _grad(self, u, xp, **params):
        raise NotImplementedError

    def _curvature(self, u, xp, **params):
        raise NotImplementedError

    def _knots(self, **params):
        return None


# ---------------------------------------------------------------------------------------------
# classification (and shared) losses
# ---------------------------------------------------------------------------------------------
class LeastSquares(Loss):
    """Least squares loss ``psi(u) = u^2`` (Table 5, psi^(1); Prop. 1(a), Prop. 2(1)).

    Convex; ``psi'(u) = 2u``; LS-DC with ``A >= 1`` (``A u^2 - psi`` vanishes at ``A = 1``).
    For classification ``u = 1 - y f(x)``, for regression ``u = y - f(x)`` (the same loss for
    ``y = +-1``).
    """

    name = "least_squares"
    tasks = ("classification", "regression")
    convex = True
    _params = {}
    zhou2013_scale = 2.0

    @staticmethod
    def _A_min():
        return 1.0

    def _value(self, u, xp):
        return u * u

    def _grad(self, u, xp):
        return 2.0 * u

    piecewise_quadratic = True

    def _curvature(self, u, xp):
        return _full(u, 2.0, xp)


class TruncatedLeastSquares(Loss):
    """Truncated least squares ``psi(u) = min(u^2, a)`` (Table 5, psi^(2); Prop. 1(b), 2(1)).

    Non-convex; ``psi'(u) = 2u`` for ``|u| < sqrt(a)``, ``0`` otherwise; LS-DC with ``A >= 1``.

    Parameters
    ----------
    a : float, default 2.0
        Truncation level, ``a > 0`` (Section 5.2 uses ``a = 2``).
    """

    name = "truncated_least_squares"
    tasks = ("classification", "regression")
    convex = False
    gradient_jumps = True
    _params = {"a": _Param(2.0, doc="truncation level")}

    @staticmethod
    def _A_min(a):
        return 1.0

    def _value(self, u, xp, a):
        r = math.sqrt(a)
        q = clip(u, min=-r, max=r, xp=xp)
        return xp.where(xp.abs(u) < r, q * q, _full(u, a, xp))

    def _grad(self, u, xp, a):
        r = math.sqrt(a)
        q = clip(u, min=-r, max=r, xp=xp)
        return xp.where(xp.abs(u) < r, 2.0 * q, _zeros(u, xp))

    piecewise_quadratic = True

    def _curvature(self, u, xp, a):
        return xp.where(xp.abs(u) < math.sqrt(a), _full(u, 2.0, xp), _zeros(u, xp))


class SquaredHinge(Loss):
    """Squared hinge ``psi(u) = u_+^2`` with ``u = 1 - y f(x)`` (Table 5, psi^(3); Prop. 1(c)).

    Convex; ``psi'(u) = 2 u_+``; LS-DC with ``A >= 1``.
    """

    name = "squared_hinge"
    convex = True
    _params = {}
    zhou2013_scale = 2.0

    @staticmethod
    def _A_min():
        return 1.0

    def _value(self, u, xp):
        q = clip(u, min=0.0, xp=xp)
        return q * q

    def _grad(self, u, xp):
        return 2.0 * clip(u, min=0.0, xp=xp)

    piecewise_quadratic = True

    def _curvature(self, u, xp):
        return xp.where(u > 0, _full(u, 2.0, xp), _zeros(u, xp))


class TruncatedSquaredHinge(Loss):
    """Truncated squared hinge ``psi(u) = min(u_+^2, a)``, ``u = 1 - y f(x)``.

    Table 5, psi^(4); Prop. 1(d). Non-convex; ``psi'(u) = 2u`` for ``0 < u < sqrt(a)``, ``0``
    otherwise; LS-DC with ``A >= 1``.

    Parameters
    ----------
    a : float, default 2.0
        Truncation level, ``a > 0`` (Section 5 uses ``a = 2``).
    """

    name = "truncated_squared_hinge"
    convex = False
    gradient_jumps = True
    _params = {"a": _Param(2.0, doc="truncation level")}

    @staticmethod
    def _A_min(a):
        return 1.0

    def _value(self, u, xp, a):
        r = math.sqrt(a)
        q = clip(u, min=0.0, max=r, xp=xp)
        return xp.where(u < r, q * q, _full(u, a, xp))

    def _grad(self, u, xp, a):
        r = math.sqrt(a)
        q = clip(u, min=0.0, max=r, xp=xp)
        return xp.where(u < r, 2.0 * q, _zeros(u, xp))

    piecewise_quadratic = True

    def _curvature(self, u, xp, a):
        return xp.where((u > 0) & (u < math.sqrt(a)), _full(u, 2.0, xp), _zeros(u, xp))


class SmoothHinge(Loss):
    """Smoothed hinge ``psi(u) = u_+ + log(1 + exp(-p|u|)) / p``, ``u = 1 - y f(x)``.

    Table 5, psi^(6); Prop. 1(e): equals ``log(1 + exp(p u)) / p``, which tends to the hinge
    ``u_+`` as ``p -> inf``. Convex; ``psi'(u) = 1 / (1 + exp(-p u))``;
    ``psi'' <= p / 4`` so LS-DC with ``A >= p / 8``.

    Parameters
    ----------
    p : float, default 10.0
        Smoothing parameter, ``p > 0`` (Section 5.2 uses ``p = 10``).
    """

    name = "smooth_hinge"
    convex = True
    _params = {"p": _Param(10.0, doc="smoothing parameter")}
    zhou2013_scale = 1.0

    @staticmethod
    def _A_min(p):
        return p / 8.0

    def _value(self, u, xp, p):
        return _softplus(u, p, xp)

    def _grad(self, u, xp, p):
        return _sigmoids(u, p, xp)[0]

    def _curvature(self, u, xp, p):
        # psi'' = p sigma(p u) sigma(-p u), smooth (Zhou 2013's logistic L'', section 4.2.4)
        pos, neg = _sigmoids(u, p, xp)
        return p * pos * neg


class HuberHinge(Loss):
    """Huber hinge, the hinge with a quadratic corner (Zhou 2013, Table 1 and (24)/(25)),
    ``u = 1 - y f(x)``.

    ``psi(u) = u`` for ``u >= delta``, ``(u + delta)^2 / (4 delta)`` for ``|u| < delta`` and ``0``
    for ``u <= -delta``. Convex, piecewise quadratic; ``psi'' = 1/(2 delta)`` in the corner, so
    LS-DC with ``A >= 1/(4 delta)``. Not the regression :class:`Huber` (``u = y - f(x)``,
    symmetric): the classification one is named apart, ``"huber_hinge"``.

    Parameters
    ----------
    delta : float, default 0.5
        Half-width of the quadratic corner, ``delta > 0`` (Zhou 2013 follows ``delta`` from 1 down
        to 1e-4 by continuation).
    """

    name = "huber_hinge"
    convex = True
    _params = {"delta": _Param(0.5, doc="half-width of the corner")}
    zhou2013_scale = 1.0

    @staticmethod
    def _A_min(delta):
        return 0.25 / delta

    def _value(self, u, xp, delta):
        # (q + δ)²/(4δ) + (u − q)₊ with q = clip(u, −δ, δ): no square of a huge u
        q = clip(u, min=-delta, max=delta, xp=xp)
        v = q + delta
        return v * v * (0.25 / delta) + clip(u - q, min=0.0, xp=xp)

    def _grad(self, u, xp, delta):
        return (clip(u, min=-delta, max=delta, xp=xp) + delta) * (0.5 / delta)

    piecewise_quadratic = True

    def _curvature(self, u, xp, delta):
        return xp.astype(xp.abs(u) < delta, u.dtype) * (0.5 / delta)

    def _knots(self, delta):
        return (-delta, delta)


class SmoothRamp(Loss):
    """Smoothed ramp loss 1, eq. (18) (Table 5, psi^(8)), ``u = 1 - y f(x)``.

    ``psi(u) = (2/a) u_+^2`` for ``u <= a/2`` and ``a - (2/a) (a - u)_+^2`` for ``u > a/2``:
    0 for ``u <= 0``, ``a`` for ``u >= a`` (the support set of the ramp ``min(u_+, a)``).
    Non-convex; ``psi'(u) = (4/a) u_+`` for ``u <= a/2``, ``(4/a) (a - u)_+`` for ``u > a/2``;
    ``psi'' <= 4/a`` so LS-DC with ``A >= 2/a`` (Prop. 1(f)).

    Parameters
    ----------
    a : float, default 2.0
        Saturation level, ``a > 0`` (Section 5.2 uses ``a = 2``).
    """

    name = "smooth_ramp"
    convex = False
    _params = {"a": _Param(2.0, doc="saturation level")}

    @staticmethod
    def _A_min(a):
        return 2.0 / a

    def _value(self, u, xp, a):
        h = 0.5 * a
        low = clip(u, min=0.0, max=h, xp=xp)  # u_+ on the left branch
        high = clip(a - u, min=0.0, max=h, xp=xp)  # (a - u)_+ on the right branch
        return xp.where(u <= h, (2.0 / a) * (low * low), a - (2.0 / a) * (high * high))

    def _grad(self, u, xp, a):
        h = 0.5 * a
        low = clip(u, min=0.0, max=h, xp=xp)
        high = clip(a - u, min=0.0, max=h, xp=xp)
        return (4.0 / a) * xp.where(u <= h, low, high)

    piecewise_quadratic = True

    def _curvature(self, u, xp, a):
        # ψ'' = 4/a on (0, a/2], −4/a on (a/2, a) (clipped to 0), 0 elsewhere
        return xp.where((u > 0) & (u <= 0.5 * a), _full(u, 4.0 / a, xp), _zeros(u, xp))


class SmoothRampLog(Loss):
    """Smoothed ramp loss 2, eq. (19) (Table 5, psi^(9)), ``u = 1 - y f(x)``.

    ``psi(u) = (1/p) log((1 + exp(p u)) / (1 + exp(p (u - a))))``, a smooth (C-infinity)
    approximation of the ramp ``min(u_+, a)``; it tends to ``a`` as ``u -> inf``. Non-convex;
    ``psi'(u) = sigma(p u) - sigma(p (u - a))`` with ``sigma(z) = 1 / (1 + exp(-z))`` (the
    Table 5 expression); ``psi'' <= p/4`` so LS-DC with ``A >= p/8`` (Prop. 1(f)).

    Evaluated through the symmetry ``psi(u) = a - psi(a - u)`` so that no large terms cancel.

    Parameters
    ----------
    a : float, default 2.0
        Saturation level, ``a > 0`` (Section 5.1.2: "a = 2 for nonconvex loss").
    p : float, default 10.0
        Smoothing parameter, ``p > 0`` (Section 5.2 uses ``p = 10``).
    """

    name = "smooth_ramp_log"
    convex = False
    _params = {"a": _Param(2.0, doc="saturation level"), "p": _Param(10.0, doc="smoothing")}

    @staticmethod
    def _A_min(a, p):
        return p / 8.0

    def _value(self, u, xp, a, p):
        left = u <= 0.5 * a
        w = xp.where(left, u, a - u)  # w <= a/2, so (w - a)_+ = 0
        g = clip(w, min=0.0, xp=xp) + (
            xp.log1p(_exp_neg(xp.abs(w), p, xp)) - xp.log1p(_exp_neg(xp.abs(w - a), p, xp))
        ) * (1.0 / p)
        return xp.where(left, g, a - g)

    def _grad(self, u, xp, a, p):
        s1, s1m = _sigmoids(u, p, xp)
        s2, s2m = _sigmoids(u - a, p, xp)
        # sigma(x) - sigma(y) = sigma(x) sigma(-y) - sigma(-x) sigma(y): no cancellation of ~1
        return s1 * s2m - s1m * s2

    def _curvature(self, u, xp, a, p):
        # ψ'' = p (σ₁σ₁' − σ₂σ₂'), σ₁ = σ(pu), σ₂ = σ(p(u − a)), clipped to 0 where negative
        s1, s1m = _sigmoids(u, p, xp)
        s2, s2m = _sigmoids(u - a, p, xp)
        return clip(p * (s1 * s1m - s2 * s2m), min=0.0, xp=xp)


def nonconvex_exp_M(a, b, c):
    """Upper bound ``M(a, b, c) = sup_u psi''(u)`` of loss (20), eq. (21).

    ``M = (a c / b^(2/c)) ((c-1) h^(1-2/c) - c h^(2-2/c)) exp(-h)`` with
    ``h = (3(c-1) - sqrt(5c^2 - 6c + 1)) / (2c)``; ``h`` is computed in the equivalent form
    ``2 (c-1)(c-2) / (c (3(c-1) + sqrt((c-1)(5c-1))))`` that does not cancel near ``c = 2``.
    For ``c = 2`` (``h = 0``, read ``0^0 = 1``) this is ``2a/b``, the value of the proof of
    Prop. 1(h). Examples from the paper: ``M(2,2,2) = 2``, ``M(2,2,4) ~ 4.5707``,
    ``M(2,3,4) ~ 3.7319``.

    Parameters
    ----------
    a, b : float
        Positive.
    c : float
        ``c >= 2``.

    Returns
    -------
    float
    """
    if c == 2.0:
        return 2.0 * a / b
    h = 2.0 * (c - 1.0) * (c - 2.0) / (c * (3.0 * (c - 1.0) + math.sqrt((c - 1.0) * (5.0 * c - 1.0))))
    return (a * c / b ** (2.0 / c)) * h ** (1.0 - 2.0 / c) * ((c - 1.0) - c * h) * math.exp(-h)


class NonconvexExp(Loss):
    """Smoothed nonconvex loss (20) (Table 5, psi^(10)), ``u = 1 - y f(x)``.

    ``psi(u) = a (1 - exp(-u_+^c / b))``, saturating at ``a``; with ``b = a, c = 2`` it is the
    loss (12) of Feng et al. (2016). Non-convex;
    ``psi'(u) = (a c / b) u_+^(c-1) exp(-u_+^c / b)``; LS-DC with ``A >= M(a, b, c) / 2``,
    ``M`` of eq. (21) (:func:`nonconvex_exp_M`; ``A >= a/b`` when ``c = 2``).

    Parameters
    ----------
    a : float, default 2.0
        Saturation value, ``a > 0``.
    b : float, default 2.0
        Localization (rate) parameter, ``b > 0``.
    c : float, default 2.0
        Exponent, ``c >= 2``. Section 5.2 uses ``a = b = c = 2`` (also ``(2, 2, 4)``,
        ``(2, 3, 4)``).
    """

    name = "nonconvex_exp"
    convex = False
    _params = {
        "a": _Param(2.0, doc="saturation value"),
        "b": _Param(2.0, doc="localization"),
        "c": _Param(2.0, low=2.0, closed=True, doc="exponent"),
    }

    @staticmethod
    def _A_min(a, b, c):
        return 0.5 * nonconvex_exp_M(a, b, c)

    @staticmethod
    def _scaled(u, xp, b, c):
        # v = u_+ / b^(1/c), so u_+^c / b = v^c; v is clipped where exp(-v^c) is exactly 0
        k = b ** (-1.0 / c)
        vmax = _EXP_CUT ** (1.0 / c)
        smax = min(vmax / k, float(xp.finfo(u.dtype).max))
        return k, clip(u, min=0.0, max=smax, xp=xp) * k

    def _value(self, u, xp, a, b, c):
        _, v = self._scaled(u, xp, b, c)
        return (-a) * xp.expm1(-(v**c))

    def _grad(self, u, xp, a, b, c):
        # (a c / b) u^(c-1) exp(-u^c / b) = a c k v^(c-1) exp(-v^c), k = b^(-1/c)
        k, v = self._scaled(u, xp, b, c)
        return (a * c * k) * (v ** (c - 1.0)) * xp.exp(-(v**c))

    def _curvature(self, u, xp, a, b, c):
        # ψ'' = a c k² ((c − 1) v^(c−2) − c v^(2c−2)) exp(−v^c) for u > 0 (0 for u <= 0),
        # clipped to 0 where negative (v > ((c − 1)/c)^(1/c))
        k, v = self._scaled(u, xp, b, c)
        vc2 = v ** (c - 2.0)
        d2 = (a * c * k * k) * vc2 * ((c - 1.0) - c * (vc2 * v * v)) * xp.exp(-(v**c))
        return xp.where(u > 0, clip(d2, min=0.0, xp=xp), _zeros(u, xp))


# ---------------------------------------------------------------------------------------------
# regression losses
# ---------------------------------------------------------------------------------------------
class SmoothEpsilonInsensitive(Loss):
    """Smoothed epsilon-insensitive loss, eq. (22) (Table 5, psi~^(4)), ``u = y - f(x)``.

    ``psi(u) = (1/p) log(1 + exp(-p (u + eps))) + (1/p) log(1 + exp(p (u - eps)))``, a smooth
    approximation of ``(|u| - eps)_+``. Convex;
    ``psi'(u) = sigma(p (u - eps)) - sigma(-p (u + eps))``; ``psi'' <= p/2`` so LS-DC with
    ``A >= p/4`` (Prop. 2(2)).

    Parameters
    ----------
    epsilon : float, default 0.1
        Half-width of the insensitive tube, ``epsilon >= 0`` (the paper gives no default;
        0.1 is LIBSVM's and scikit-learn's SVR default).
    p : float, default 100.0
        Smoothing parameter, ``p > 0`` (Section 5.2 uses ``p = 100``).
    """

    name = "smooth_epsilon_insensitive"
    tasks = ("regression",)
    convex = True
    _params = {
        "epsilon": _Param(0.1, closed=True, doc="tube half-width"),
        "p": _Param(100.0, doc="smoothing"),
    }

    @staticmethod
    def _A_min(epsilon, p):
        return p / 4.0

    def _value(self, u, xp, epsilon, p):
        return _softplus(-u - epsilon, p, xp) + _softplus(u - epsilon, p, xp)

    def _grad(self, u, xp, epsilon, p):
        return _sigmoids(u - epsilon, p, xp)[0] - _sigmoids(u + epsilon, p, xp)[1]

    def _curvature(self, u, xp, epsilon, p):
        # ψ'' = p σ(p(u−ε)) σ(−p(u−ε)) + p σ(p(u+ε)) σ(−p(u+ε))
        a, am = _sigmoids(u - epsilon, p, xp)
        b, bm = _sigmoids(u + epsilon, p, xp)
        return p * (a * am + b * bm)


class HuberEpsilonInsensitive(Loss):
    """The ε-insensitive loss ``(|u| − ε)₊`` of LIBSVM's ε-SVR with Huber corners,
    ``u = y − f(x)`` (not in UniSVM's Table 5: :class:`svmgpu.SVR`'s loss).

    ``psi(u) = h(|u| − ε)`` with the Huber hinge ``h(v) = (v + δ)²/(4δ)`` for ``|v| < δ``, ``v``
    for ``v ≥ δ`` and 0 below: 0 inside the tube ``|u| ≤ ε − δ``, quadratic in the corners
    ``||u| − ε| < δ``, ``|u| − ε`` beyond. Convex and piecewise quadratic (semi-smooth Newton
    applies, :func:`svmgpu.solvers.exact.exact_newton`); ``psi'' = 1/(2δ)`` in the corners, so
    LS-DC with ``A >= 1/(4δ)``. The corners must not meet at ``u = 0``: ``δ <= ε``.

    Parameters
    ----------
    epsilon : float, default 0.1
        Half-width of the tube, ``epsilon > 0`` (LIBSVM's and scikit-learn's default).
    delta : float, default 0.1
        Half-width of the corners, ``0 < delta <= epsilon``.
    """

    name = "huber_epsilon_insensitive"
    tasks = ("regression",)
    convex = True
    piecewise_quadratic = True
    _params = {"epsilon": _Param(0.1, doc="tube half-width"),
               "delta": _Param(0.1, doc="corner half-width")}

    def __init__(self, task=None, **params):
        super().__init__(task, **params)
        if self.params["delta"] > self.params["epsilon"]:
            raise ValueError(
                f"loss {self.name!r} needs delta <= epsilon (its corners must not meet at "
                f"u = 0), got delta={self.params['delta']!r} > epsilon="
                f"{self.params['epsilon']!r}; lower delta, or use the loss 'huber' for "
                "epsilon = 0")

    @staticmethod
    def _A_min(epsilon, delta):
        return 0.25 / delta

    def _value(self, u, xp, epsilon, delta):
        v = xp.abs(u) - epsilon
        q = clip(v, min=-delta, max=delta, xp=xp)
        w = q + delta
        return w * w * (0.25 / delta) + clip(v - q, min=0.0, xp=xp)

    def _grad(self, u, xp, epsilon, delta):
        v = xp.abs(u) - epsilon
        return xp.sign(u) * ((clip(v, min=-delta, max=delta, xp=xp) + delta) * (0.5 / delta))

    def _curvature(self, u, xp, epsilon, delta):
        v = xp.abs(u) - epsilon
        return xp.where(xp.abs(v) < delta, _full(u, 0.5 / delta, xp), _zeros(u, xp))

    def _knots(self, epsilon, delta):
        if delta == epsilon:  # (the corners meet at 0 in one quadratic)
            return (-epsilon - delta, epsilon + delta)
        return (-epsilon - delta, -epsilon + delta, epsilon - delta, epsilon + delta)


def _huber(u, xp, delta):
    """Huber loss as ``q^2 / (2 delta) + |u| - |q|``, ``q = clip(u, -delta, delta)``."""
    q = clip(u, min=-delta, max=delta, xp=xp)
    return (q * q) * (0.5 / delta) + (xp.abs(u) - xp.abs(q))


def _huber_grad(u, xp, delta):
    """Derivative of the Huber loss: ``u / delta`` inside, ``sgn(u)`` outside."""
    return clip(u, min=-delta, max=delta, xp=xp) * (1.0 / delta)


class Huber(Loss):
    """Huber loss (Table 5, psi~^(6); Prop. 2(3)), ``u = y - f(x)``.

    ``psi(u) = u^2 / (2 delta)`` for ``|u| < delta`` and ``|u| - delta/2`` otherwise, computed
    as ``q^2 / (2 delta) + |u| - |q|`` with ``q = clip(u, -delta, delta)``. Convex;
    ``psi'(u) = q / delta`` (``u / delta`` inside, ``sgn(u)`` outside); ``psi'' <= 1/delta`` so
    LS-DC with ``A >= 1/(2 delta)``.

    Parameters
    ----------
    delta : float, default 0.1
        Width of the quadratic zone, ``delta > 0`` (Section 5.2 uses ``delta = 0.1``).
    """

    name = "huber"
    tasks = ("regression",)
    convex = True
    _params = {"delta": _Param(0.1, doc="quadratic zone")}

    @staticmethod
    def _A_min(delta):
        return 0.5 / delta

    def _value(self, u, xp, delta):
        return _huber(u, xp, delta)

    def _grad(self, u, xp, delta):
        return _huber_grad(u, xp, delta)

    piecewise_quadratic = True

    def _curvature(self, u, xp, delta):
        return xp.where(xp.abs(u) < delta, _full(u, 1.0 / delta, xp), _zeros(u, xp))

    def _knots(self, delta):
        return (-delta, delta)


class SmoothAbsolute(Loss):
    """Smoothed absolute loss (Table 5, psi~^(7); Prop. 2(3)), ``u = y - f(x)``.

    ``psi(u) = (1/p) log((1 + exp(-p u)) (1 + exp(p u)))`` = eq. (22) with ``eps = 0``,
    computed as ``|u| + (2/p) log1p(exp(-p|u|))``. Convex;
    ``psi'(u) = sigma(p u) - sigma(-p u) = tanh(p u / 2)``; ``psi'' <= p/2`` so LS-DC with
    ``A >= p/4``.

    Parameters
    ----------
    p : float, default 100.0
        Smoothing parameter, ``p > 0`` (Section 5.2 uses ``p = 100``).
    """

    name = "smooth_absolute"
    tasks = ("regression",)
    convex = True
    _params = {"p": _Param(100.0, doc="smoothing")}

    @staticmethod
    def _A_min(p):
        return p / 4.0

    def _value(self, u, xp, p):
        au = xp.abs(u)
        return au + xp.log1p(_exp_neg(au, p, xp)) * (2.0 / p)

    def _grad(self, u, xp, p):
        s, sm = _sigmoids(u, p, xp)
        return s - sm

    def _curvature(self, u, xp, p):
        # ψ'' = 2p σ(pu) σ(−pu)
        s, sm = _sigmoids(u, p, xp)
        return (2.0 * p) * s * sm


class TruncatedHuber(Loss):
    """Truncated Huber loss ``min(huber_delta(u), a)`` (Table 5, psi~^(8); Prop. 2(4)).

    Residual ``u = y - f(x)``; approximates the truncated absolute loss ``min(|u|, a)``.
    Non-convex; ``psi'(u) = huber_delta'(u)`` where ``huber_delta(u) < a``, else ``0``;
    LS-DC with ``A >= 1/(2 delta)``.

    Parameters
    ----------
    delta : float, default 0.1
        Width of the quadratic zone, ``delta > 0``.
    a : float, default 2.0
        Truncation level, ``a > 0`` (Section 5.2 uses ``delta = 0.1, a = 2``).
    """

    name = "truncated_huber"
    tasks = ("regression",)
    convex = False
    gradient_jumps = True
    _params = {"delta": _Param(0.1, doc="quadratic zone"), "a": _Param(2.0, doc="truncation")}

    @staticmethod
    def _A_min(delta, a):
        return 0.5 / delta

    def _value(self, u, xp, delta, a):
        return clip(_huber(u, xp, delta), max=a, xp=xp)

    def _grad(self, u, xp, delta, a):
        return xp.where(_huber(u, xp, delta) < a, _huber_grad(u, xp, delta), _zeros(u, xp))

    piecewise_quadratic = True

    def _curvature(self, u, xp, delta, a):
        inside = (xp.abs(u) < delta) & (_huber(u, xp, delta) < a)
        return xp.where(inside, _full(u, 1.0 / delta, xp), _zeros(u, xp))


# ---------------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------------
def _registry(*classes):
    return {cls.name: cls for cls in classes}


#: Loss classes by task and name (the names accepted by :func:`get_loss`).
LOSSES = {
    "classification": _registry(
        LeastSquares,
        TruncatedLeastSquares,
        SquaredHinge,
        TruncatedSquaredHinge,
        HuberHinge,
        SmoothHinge,
        SmoothRamp,
        SmoothRampLog,
        NonconvexExp,
    ),
    "regression": _registry(
        LeastSquares,
        TruncatedLeastSquares,
        SmoothEpsilonInsensitive,
        HuberEpsilonInsensitive,
        Huber,
        SmoothAbsolute,
        TruncatedHuber,
    ),
}


#: The loss names of Zhou 2013's reduced SVMs (``ReducedSVC(loss=...)``) and the registry's loss
#: each one is, with the parameter its continuation drives: the paper's logistic loss
#: ``log(1 + exp(pu))/p`` is the smooth hinge ψ^(6), its Huber loss the classification Huber
#: hinge (named apart from the regression Huber). Their C scale is the loss's
#: :attr:`Loss.zhou2013_scale`.
ZHOU2013_LOSSES = {
    "least_squares": ("least_squares", None),
    "squared_hinge": ("squared_hinge", None),
    "huber_hinge": ("huber_hinge", "delta"),
    "logistic": ("smooth_hinge", "p"),
}


def get_loss(name, task="classification", **params):
    """Build an LS-DC loss by name.

    Parameters
    ----------
    name : str or Loss
        One of ``LOSSES[task]``. A :class:`Loss` instance of the right task is returned as is
        (then no ``params`` may be given).
    task : {"classification", "regression"}, default "classification"
    **params : float
        Loss parameters (``a``, ``p``, ``b``, ``c``, ``delta``, ``epsilon``); missing ones
        take the paper's defaults.

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown task or name (the message lists the valid names), unknown parameter names or
        parameter values out of range (the message names the parameter and its range).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if isinstance(name, Loss):
        if params:
            raise ValueError("parameters cannot be given together with a Loss instance")
        if name.task != task:
            raise ValueError(f"loss {name!r} is for task {name.task!r}, not {task!r}")
        return name
    valid = LOSSES[task]
    if name not in valid:
        other = [t for t in TASKS if t != task and name in LOSSES[t]]
        hint = f" ({name!r} is a {other[0]} loss: pass task={other[0]!r})" if other else ""
        raise ValueError(
            f"unknown {task} loss {name!r}{hint}; valid names: {', '.join(sorted(valid))}"
        )
    return valid[name](task=task, **params)
