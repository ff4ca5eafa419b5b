"""Closed-form least-squares classifiers: :class:`LSSVC`, :class:`PSVC` and :class:`WPSVC`.

All three call the one least-squares core :func:`svmgpu.solvers.closed_form.least_squares`
(objective ``½‖f‖² + C Σᵢ sᵢ (1 − yᵢ f(xᵢ))²``); they differ in the model of ``f``:

=========  ==================================================  ===============================
estimator  model                                               paper
=========  ==================================================  ===============================
LSSVC      ``f = Σᵢ αᵢ k(·, xᵢ)``, RKHS norm (M1); dual           Zhou 2013 (8)/(9); reduced (21)
           (8)/(9) on the full kernel, or reduced with
           ``B = K_JJ`` and the ridge 1e-8
PSVC       ``f(x) = xᵀw − r`` (linear) or ``K(x, X_J) u − r``,    Fung & Mangasarian; WPSVM paper
           ``½(‖w‖² + r²)`` (GSVM, M2, regularized offset)      (3)–(16)
WPSVC      PSVC with per-sample weights ``sᵢ = 1 − d/(R + q)``  WPSVM paper (17)–(29), (22)
           on the squared errors (``ν/2 ‖Sξ‖²``)
=========  ==================================================  ===============================

Regularization: ``C = 1/(2λ)`` for Zhou's λ (LSSVC), ``C = ν/2`` for PSVM's ν (PSVC, WPSVC).
"""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from svmgpu.backend import (
    check_fits,
    get_namespace,
    is_sparse,
    model_rows,
    set_rows,
    sparse_product_t,
    take_rows,
)
from svmgpu.distributed import DaskFeatures
from svmgpu.estimators._base import SVCBase, store_parameters
from svmgpu.estimators._params import POSITIVE, constraints
from svmgpu.estimators.reduced import (
    REDUCED_SETS,
    _ReducedModelMixin,
    check_two_classes,
    finish_models,
    rkhs_matrix,
)
from svmgpu.kernels import Linear, kernel_columns
from svmgpu.lowrank import linear_features
from svmgpu.solvers.closed_form import center_distance_weights, least_squares

#: Ridge ε added to λ K_JJ in the reduced LS-SVM (Zhou 2013, section 5.1).
RKHS_RIDGE = 1e-8


def _with_intercept(coef, b, fit_intercept, *, xp):
    if not fit_intercept:
        return coef
    return xp.concat([coef, xp.asarray([b], dtype=coef.dtype, device=getattr(coef, "device",
                                                                              None))])


class _LeastSquaresBase(_ReducedModelMixin, SVCBase):
    """Shared fitting of the closed-form classifiers (one least-squares solve per problem)."""

    def _cached_factor(self, shared, rows, weights):
        """The factorization of an earlier binary problem with the same matrix and weights."""
        if rows is None and "factor" in shared and shared["factor_for"] is weights:
            return shared["factor"]
        return None

    def _store_factor(self, shared, rows, weights, res):
        if rows is None:
            shared["factor"], shared["factor_for"] = res.info["factor"], weights

    def _after_fit(self, shared):
        for k, m in enumerate(self.models_):
            m["index"] = k
        xp = get_namespace(self.models_[0]["coef"])
        r = (self.support_vectors_.shape[0] if self.support_vectors_ is not None
             else self.n_features_in_)
        finish_models(self, xp=xp, r=r)
        shared.pop("factor", None)


class LSSVC(_LeastSquaresBase):
    """Least-squares SVM (LS-SVM; Suykens & Vandewalle, in the form of Zhou 2013, M1).

    Minimizes ``½‖f‖²_H + C Σᵢ sᵢ (1 − yᵢ f(xᵢ))²`` over ``f = Σ αᵢ k(·, xᵢ)``: with
    ``rank=None`` through the stable dual (8)/(9), ``α = (K + λS⁻¹)⁻¹ y`` (an m × m Cholesky,
    so the full kernel must fit ``memory_budget``); with an integer ``rank`` through the reduced
    problem (21) ``(λ(K_JJ + εI/λ) + K_JXSK_XJ) z = K_JX S y`` on a reduced set ``J``.

    Parameters
    ----------
    C : float
        ``C = 1/(2λ)`` for the paper's λ.
    kernel, gamma, degree, coef0 : the kernel (see :func:`svmgpu.make_kernel`).
    rank : "auto", int or None
        None: full-kernel dual (8)/(9) (a ``MemoryError`` says when the m × m kernel does not fit
        the budget); int: size of the reduced set J for (21); "auto": the dual up to 3,000
        samples (when it fits), else a reduced set of 300. The rank used is ``rank_``.
    reduced_set : {"random", "pivoted_cholesky"}
    fit_intercept : bool
        Offset regularized by ``½b²`` (the kernel becomes ``k + 1``). Default False, as in (8).
    device, dtype, memory_budget, random_state, multi_class, class_weight, probability, verbose
        As in :class:`svmgpu.estimators.reduced.ReducedSVC` (``verbose``: the phases of the
        fit and their seconds; a closed form has no iterations to log).

    Attributes
    ----------
    support_ : ndarray of shape (n_sv,)
        All training rows (dual) or the reduced set J.
    support_vectors_ : array of shape (n_sv, n_features)
    coef_ : array of shape (n_models, n_sv)
        α (dual) or z (reduced); ``f(x) = K(x, support_vectors_) coef_ + intercept_``.
    intercept_ : array of shape (n_models,)
    solver_ : {"dual", "reduced"}
    n_iter_, converged_ : ndarrays of shape (n_models,) (1 and True: closed forms)
    """

    _parameter_constraints = constraints(
        "C", "kernel", "gamma", "degree", "coef0", "rank", "fit_intercept", "device", "dtype",
        "memory_budget", "random_state", "multi_class", "class_weight", "probability",
        "verbose", reduced_set=[StrOptions(set(REDUCED_SETS))])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.svm.full_kernel_form = True  # the dual (8)/(9)
        return tags

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, rank="auto",
                 reduced_set="random", fit_intercept=False, device="auto", dtype=None,
                 memory_budget=None, random_state=None, multi_class="ovr", class_weight=None,
                 probability=False, verbose=0):
        store_parameters(self, locals())

    def _prepare_fit(self, X, *, ctx, sample_weight):
        xp, budget = ctx.xp, ctx.budget_bytes
        kernel = self._make_kernel(X, sample_weight)
        self.kernel_ = kernel
        m = X.shape[0]
        if self._effective_rank(m, ctx) is None:
            # K, the scaled copy and its Cholesky factor
            check_fits(3 * m * m * 8, budget,
                       what=f"LSSVC(rank=None): the dual (8)/(9) with the full {m} x {m} kernel",
                       hint="pass rank=... (e.g. rank=1000) for the reduced LS-SVM (21)")
            self.solver_ = "dual"
            self.support_ = xp.arange(m, dtype=xp.int64, device=ctx.native_device)
            self.support_vectors_ = model_rows(X, slice(None), xp=xp)  # (sparse: CSR if few nonzeros)
            K = kernel_columns(kernel, X, self.support_vectors_, memory_budget=budget)
            return {"K": K, "m": m}
        self.solver_ = "reduced"
        Z = self._reduced_set(X, kernel, ctx, sample_weight)
        P = self._reduced_features(X, kernel, Z, ctx)
        return {"P": P, "B": rkhs_matrix(kernel, Z, xp=xp)}

    def _fit_binary(self, shared, rows, y, sample_weight):
        fit_b = bool(self.fit_intercept)
        if "K" in shared:  # the m × m kernel matrix (G is the r × r PᵀP everywhere else)
            xp = get_namespace(shared["K"])
            check_two_classes(y, sample_weight, xp=xp)
            K = shared["K"]
            if rows is not None:
                K = xp.take(xp.take(K, rows, axis=0), rows, axis=1)
            res = least_squares(y, C=float(self.C), K=K, fit_intercept=fit_b,
                                sample_weight=sample_weight, xp=xp,
                                memory_budget=self._ctx.budget_bytes,
                                factor=self._cached_factor(shared, rows, sample_weight))
            alpha = res.coef
            if rows is not None:  # α over all training rows (zeros outside the pair)
                full = xp.zeros((shared["m"],), dtype=alpha.dtype,
                                device=getattr(alpha, "device", None))
                alpha = set_rows(full, rows, alpha, xp=xp)
            coef = alpha
        else:
            xp = self._ctx.xp
            check_two_classes(y, sample_weight, xp=xp)
            P = shared["P"] if rows is None else shared["P"].take(rows)
            res = least_squares(y, C=float(self.C), P=P, B=shared["B"], ridge=RKHS_RIDGE,
                                fit_intercept=fit_b, sample_weight=sample_weight, xp=xp,
                                memory_budget=self._ctx.budget_bytes,
                                factor=self._cached_factor(shared, rows, sample_weight))
            coef = res.coef
        self._store_factor(shared, rows, sample_weight, res)
        coef = _with_intercept(coef, res.info["intercept"], fit_b, xp=xp)
        return {"coef": xp.astype(coef, self._fit_dtype(xp)), "n_iter": 1, "converged": True,
                "index": None}

    def _fit_dtype(self, xp):
        return getattr(xp, self.fit_dtype_)


class PSVC(_LeastSquaresBase):
    """Proximal SVM classifier (Fung & Mangasarian, as in the WPSVM paper, (3)–(16)).

    Minimizes ``ν/2 Σᵢ sᵢ ξᵢ² + ½(‖w‖² + r²)`` subject to ``yᵢ(f(xᵢ)) + ξᵢ = 1`` with
    ``f(x) = xᵀw − r`` (linear kernel: one (n+1) × (n+1) system, the SMW form (9) of (7)) or
    ``f(x) = K(x, X_J) u − r`` over a reduced set J (reduced kernel (13)–(16)): GSVM (M2) with
    least squares and a regularized offset. In the library's convention ``C = ν/2``.

    Parameters
    ----------
    C : float
        ``C = ν/2`` for PSVM's ν.
    kernel : {"linear", "rbf", "poly", "laplacian"} or Kernel
        Default "linear", PSVM's main case.
    gamma, degree, coef0 : kernel parameters.
    rank : "auto", int or None
        Nonlinear kernels: size of the reduced set (``"auto"``: ``min(300, n_samples)``; None:
        every training point).
    reduced_set : {"random", "pivoted_cholesky"}
    device, dtype, memory_budget, random_state, multi_class, class_weight, probability, verbose
        As in :class:`svmgpu.estimators.reduced.ReducedSVC` (``verbose``: the phases of the
        fit and their seconds; a closed form has no iterations to log).

    Attributes
    ----------
    coef_ : array of shape (n_models, n_features) (linear) or (n_models, r)
        ``w``, or ``u`` over ``support_vectors_``.
    intercept_ : array of shape (n_models,)
        ``−r``: ``f(x) = xᵀw + intercept_``.
    support_, support_vectors_ : the reduced set (None for the linear kernel).
    n_iter_, converged_ : ndarrays of shape (n_models,)
    """

    _parameter_constraints = constraints(
        "C", "kernel", "gamma", "degree", "coef0", "rank", "device", "dtype", "memory_budget",
        "random_state", "multi_class", "class_weight", "probability", "verbose",
        reduced_set=[StrOptions(set(REDUCED_SETS))])

    def __init__(self, C=1.0, kernel="linear", gamma="scale", degree=3, coef0=0.0, rank="auto",
                 reduced_set="random", device="auto", dtype=None, memory_budget=None,
                 random_state=None, multi_class="ovr", class_weight=None, probability=False,
                 verbose=0):
        store_parameters(self, locals())

    def _prepare_fit(self, X, *, ctx, sample_weight):
        kernel = self._make_kernel(X, sample_weight)
        self.kernel_ = kernel
        if isinstance(kernel, Linear):  # X itself is P
            n = X.shape[1]  # the normal equations, their factor and PᵀP: (n + 1)² each
            check_fits(3 * (n + 1) ** 2 * 8, ctx.budget_bytes,
                       what=f"the linear PSVM's (n + 1) x (n + 1) system for n = {n:,} features",
                       hint="use a nonlinear kernel with a reduced set (e.g. kernel='rbf', "
                            "rank=300), whose system is rank x rank")
            self.support_ = self.support_vectors_ = None
            if self._dask_fit:
                P = DaskFeatures(X, linear_features, n, memory_budget=ctx.budget_bytes,
                                 device=ctx.device)
            else:  # (sparse rows are densified per block: what the per-sample vectors leave)
                _, blocks = self._feature_plan(X.shape[0], n, ctx, itemsize=8)
                P = linear_features(X, memory_budget=blocks)
            return {"P": P, "X": X}
        Z = self._reduced_set(X, kernel, ctx, sample_weight)
        return {"P": self._reduced_features(X, kernel, Z, ctx), "X": X}

    def _weights(self, shared, rows, y, sample_weight, *, xp):
        """Least-squares weights of one binary problem, and the weights to report (None)."""
        return sample_weight, None

    def _fit_binary(self, shared, rows, y, sample_weight):
        xp = self._ctx.xp
        check_two_classes(y, sample_weight, xp=xp)
        P = shared["P"] if rows is None else shared["P"].take(rows)
        ls_weight, reported = self._weights(shared, rows, y, sample_weight, xp=xp)
        res = least_squares(y, C=float(self.C), P=P, fit_intercept=True,
                            sample_weight=ls_weight, xp=xp,
                            memory_budget=self._ctx.budget_bytes,
                            factor=self._cached_factor(shared, rows, ls_weight))
        self._store_factor(shared, rows, ls_weight, res)
        coef = _with_intercept(res.coef, res.info["intercept"], True, xp=xp)
        model = {"coef": xp.astype(coef, getattr(xp, self.fit_dtype_)), "n_iter": 1,
                 "converged": True, "index": None}
        if reported is not None:
            model["sample_weights"] = xp.astype(reported, getattr(xp, self.fit_dtype_))
        return model

    def _prepare_predict(self, X, *, ctx):
        xp = ctx.xp
        if self.support_vectors_ is not None:
            return super()._prepare_predict(X, ctx=ctx)
        W = xp.stack([m["coef"] for m in self.models_], axis=1)  # (n_features + 1, n_models)
        n = X.shape[1]
        XW = (sparse_product_t(X, xp.matrix_transpose(W[:n, :])) if is_sparse(X)
              else xp.matmul(X, W[:n, :]))
        return XW + W[n, :][None, :]


class WPSVC(PSVC):
    """Weighted proximal SVM classifier (Zhang, Wang & Fu; WPSVM paper (17)–(29)).

    PSVC with the squared errors weighted by ``sᵢ²`` (objective ``ν/2 ‖Sξ‖² + ½(‖w‖² + r²)``,
    (17)), where ``sᵢ = 1 − dᵢ/(R + q)`` (22): ``dᵢ`` is the distance of ``xᵢ`` to the centre
    (mean) of its class in input space and ``R`` the radius of that class (its largest ``d``).
    Points far from their class centre — noise, outliers — count less, which makes the
    classifier robust where PSVM is not. Linear: (21) on an (n+1) × (n+1) system; nonlinear:
    (26)–(29) with a reduced kernel.

    Parameters
    ----------
    q : float
        Positive constant of (22), in the units of X (it keeps the farthest point's weight
        ``q/(R + q)`` above zero).
    C, kernel, gamma, degree, coef0, rank, reduced_set, device, dtype, memory_budget,
    random_state, multi_class, class_weight, probability, verbose
        As in :class:`PSVC`. A ``sample_weight`` given to ``fit`` multiplies ``sᵢ²``.

    Attributes
    ----------
    sample_weights_ : array of shape (n_samples,), list of arrays, or None
        The weights ``sᵢ`` of (22) (two classes), or one array per binary problem (the rows of
        that problem; all rows for one-vs-rest). None after a Dask fit (the weights stay with
        their partitions; :func:`svmgpu.solvers.closed_form.center_distance_weights` gives
        them).
    coef_, intercept_, support_, support_vectors_, n_iter_, converged_ : as in :class:`PSVC`.
    """

    # (the class centres and radii are Dask reductions, the weights per chunk, as PSVC)
    _parameter_constraints = {**PSVC._parameter_constraints, "q": [POSITIVE]}

    def __init__(self, C=1.0, q=1.0, kernel="linear", gamma="scale", degree=3, coef0=0.0,
                 rank="auto", reduced_set="random", device="auto", dtype=None, memory_budget=None,
                 random_state=None, multi_class="ovr", class_weight=None, probability=False,
                 verbose=0):
        store_parameters(self, locals())

    def _weights(self, shared, rows, y, sample_weight, *, xp):
        X = shared["X"] if rows is None else take_rows(shared["X"], rows, xp=xp)
        if self._dask_fit:  # the same formulas on the Dask arrays (lazy, chunk by chunk)
            xp = get_namespace(X)
        s = center_distance_weights(X, y, q=float(self.q), sample_weight=sample_weight, xp=xp,
                                    memory_budget=None if self._dask_fit
                                    else self._ctx.budget_bytes)
        ls = s * s
        if sample_weight is not None:
            ls = ls * xp.astype(sample_weight, ls.dtype)
        return ls, None if self._dask_fit else s  # (a Dask fit keeps no m-vector)

    def _after_fit(self, shared):
        super()._after_fit(shared)
        if self._dask_fit:
            self.sample_weights_ = None
            return
        ws = [m["sample_weights"] for m in self.models_]
        self.sample_weights_ = ws[0] if len(ws) == 1 else ws


__all__ = ["LSSVC", "PSVC", "WPSVC"]
