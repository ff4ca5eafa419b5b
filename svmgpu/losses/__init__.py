"""LS-DC losses of UniSVM: value, (sub)gradient, LS-DC constant ``A`` and names.

Classification losses are functions of ``u = 1 - y f(x)``, regression losses of
``u = y - f(x)`` (Table 5 of the UniSVM paper). Build one with :func:`get_loss`::

    loss = get_loss("truncated_squared_hinge", a=2.0)
    loss.value(u), loss.grad(u), loss.A()      # A() -> loss.A_min
"""

from svmgpu.losses._losses import (
    LOSSES,
    ZHOU2013_LOSSES,
    Huber,
    HuberHinge,
    LeastSquares,
    Loss,
    NonconvexExp,
    SmoothAbsolute,
    SmoothEpsilonInsensitive,
    SmoothHinge,
    SmoothRamp,
    SmoothRampLog,
    SquaredHinge,
    TruncatedHuber,
    TruncatedLeastSquares,
    TruncatedSquaredHinge,
    get_loss,
    nonconvex_exp_M,
)

__all__ = [
    "LOSSES",
    "Huber",
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
