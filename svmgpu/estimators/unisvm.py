"""UniSVC and UniSVR: UniSVM (DCA with closed-form steps) for every LS-DC loss."""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from svmgpu.backend import check_fits, host_array, model_rows, take_rows
from svmgpu.distributed import factor_features
from svmgpu.estimators._base import (
    CLASSIFIER_PARAMS_DOC,
    SVCBase,
    SVMBase,
    SVRBase,
    store_parameters,
)
from svmgpu.estimators._params import POSITIVE, constraints
from svmgpu.kernels import kernel_matvec
from svmgpu.losses import Loss, get_loss
from svmgpu.lowrank import nystrom
from svmgpu.solvers.unisvm import unisvm, unisvm_newton

_INITS = ("auto", "least_squares", "squared_hinge")
_SOLVERS = ("auto", "dca", "newton")


#: The parameters of UniSVR (UniSVC adds the classifier's).
_UNISVM_CONSTRAINTS = constraints(
    "C", "kernel", "gamma", "degree", "coef0", "rank", "lowrank", "lowrank_tol", "tol",
    "max_iter", "device", "dtype", "memory_budget", "random_state", "verbose",
    loss=[str, Loss],  # the loss registry names the valid losses of the task
    loss_params=[dict, None], A=[POSITIVE, None], solver=[StrOptions(set(_SOLVERS))],
    accelerate=["boolean"], init=[StrOptions(set(_INITS))])


class _UniSVMMixin:
    """Shared fit/predict machinery of UniSVC and UniSVR (the ``_task`` differs)."""

    _float32_features = True  # (their Newton and DCA solvers take float32 features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # Nyström features on the workers, Newton over partitions
        tags.svm.dask = True
        tags.svm.full_kernel_form = True
        return tags

    def _loss(self):
        params = dict(self.loss_params or {})
        return get_loss(self.loss, task=self._task, **params)

    def _prepare_fit(self, X, *, ctx, sample_weight):
        self.loss_ = self._loss()
        self.A_ = self.loss_.A(self.A)
        if self.init == "squared_hinge" and self._task != "classification":
            raise ValueError("init='squared_hinge' is for classification; use 'least_squares'")
        rank = self._effective_rank(X.shape[0], ctx)
        self.solver_ = "dca" if self.solver == "dca" else "newton"
        self.kernel_ = self._make_kernel(X, sample_weight)
        if rank is None:
            m = X.shape[0]  # K, its float64 copy and the Cholesky factor
            check_fits(3 * m * m * 8, ctx.budget_bytes,
                       what=f"the full kernel of {m} samples",
                       hint="set rank (e.g. rank=300) for the low-rank solver")
            self.factor_ = None
            if self.solver_ == "newton":
                # The full kernel exactly, K = P Pᵀ with every point a landmark (the pivoted
                # Cholesky of K drops the numerically dependent ones), solved by Newton in
                # feature coordinates (DCA needs thousands of steps at large C) and kept in the
                # full form f = K(·, X_B) α_B with α_B = L⁻ᵀ β (f = P β = K_{·B} L⁻ᵀ β).
                cand = None if sample_weight is None else ctx.xp.nonzero(sample_weight > 0)[0]
                full = nystrom(X, self.kernel_, m, candidates=cand,
                               memory_budget=ctx.budget_bytes)
                self.X_fit_ = full.landmark_X
                return {"P": full.features(memory_budget=ctx.budget_bytes), "G": None,
                        "L_inv": full.L_inv}
            self.X_fit_ = model_rows(X, slice(None), xp=ctx.xp)  # the full form's rows
            return {"K": self.kernel_.block(self.X_fit_, self.X_fit_)}
        self.factor_, blocks = self._lowrank_factor(X, self.kernel_, ctx, sample_weight)
        self.X_fit_ = None
        # P in memory, or recomputed per block when it does not fit the budget
        P = factor_features(self.factor_, X, memory_budget=blocks) if self._dask_fit else \
            self.factor_.features(None if self.factor_.P is not None else X,
                                  memory_budget=blocks)
        return {"P": P, "G": None}

    def _fit_binary(self, shared, rows, y, sample_weight):
        ctx = self._ctx
        xp = ctx.xp
        kw = dict(C=self.C, A=self.A_, task=self._task, sample_weight=sample_weight,
                  max_iter=self.max_iter, tol=self.tol, accelerate=self.accelerate,
                  verbose=self.verbose, xp=xp)
        if "K" in shared:
            K = shared["K"]
            if rows is not None:
                K = xp.take(xp.take(K, rows, axis=0), rows, axis=1)
            data = {"K": K}
        else:
            P = shared["P"] if rows is None else shared["P"].take(rows)
            data = {"P": P}
            if self.solver_ == "dca" and not self._dask_fit:  # (Newton builds its Hessian
                # from the active rows only; on Dask the DCA rows sum PᵀWP themselves)
                if rows is None and sample_weight is None:
                    if shared["G"] is None:
                        shared["G"] = P.gram()
                    data["G"] = shared["G"]
                else:
                    data["G"] = P.gram(sample_weight, nonnegative=True)
        if self.solver_ == "newton":
            def run(loss, warm):
                return unisvm_newton(y, loss, C=self.C, P=data["P"], task=self._task,
                                     sample_weight=sample_weight, warm_start=warm,
                                     max_iter=self.max_iter, tol=self.tol,
                                     verbose=self.verbose, xp=xp)
        else:
            def run(loss, warm):
                return unisvm(y, loss, **data, warm_start=warm,
                              **{**kw, "A": self.A_ if loss is self.loss_ else None})
        warm, n_warm = None, 0
        init = self._start_loss()
        if init is not None:
            start = run(get_loss(init, task=self._task), None)
            warm, n_warm = start.coef, start.n_iter + start.info.get("n_presolve_iter", 0)
        res = run(self.loss_, warm)
        detail = {"warm_start": int(n_warm), "presolve": int(res.info.get("n_presolve_iter", 0)),
                  "solver": int(res.n_iter)}
        coef = res.coef
        f = res.info["margins"]  # the solver's own f at coef (None on Dask: on the workers)
        support = None if f is None else \
            self._nonzero_loss_rows(self.loss_, y, xp.astype(f, xp.float64), sample_weight,
                                    rows)
        if "L_inv" in shared:  # the exact factor of the full kernel: α_B = L⁻ᵀ β
            L_inv = xp.astype(shared["L_inv"], xp.float64)
            coef, rows = xp.matmul(xp.matrix_transpose(L_inv), coef), None
        return {"coef": coef, "rows": rows, "n_iter": sum(detail.values()), "n_iter_detail": detail,
                "converged": res.converged, "objective_history": res.objective_history,
                "timings": res.timings, "support": support}


    def _start_loss(self):
        """The loss solved first for the start (None: the solver's own start).

        ``init="auto"``: the squared hinge for a non-convex classification loss (a convex
        problem whose solution sits where the robust loss's is, away from the inflection
        points of the smoothed losses at f = 0; the notebooks' set-up), the least-squares
        solution otherwise. DCA's own start is the least-squares solution (ξ⁰ = y, γ⁰ = 0);
        Newton's is 0 (or its presolve), which for a convex loss gives the same optimum, so
        only a non-convex loss solves the least-squares problem first."""
        init = self.init
        if init == "auto":
            init = "squared_hinge" if (self._task == "classification" and
                                       not self.loss_.convex) else "least_squares"
        if init == self.loss_.name or (init == "least_squares" and
                                       (self.solver_ == "dca" or self.loss_.convex)):
            return None
        return init

    def _convergence_advice(self):
        if self.solver_ == "dca":
            hint = "DCA converges linearly: raise max_iter"
            if self.loss_.piecewise_quadratic:
                hint += ", or use solver='newton'"
            return hint + f", or lower C (C={self.C:g}, loss={self.loss_.name!r})"
        return (f"Raise max_iter or tol, or lower C (C={self.C:g}, loss={self.loss_.name!r}); "
                "check that the features are scaled (e.g. StandardScaler)")

    def _prepare_predict(self, X, *, ctx):
        if self.factor_ is not None:  # every model's f = K(x, landmarks) (L⁻ᵀ β): O(n r d),
            xp, f64 = ctx.xp, ctx.xp.float64  # in kernel blocks within the budget (not the
            # n × r features p(x) = L⁻¹ k(x, landmarks), which cost O(n r²) and n r memory)
            B = xp.stack([xp.astype(m["coef"], f64) for m in self.models_], axis=1)
            U = xp.matmul(xp.matrix_transpose(xp.astype(self.factor_.L_inv, f64)), B)
            return {"scores": kernel_matvec(self.factor_.kernel, X, self.factor_.landmark_X,
                                            xp.astype(U, X.dtype),
                                            memory_budget=ctx.budget_bytes)}
        return {"X": X, "budget": ctx.budget_bytes}

    def _decision_binary(self, model, feats, *, xp):
        coef = model["coef"]
        if self.factor_ is not None:
            column = next(q for q, m in enumerate(self.models_) if m is model)
            return feats["scores"][:, column]
        X = feats["X"]
        Z = self.X_fit_ if model["rows"] is None else take_rows(self.X_fit_, model["rows"], xp=xp)
        return kernel_matvec(self.kernel_, X, Z, xp.astype(coef, X.dtype),
                             memory_budget=feats["budget"])

    def _after_fit(self, shared):
        xp = self._ctx.xp
        models = self.models_
        self.landmarks_ = None if self.factor_ is None else self.factor_.landmarks
        if self.factor_ is not None:  # keep what prediction needs, not the m x r features
            self.factor_ = self.factor_.without_features()
        self.support_ = self._union_support([m.pop("support") for m in models])
        if len(models) == 1:
            m = models[0]
            self.coef_ = m["coef"]
            self.n_iter_ = m["n_iter"]
            self.n_iter_detail_ = m["n_iter_detail"]
            self.converged_ = m["converged"]
            self.objective_history_ = m["objective_history"]
        else:
            same = all(m["coef"].shape == models[0]["coef"].shape for m in models)
            self.coef_ = xp.stack([m["coef"] for m in models]) if same else [m["coef"] for m in models]
            self.n_iter_ = host_array([m["n_iter"] for m in models], "int64")
            self.n_iter_detail_ = [m["n_iter_detail"] for m in models]
            self.converged_ = host_array([m["converged"] for m in models], "bool")
            self.objective_history_ = [m["objective_history"] for m in models]


_DOC_PARAMS = """
    Parameters
    ----------
    loss : str
        An LS-DC loss of UniSVM's Table 5 (see :data:`svmgpu.losses.LOSSES`).
    loss_params : dict, optional
        The loss's parameters (e.g. ``{"a": 2}``); defaults as in the paper.
    A : float, optional
        LS-DC constant; None uses the table's lower bound (a larger value is allowed).
    C : float
        Loss weight: the objective is ``½‖f‖² + C Σ ψ(rᵢ)``; the paper's λ is ``C = 1/(λ m)``.
    kernel, gamma, degree, coef0 : kernel and its parameters (``gamma="scale"`` as in scikit-learn).
    rank : "auto", int or None
        None: full kernel (DCA: form (27); Newton: the exact factor ``K = P Pᵀ`` with every
        training point a landmark, numerically dependent points dropped; either way the model
        is ``f = K(·, X_fit_) α``); int: low-rank factor of this rank, form (29)/(30) in
        feature coordinates; "auto": the full kernel up to 3,000 samples (when it fits the
        memory budget), else rank 300. The rank used is ``rank_``.
    lowrank : {"nystrom", "pivoted_cholesky"}
    lowrank_tol : float
        Trace tolerance of the pivoted Cholesky (``trace(K − PPᵀ) <= lowrank_tol · m``).
    solver : {"auto", "dca", "newton"}
        ``"newton"`` (and ``"auto"``): Newton steps on UniSVM's objective (full or low rank)
        for every loss: semi-smooth Newton with the generalized Hessian for the
        piecewise-quadratic losses (least squares, squared hinge, Huber hinge, smoothed ramp,
        their truncations, Huber, truncated Huber), the curvature rounded to levels for the
        smooth ones (smooth hinge, smoothed ramp 2, exponential loss, smooth ε-insensitive
        and absolute losses), negative curvature clipped to 0 for the non-convex losses, and
        a line search on the true objective (:func:`svmgpu.solvers.unisvm.unisvm_newton`):
        2–40 steps where DCA needs hundreds to thousands at large C. ``"dca"``: UniSVM's
        Algorithm 1 (closed-form DCA steps, Anderson accelerated).
    accelerate : bool
        Anderson-accelerated DCA with a monotone safeguard (default) or plain DCA.
    init : {"auto", "least_squares", "squared_hinge"}
        The start: the least-squares solution (the paper's ξ⁰ = y, γ⁰ = 0) or, for
        classification, the squared-hinge solution (a convex warm start). ``"auto"``: the
        squared hinge's for a non-convex classification loss, the least-squares one otherwise.
        A convex loss reaches the same optimum from any start; Newton then starts from 0.
    tol, max_iter : stopping rule (see :func:`svmgpu.solvers.unisvm.unisvm` for DCA and
        :func:`svmgpu.solvers.unisvm.unisvm_newton` for Newton: the relative stationarity
        ``‖∇F‖ / ‖C Pᵀ(s ψ')‖``, the same number for both solvers; for the truncated losses,
        whose ψ' jumps, also the relative decrease of the objective in a step).
    device : {"auto", "cpu", "cuda", "cuda:N"}
    dtype : {None, "float32", "float64"}
    memory_budget : int, str or None
    random_state : int or None
        Seeds the Nyström landmarks.
    verbose : int
"""


class UniSVC(_UniSVMMixin, SVCBase):
    __doc__ = (
        "Kernel SVM classifier trained by UniSVM for any LS-DC loss "
        "(convex or robust non-convex).\n" + _DOC_PARAMS + """    multi_class : {"ovr", "ovo"}
""" + CLASSIFIER_PARAMS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : array
        β of shape (r,) (low rank) or α of shape (m,) (full kernel); stacked per binary
        problem.
    support_ : array of shape (n_SV,) or None
        The training rows with a nonzero loss derivative ``ψ'(rᵢ)`` at the solution (and a
        positive weight), over all binary problems: the points that shape the model, SVC's
        support vectors (the margin violators of the hinge-type losses; a truncated loss's
        outliers are not among them). None after a Dask fit.
    n_support_ : ndarray of shape (n_classes,)
        ``support_`` counted per class.
    landmarks_ : array or None
        Indices of the landmarks.
    n_landmarks_ : int
        The landmarks kept: fewer than ``rank_`` when some are numerically dependent on the
        others.
    n_iter_ : int or ndarray
        Every iteration: the warm start's, the presolve's and the solver's.
    n_iter_detail_ : dict or list of dict
        Those three counts.
    fit_timings_ : dict
        Seconds of each phase of the fit (``features``, ``solve``, ``probability``).
    converged_, objective_history_, loss_, A_, kernel_, device_
        As named; ``factor_`` is the :class:`~svmgpu.lowrank.LowRankFactor`.

    Examples
    --------
    >>> from svmgpu import UniSVC
    >>> from svmgpu.datasets import make_checkerboard
    >>> X, y = make_checkerboard(20000, flip=0.1, random_state=0)
    >>> clf = UniSVC(loss="truncated_squared_hinge", C=10.0, gamma=16.0, rank=300).fit(X, y)
    """
    )

    _parameter_constraints = {**_UNISVM_CONSTRAINTS,
                              **constraints("multi_class", "class_weight", "probability")}

    def __init__(self, loss="squared_hinge", *, loss_params=None, A=None, C=1.0, kernel="rbf",
                 gamma="scale", degree=3, coef0=0.0, rank="auto", lowrank="nystrom",
                 lowrank_tol=1e-3, solver="auto", accelerate=True, init="auto",
                 tol=1e-3, max_iter=1000, multi_class="ovr", class_weight=None, probability=False,
                 device="auto", dtype=None, memory_budget=None, random_state=None, verbose=0):
        store_parameters(self, locals())


class UniSVR(_UniSVMMixin, SVRBase):
    __doc__ = (
        "Kernel SVM regressor trained by UniSVM for any LS-DC regression loss.\n"
        + _DOC_PARAMS + """
    Attributes
    ----------
    coef_ : array of shape (r,) or (m,)
        β (low rank) or α (full kernel).
    support_ : array of shape (n_SV,) or None
        The training rows with a nonzero loss derivative at the solution (outside the ε-tube
        of the ε-insensitive losses), as scikit-learn's ``SVR``; None after a Dask fit.
    n_support_ : ndarray of shape (1,)
        ``len(support_)``.
    n_landmarks_, n_iter_, n_iter_detail_, fit_timings_, converged_, objective_history_
        As in :class:`UniSVC`.
"""
    )
    _parameter_constraints = _UNISVM_CONSTRAINTS

    def __init__(self, loss="smooth_epsilon_insensitive", *, loss_params=None, A=None, C=1.0,
                 kernel="rbf", gamma="scale", degree=3, coef0=0.0, rank="auto",
                 lowrank="nystrom", lowrank_tol=1e-3, solver="auto", accelerate=True,
                 init="auto", tol=1e-3, max_iter=1000, device="auto", dtype=None, memory_budget=None,
                 random_state=None, verbose=0):
        store_parameters(self, locals())


__all__ = ["SVMBase", "UniSVC", "UniSVR"]
