"""The reduced SVMs of Zhou 2013 ("Which is better? Regularization in RKHS vs ℝᵐ on reduced
SVMs", sections 3–4), :func:`newton_reduced`: the paper's set-up of the library's one
semi-smooth Newton method (:func:`svmgpu.solvers.newton.semismooth_newton`): its four losses by
name, their continuation, λ, the RKHS ridge, zero-weight rows dropped.

The reduced problem (17) is written in the library's form

    min_z  ½ zᵀ B z + C Σᵢ sᵢ ψ(uᵢ),      uᵢ = 1 − yᵢ Pᵢ z,                         (17)

where ``P = K(X, X_J)`` (m × r, the paper's F) holds the kernel columns of the reduced set ``J``, ``s`` are
sample weights, ``B = I`` for GSVM ("M2", (16)) and ``B = K_JJ`` for the RKHS regularizer
("M1", (15)). ψ is the paper's loss ``L`` of Table 1 times ``κ`` with ``κ = 2`` for the least
squares (ψ = u²) and squared hinge (ψ = u₊²) losses and ``κ = 1`` for the Huber hinge and
logistic (ψ = L); every ψ and its κ (:attr:`svmgpu.losses.Loss.zhou2013_scale`) come from the
library's one loss registry (:mod:`svmgpu.losses`, :data:`~svmgpu.losses.ZHOU2013_LOSSES`), so
the paper's λ is

    λ = 1 / (κ C):   C = 1/(2λ) (least squares, squared hinge),   C = 1/λ (Huber hinge, logistic).

Internally the solver uses the paper's scaling ``λ/2 zᵀBz + Σ sᵢ L(uᵢ)`` (the objective
divided by ``κ C``), so that the Newton equations are literally (20)–(26):

    (λB + P_Iᵀ Λ P_I) z̄ = Σ_{i ∈ I ∪ I₊} sᵢ yᵢ (L''(uᵢ)(1 − uᵢ) + L'(uᵢ)) Pᵢ            (20)

with ``Λ = diag(sᵢ L''(uᵢ))`` on the rows ``I`` of positive curvature. The full step
``z̄`` is taken when it passes the Armijo test, otherwise a backtracking line search along
``z̄ − z`` (whose margins are linear in the step, so each trial costs O(m)).

* **Least squares** (21): one Newton step solves the problem.
* **Squared hinge** (22): semi-smooth Newton; the Hessian ``λB + P_IᵀS P_I`` is updated with
  the rows entering and leaving the active set (23); terminates in finitely many steps when the
  active set no longer changes after a full step.
* **Huber hinge** (24)/(25): piecewise quadratic; δ continuation ``δ ← 0.1 δ`` from ``delta0 = 1``
  down to ``max(1e-4, delta_min)``; the Hessian ``λB + P_IᵀS P_I / (2δ)`` is updated like (23).
* **Logistic** (26): stable form ``L_p(u) = u₊ + log(1 + exp(−p|u|))/p``; p continuation
  ``p ← 10 p`` from 10 to 10⁴; rows with ``L'' < τ = 1e-10`` are left out of the Hessian.

For GSVM (``B = I``) the Newton equation is solved by the SMW identity (28) when the active set
is smaller than r (cost O(r|I|²) instead of O(r³)); this is not possible for ``B = K_JJ``.

**Offset.** Following the paper (section 1, and Steinwart et al. on kernels such as the
Gaussian), the model has no offset: ``f(x) = Σ_{j∈J} z_j k(x, x_j)``. An offset is obtained
by giving every sample an extra constant attribute 1 (the paper's remark, after Keerthi et
al. [5]): append a column of ones to ``P`` and extend ``B`` by a diagonal entry 1, i.e. the
offset is regularized by ``½ b²`` as in PSVM. The estimators do this for ``fit_intercept``.

**RKHS ridge.** As in the paper's experiments, a ridge ``ε I`` (``ridge``, default 1e-8) is
added to the Newton Hessian ``λB + …`` of M1. The solver folds it into the objective, i.e. it
minimizes (17) with ``B + (ε/λ) I``, so Newton equations and line search agree.
"""

from __future__ import annotations

import math

from svmgpu.losses import LOSSES as _REGISTRY
from svmgpu.losses import ZHOU2013_LOSSES, get_loss
from svmgpu.lowrank import as_operator
from svmgpu.solvers.newton import NewtonOptions, semismooth_newton

#: Loss names accepted by :func:`newton_reduced` (ReducedSVC's ``loss``): the names of
#: :data:`svmgpu.losses.ZHOU2013_LOSSES`, each one a loss of the library's one registry.
LOSSES = tuple(ZHOU2013_LOSSES)

#: ψ = κ L: the library's loss over the paper's (Table 1); λ = 1 / (κ C). Read from the
#: registry's losses (:attr:`svmgpu.losses.Loss.zhou2013_scale`), not declared here.
LOSS_SCALE = {name: _REGISTRY["classification"][loss].zhou2013_scale
              for name, (loss, _) in ZHOU2013_LOSSES.items()}

#: The paper's threshold τ on L' and L'' for the logistic loss (section 4.2.4).
LOGISTIC_TAU = 1e-10


def check_loss(loss):
    """Return ``loss`` if it is a valid loss name, else raise ``ValueError``."""
    if loss == "huber":
        raise ValueError(
            "loss 'huber' is the regression Huber loss (UniSVR); the reduced SVM's Huber loss "
            "of Zhou 2013 is the Huber hinge: use loss='huber_hinge'"
        )
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; valid losses: {list(LOSSES)}")
    return loss


def c_to_lambda(C, loss):
    """The paper's λ for the library's ``C``: ``λ = 1/(2C)`` (least squares, squared hinge),
    ``λ = 1/C`` (Huber hinge, logistic)."""
    return 1.0 / (LOSS_SCALE[check_loss(loss)] * float(C))


def lambda_to_c(lam, loss):
    """The library's ``C`` for the paper's λ (inverse of :func:`c_to_lambda`)."""
    return 1.0 / (LOSS_SCALE[check_loss(loss)] * float(lam))


# ------------------------------------------------------------------------------------ losses
def registry_loss(loss, param=None):
    """The registry's :class:`svmgpu.losses.Loss` ψ for a loss name of this solver and its
    smoothing parameter (δ for the Huber hinge, p for logistic; ignored otherwise)."""
    name, key = ZHOU2013_LOSSES[check_loss(loss)]
    return get_loss(name, **({} if key is None else {key: float(param)}))


def loss_terms(psi, kappa, u, *, xp, derivatives=True):
    """The paper's loss ``L = ψ/κ`` and its first two derivatives (Table 1, section 4.2), from
    the registry's ψ (:func:`registry_loss`) and the scale κ of :data:`LOSS_SCALE`.

    Returns
    -------
    L, L1, L2 : arrays of shape (m,)
        ``L(u)``, ``L'(u)``, ``L''(u)`` (the last two None when ``derivatives`` is False).
        For the piecewise losses ``L''`` is the generalized (semi-smooth) second derivative.
    """
    inv = 1.0 / kappa  # 1 or 1/2: exact in floating point
    L = psi.value(u, xp=xp) * inv
    if not derivatives:
        return L, None, None
    return L, psi.grad(u, xp=xp) * inv, psi.curvature(u, xp=xp) * inv


def _schedule(loss, *, delta0, delta_min, p0, p_max):
    """Smoothing parameters of the continuation (one stage each); [None] for LS / SH."""
    if loss == "huber_hinge":
        final = max(1e-4, float(delta_min))
        out, d = [], float(delta0)
        while d > final * (1 + 1e-12):
            out.append(d)
            d *= 0.1
        return out + [final]
    if loss == "logistic":
        out, p = [], float(p0)
        while p < float(p_max) * (1 - 1e-12):
            out.append(p)
            p *= 10.0
        return out + [float(p_max)]
    return [None]


# ------------------------------------------------------------------ Zhou 2013's reduced SVM
def newton_reduced(P, y, *, loss="squared_hinge", C=1.0, B=None, ridge=1e-8, sample_weight=None,
                   z0=None, margins0=None, tol=1e-6, max_iter=500, stage_tol=1e-4, delta0=1.0, delta_min=1e-4,
                   p0=10.0, p_max=1e4, smw="auto", hessian_update="auto", presolve="auto",
                   armijo=1e-4, backtrack=0.5, max_backtracks=50, min_iter=0, memory_budget=None,
                   decrement_tol=None, verbose=0, xp):
    """Newton method for the reduced SVM (17) with the four smooth losses of Zhou (2013): the
    paper's set-up of :func:`semismooth_newton` (losses by name with their continuation, λ,
    the RKHS ridge, zero-weight rows dropped; the knobs of
    :class:`~svmgpu.solvers.newton.NewtonOptions` as keywords).

    Parameters
    ----------
    P : FeatureOperator or array of shape (m, r)
        Kernel columns of the reduced set, ``P = K(X, X_J)`` (a column of ones appended for an
        offset), float32 or float64. All r × r algebra is done in float64.
    y : array of shape (m,)
        Labels in {−1, +1}.
    loss : {"least_squares", "squared_hinge", "huber_hinge", "logistic"}
    C : float
        Loss weight; the paper's ``λ = 1/(2C)`` (least squares, squared hinge) or ``1/C``.
    B : array of shape (r, r) or None
        Regularizer: None for GSVM (``B = I``, M2); ``K_JJ`` for the RKHS norm (M1).
    ridge : float
        ε added to the Newton Hessian when ``B`` is given (the objective uses ``B + (ε/λ) I``).
    sample_weight : array of shape (m,), optional
        Non-negative weights ``sᵢ`` of the losses; rows with weight 0 are dropped.
    z0 : array of shape (r,), optional
        Starting point (default 0, or a pre-solve, see ``presolve``).
    margins0 : array, optional
        ``P z0`` over the rows of positive weight, where the caller has it
        (:func:`semismooth_newton`'s ``margins0``).
    tol : float
        Stop when ``‖g‖ <= tol · ‖g₀‖`` (g₀: the gradient at z = 0, ``−Σ sᵢ yᵢ Pᵢ`` for every
        loss in the paper's scaling; estimated on the subset after a pre-solve) in the final
        smoothing stage, or — for the piecewise-quadratic losses — when a full Newton step leaves
        the active sets unchanged (the exact minimizer).
    max_iter : int
        Maximum number of Newton steps (over all continuation stages).
    stage_tol : float
        Relative gradient tolerance that ends an intermediate continuation stage.
    delta0, delta_min : float
        Huber continuation: δ from ``delta0`` down to ``max(1e-4, delta_min)`` (× 0.1 a stage).
    p0, p_max : float
        Logistic continuation: p from ``p0`` up to ``p_max`` (× 10 a stage).
    smw : {"auto", "always", "never"}
        SMW solve (28) for GSVM: when ``|I| < r`` ("auto"), at every step ("always", for
        testing) or never.
    hessian_update : {"auto", "incremental", "recompute"}
        How ``P_Iᵀ S P_I`` follows the active set (LS, SH, Huber): (23)/(25) when fewer rows
        change than remain active ("auto"), always incrementally, or recomputed every step.
    presolve : {"auto"} or int or None
        Warm start for large m (:func:`semismooth_newton`): "auto" uses :func:`presolve_rows`
        rows (``max(m/50, 40r, 2000)`` when that is at most m/8, so never for the paper's
        Checkerboard tables) on NumPy, recursively, except for least squares (one Newton step);
        an int that many rows; None disables it.
    armijo, backtrack, max_backtracks : float, float, int
        Armijo constant σ, step reduction factor and maximum reductions of the line search.
    min_iter : int
        Newton steps before the gradient test may stop (:class:`NewtonOptions`; for a ``z0``
        near the solution of a neighbouring problem).
    memory_budget : int, str or None
        Bytes for the row blocks of the Hessian and right-hand-side accumulations (None: half
        the free memory of P's device, read once here), for an array ``P``.
    decrement_tol : float, optional
        For the piecewise-quadratic losses: the last stage's gradient test also asks that the
        Newton decrement be at most this share of F (:class:`~svmgpu.solvers.newton.
        NewtonOptions`'s ``decrement_tol``). None (default): off.
    verbose : int
    xp : namespace
        Array namespace of ``P`` (resolved by the caller).

    Returns
    -------
    SolverResult
        As :func:`semismooth_newton`, with ``info["lambda"]``, ``info["stages"]`` as the
        smoothing parameter and Newton steps of each stage and ``info["final_param"]``.
        ``margins`` cover the rows with positive weight.

    Raises
    ------
    ValueError
        For an unknown loss or option, non-positive C, shapes that do not match, labels that
        are not ±1 or negative weights.
    """
    check_loss(loss)
    if smw not in ("auto", "always", "never"):
        raise ValueError(f"smw must be 'auto', 'always' or 'never', got {smw!r}")
    if hessian_update not in ("auto", "incremental", "recompute"):
        raise ValueError("hessian_update must be 'auto', 'incremental' or 'recompute', "
                         f"got {hessian_update!r}")
    for name, v in (("C", C), ("tol", tol), ("stage_tol", stage_tol), ("delta0", delta0),
                    ("delta_min", delta_min), ("p0", p0), ("p_max", p_max)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float)) or not ridge >= 0:
        raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if presolve != "auto" and presolve is not None and (
            isinstance(presolve, bool) or not isinstance(presolve, int) or presolve < 1):
        raise ValueError(f"presolve must be 'auto', None or a positive int, got {presolve!r}")
    P = as_operator(P, memory_budget=memory_budget)  # the budget is read once, here
    m, r = P.shape
    if tuple(y.shape) != (m,):
        raise ValueError(f"y must have shape ({m},), got {tuple(y.shape)}")
    f64 = xp.float64
    dev = P.device.native_device
    s = sample_weight
    if P.distributed:
        pass  # Dask rows: labels and weights come validated from the estimator; rows of
        # weight 0 stay (they add nothing to the loss, gradient or Hessian)
    elif not bool(xp.all((y == 1.0) | (y == -1.0))):
        raise ValueError("y must hold labels -1 and +1 only")
    elif sample_weight is not None:
        s = xp.astype(sample_weight, f64)
        if tuple(s.shape) != (m,):
            raise ValueError(f"sample_weight must have shape ({m},), got {tuple(s.shape)}")
        if not bool(xp.all(s >= 0)) or not bool(xp.all(xp.isfinite(s))):
            raise ValueError("sample_weight must be finite and non-negative")
        keep = s > 0
        if not bool(xp.all(keep)):
            idx = xp.nonzero(keep)[0]
            P, y, s = P.take(idx), xp.take(y, idx, axis=0), xp.take(s, idx, axis=0)
            m = P.shape[0]
        if m == 0:
            raise ValueError("all sample weights are zero")
    lam = c_to_lambda(C, loss)
    if B is not None:
        if tuple(B.shape) != (r, r):
            raise ValueError(f"B must have shape ({r}, {r}), got {tuple(B.shape)}")
        B = xp.astype(B, f64) + (float(ridge) / lam) * xp.eye(r, dtype=f64, device=dev)
    params = _schedule(loss, delta0=delta0, delta_min=delta_min, p0=p0, p_max=p_max)
    if presolve == "auto" and loss == "least_squares":
        presolve = None  # one Newton step solves it
    options = NewtonOptions(
        tol=tol, stop="gradient", stage_tol=stage_tol, max_iter=max_iter, smw=smw,
        hessian_update=hessian_update, tau=LOGISTIC_TAU if loss == "logistic" else 0.0,
        presolve=presolve, armijo=armijo, backtrack=backtrack, max_backtracks=max_backtracks,
        min_iter=min_iter, decrement_tol=decrement_tol)
    res = semismooth_newton(P, y, [registry_loss(loss, p) for p in params], C=C, B=B,
                            sample_weight=s, z0=z0, margins0=margins0, options=options,
                            verbose=verbose, label=f"newton {loss}", xp=xp)
    info = res.info
    info["lambda"] = lam
    info["stages"] = [{"param": params[st["loss"]], "C": st["C"], "n_iter": st["n_iter"]}
                      for st in info["stages"]]
    info["final_param"] = info["stages"][-1]["param"] if info["stages"] else params[0]
    return res


__all__ = [
    "LOGISTIC_TAU",
    "LOSSES",
    "LOSS_SCALE",
    "c_to_lambda",
    "check_loss",
    "lambda_to_c",
    "loss_terms",
    "newton_reduced",
    "registry_loss",
]
