"""LS-DC losses of UniSVM: value, (sub)gradient, LS-DC constant ``A`` and names.

Classification losses are functions of ``u = 1 - y f(x)``, regression losses of
``u = y - f(x)`` (Table 5 of the UniSVM paper). Build one with :func:`get_loss`::

    loss = get_loss("truncated_squared_hinge", a=2.0)
    loss.value(u), loss.grad(u), loss.A()      # A() -> loss.A_min
"""

from svmgpu.losses import _losses
from svmgpu.losses._losses import *  # noqa: F403 - the public names, listed once in _losses.__all__

__all__ = _losses.__all__
