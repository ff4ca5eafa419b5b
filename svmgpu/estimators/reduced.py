"""Reduced SVMs trained by Newton's method (Zhou 2013): :class:`ReducedSVC`.

The classifier is ``f(x) = Σ_{j∈J} z_j k(x, x_j) (+ b)`` over a reduced set ``J`` of ``rank``
training points, chosen at random (the papers' RC scheme) or by greedy pivoted Cholesky. The
coefficients solve the reduced problem (17) by :func:`svmgpu.solvers.reduced.newton_reduced`.

The reduced set comes from :func:`svmgpu.lowrank.select_reduced_set`, the kernel columns
``K(X, X_J)`` from :func:`svmgpu.lowrank.reduced_kernel_features` (shared with the closed-form
estimators, :mod:`svmgpu.estimators.closed_form`).
"""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from svmgpu.backend import (
    asarray,
    astype_rows,
    get_namespace,
    host_array,
    model_rows,
    native_device,
)
from svmgpu.distributed import _data as dask_data
from svmgpu.distributed import is_dask_collection
from svmgpu.distributed import reduced_kernel_features as dask_reduced_kernel_features
from svmgpu.estimators._base import CLASSIFIER_PARAMS_DOC, SVCBase, store_parameters
from svmgpu.estimators._params import constraints
from svmgpu.estimators._rank import resolve_rank
from svmgpu.kernels import kernel_matvec
from svmgpu.lowrank import REDUCED_SETS, reduced_kernel_features, select_reduced_set
from svmgpu.solvers.reduced import LOSSES, newton_reduced

#: Regularizers of the reduced problem (17): ``B = I`` (GSVM, M2) or ``B = K_JJ`` (RKHS, M1).
REGULARIZERS = ("gsvm", "rkhs")

def reduced_set_size(rank, n_candidates):
    """The size of the reduced set (:mod:`svmgpu.estimators._rank`, the one rank policy): a
    reduced-set model has no separate full-kernel form, so ``"auto"`` is ``min(300, n)`` and
    None (the full kernel) is every candidate row (the samples of positive weight)."""
    size = resolve_rank(rank, n_candidates)
    return n_candidates if size is None else size


def rkhs_matrix(kernel, Z, *, xp, intercept=False, intercept_penalty=1.0):
    """``K_JJ`` (float64) for the RKHS regularizer, extended by the diagonal
    ``intercept_penalty`` for the offset (``½ b²`` by default, Zhou 2013's regularized offset).

    Computed from the landmarks in float64 whatever their dtype: a float32 ``K_JJ`` is
    indefinite by its rounding (its small eigenvalues are below float32's resolution), and the
    objective ``½ zᵀ K_JJ z + …`` then has directions of negative curvature. ``SVC(rank=1000,
    dtype="float32")`` on 20,000 Covtype rows "converged" to 56.9 % (73.2 % in float64) in
    ten times the time."""
    Z = astype_rows(Z, xp.float64, xp=xp)  # (sparse rows stay sparse)
    K = kernel.block(Z, Z)
    K = 0.5 * (K + xp.matrix_transpose(K))
    if not intercept:
        return K
    r = K.shape[0]
    B = xp.zeros((r + 1, r + 1), dtype=xp.float64, device=getattr(K, "device", None))
    B[:r, :r] = K
    B[r, r] = intercept_penalty
    return B


class _ReducedModelMixin:
    """The reduced set J (chosen among the rows of positive weight) and prediction
    ``f(x) = K(x, X_J) z + b`` for all binary models at once (blockwise)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.svm.full_kernel_form = False  # rank="auto" is a reduced set of min(300, m)
        tags.svm.dask = True  # reduced-kernel columns on the workers, sums over partitions
        return tags

    def _reduced_set(self, X, kernel, ctx, sample_weight):
        """Choose the reduced set J among the rows of positive weight; sets ``support_`` and
        ``support_vectors_`` and returns ``X[J]``."""
        if self._dask_fit:  # drawn on the host, r rows gathered
            return self._dask_reduced_set(X, ctx, sample_weight)
        cand = positive_rows(sample_weight, xp=ctx.xp)
        m = X.shape[0]
        rank = reduced_set_size(self.rank, m if cand is None else cand.shape[0])
        self.rank_ = rank
        J = select_reduced_set(X, kernel, rank, self.reduced_set, candidates=cand,
                               random_state=self.random_state, memory_budget=ctx.budget_bytes)
        self.support_, self.support_vectors_ = J, model_rows(X, J, xp=ctx.xp)
        return self.support_vectors_

    def _dask_reduced_set(self, X, ctx, sample_weight):
        if self.reduced_set != "random":
            raise ValueError(f"reduced_set={self.reduced_set!r} does not take Dask input (its "
                             "pivots are chosen one after another over all rows); use "
                             "reduced_set='random'")
        rows, n = dask_data.eligible_rows(X, sample_weight=sample_weight)
        self.rank_ = rank = reduced_set_size(self.rank, n)
        J = dask_data.draw_rows(rows, n, rank, random_state=self.random_state)
        self.support_ = asarray(J, device=ctx.device)
        self.support_vectors_ = dask_data.rows_of(X, J, device=ctx.device)
        return self.support_vectors_

    def _reduced_features(self, X, kernel, Z, ctx, *, intercept=False):
        """``K(X, X_J)`` (with a column of ones for an offset) as a FeatureOperator: held in
        memory, or recomputed per block when it does not fit the memory budget (on Dask: per
        partition, planned per worker)."""
        if self._dask_fit:
            return dask_reduced_kernel_features(X, kernel, Z, intercept=intercept,
                                                memory_budget=ctx.budget_bytes)
        r = Z.shape[0] + int(intercept)
        in_memory, blocks, store = self._plan_held_features(X, r, ctx, kernel=kernel)
        return reduced_kernel_features(X, kernel, Z, intercept=intercept, in_memory=in_memory,
                                       memory_budget=blocks, dtype=store)

    def _prepare_predict(self, X, *, ctx):
        xp = ctx.xp
        W = xp.stack([m["coef"] for m in self.models_], axis=1)  # (r[+1], n_models)
        r = self.support_vectors_.shape[0]
        out = xp.zeros((X.shape[0], W.shape[1]), dtype=W.dtype,
                       device=native_device(X))
        if W.shape[0] > r:
            out = out + W[r, :][None, :]
        if r:
            out = out + kernel_matvec(self.kernel_, X, self.support_vectors_, W[:r, :],
                                      memory_budget=ctx.budget_bytes)
        return out

    def _decision_binary(self, model, scores, *, xp):
        return scores[:, model["index"]]


def positive_rows(sample_weight, *, xp):
    """Indices of the rows with positive weight (None without weights), on the device."""
    if sample_weight is None:
        return None
    return xp.nonzero(sample_weight > 0)[0]


def has_two_classes(y, sample_weight, *, xp):
    """Whether the rows of positive weight (all rows: ``sample_weight`` None) hold both
    labels of ``y`` (±1)."""
    if is_dask_collection(y):  # (±1 labels: both signs among the rows of positive weight)
        import dask  # noqa: PLC0415

        w = True if sample_weight is None else sample_weight > 0
        pos, neg = dask.compute(((y > 0) & w).any(), ((y < 0) & w).any())
        return bool(pos and neg)
    yy = y if sample_weight is None else y[sample_weight > 0]
    return not (yy.shape[0] == 0 or bool(xp.all(yy == yy[0])))


def check_two_classes(y, sample_weight, *, xp):
    """Raise ``ValueError`` when the rows of positive weight hold only one class."""
    if not has_two_classes(y, sample_weight, xp=xp):
        raise ValueError("after removing the samples with zero sample_weight, only one class "
                         "is left; a binary problem needs two classes")


class ReducedSVC(_ReducedModelMixin, SVCBase):
    __doc__ = ("""Reduced SVM classifier trained by Newton's method (Zhou 2013).

    Solves ``min_z ½ zᵀBz + C Σᵢ sᵢ ψ(1 − yᵢ f(xᵢ))`` with ``f(x) = Σ_{j∈J} z_j k(x, x_j)`` over
    a reduced set ``J`` of ``rank`` training points (problem (17) of the paper), for one of the
    smooth losses of the paper's Table 1 and the regularizer ``B = I`` (GSVM) or ``K_JJ``
    (RKHS norm). Multi-class problems are split one-vs-rest or one-vs-one.

    Parameters
    ----------
    loss : {"squared_hinge", "least_squares", "huber_hinge", "logistic"}
        ψ(u) = u₊² (semi-smooth Newton, finite termination), u² (one Newton step: PSVM for
        GSVM, reduced LS-SVM for RKHS), the Huber loss with δ continuation 1 → 1e-4, or the
        logistic loss ``log(1 + exp(pu))/p`` with p continuation 10 → 10⁴.
    regularizer : {"gsvm", "rkhs"}
        ``"gsvm"``: ``½‖z‖²`` (M2, the paper's recommendation); ``"rkhs"``: ``½ zᵀK_JJ z =
        ½‖f‖²_H`` (M1) with the paper's ridge 1e-8 added to the Newton Hessian.
    rank : "auto", int or None
        Size of the reduced set: ``"auto"`` is ``min(300, n_samples)``, None every training point
        (the full kernel); an int above the number of samples (with positive weight) means all
        of them, as in every estimator. The size used is ``rank_``.
    reduced_set : {"random", "pivoted_cholesky"}
        Random choice (RC scheme) or greedy pivoted-Cholesky pivots.
    C : float
        Loss weight. In terms of the paper's λ (objective ``λ/2 zᵀBz + Σ L`` with L of
        Table 1): ``C = 1/(2λ)`` for least squares and squared hinge, ``C = 1/λ`` for Huber
        and logistic.
    fit_intercept : bool
        Add an offset b, regularized by ``½b²`` (a constant attribute 1 per sample, as the paper
        suggests). Default False: the paper's models have no offset.
    kernel, gamma, degree, coef0 : kernel and its parameters (see :func:`svmgpu.make_kernel`).
    tol : float
        Relative gradient tolerance ``‖g‖ <= tol ‖g₀‖`` (squared hinge and Huber also stop
        when a full Newton step leaves the active set unchanged: the exact optimum).
    max_iter : int
        Maximum Newton steps per binary problem (over all continuation stages).
    device : {"auto", "cpu", "cuda", "cuda:N"}
    dtype : {None, "float32", "float64"}
        Dtype of ``K(X, X_J)``; the r × r Newton systems are always float64.
    memory_budget : int, str or None
        Bytes for the kernel blocks (``K(X, X_J)`` itself, m × r, is kept for the iterations).
    random_state : int, Generator or None
        Draw of the random reduced set.
    verbose : int
    multi_class : {"ovr", "ovo"}
""" + CLASSIFIER_PARAMS_DOC + """
    Attributes
    ----------
    support_ : array of shape (r,)
        Indices J of the reduced set in the training data (int64, on the fit device).
    support_vectors_ : array of shape (r, n_features)
        The points ``X[J]`` (on the fit device).
    coef_ : array of shape (n_models, r)
        The coefficients z of each binary problem (one row for two classes).
    intercept_ : array of shape (n_models,)
        The offsets (zeros unless ``fit_intercept``).
    n_iter_ : ndarray of shape (n_models,)
        Newton steps of each binary problem, its presolve's included.
    n_iter_detail_ : list of dict
        Per binary problem: the steps of the presolve (on a strided subset of the rows, for
        large m on NumPy) and of the solver on all rows; ``n_iter_`` is their sum.
    converged_ : ndarray of shape (n_models,), bool
    objective_history_ : list of lists
        Objective (17) ``½ zᵀBz + C Σ sᵢψ`` at each iterate, per binary problem.
    solver_info_ : list of dict
        Per binary problem: stop reason, active-set sizes, margin violators, timings.
    kernel_ : Kernel
    classes_ : ndarray of shape (n_classes,)

    Notes
    -----
    ``K(X, X_J)`` (m × r in the fit dtype) is computed once, block by block, and reused by every
    binary problem and Newton step; for m = 1,000,000 and r = 300 it takes 2.4 GB in float64,
    1.2 GB stored in float32 (computed in float64: the default for float64 input from
    ``FLOAT32_FEATURES_BYTES``, 256 MiB of float64).
    """)

    _float32_features = True  # (its Newton solver takes float32 features)

    _parameter_constraints = constraints(
        "rank", "C", "fit_intercept", "kernel", "gamma", "degree", "coef0", "tol", "max_iter",
        "device", "dtype", "memory_budget", "random_state", "verbose", "multi_class",
        "class_weight", "probability",
        loss=[StrOptions(set(LOSSES))], regularizer=[StrOptions(set(REGULARIZERS))],
        reduced_set=[StrOptions(set(REDUCED_SETS))])

    def __init__(self, loss="squared_hinge", regularizer="gsvm", rank="auto",
                 reduced_set="random", C=1.0, fit_intercept=False, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, tol=1e-6, max_iter=500, device="auto", dtype=None,
                 memory_budget=None, random_state=None, verbose=0, multi_class="ovr",
                 class_weight=None, probability=False):
        store_parameters(self, locals())

    # ----------------------------------------------------------------------- hooks
    def _prepare_fit(self, X, *, ctx, sample_weight):
        xp = ctx.xp
        kernel = self._make_kernel(X, sample_weight)
        Z = self._reduced_set(X, kernel, ctx, sample_weight)
        P = self._reduced_features(X, kernel, Z, ctx, intercept=bool(self.fit_intercept))
        B = None
        if self.regularizer == "rkhs":
            B = rkhs_matrix(kernel, Z, xp=xp, intercept=bool(self.fit_intercept))
        self.kernel_ = kernel
        return {"P": P, "B": B}

    def _fit_binary(self, shared, rows, y, sample_weight):
        xp = self._ctx.xp
        P = shared["P"] if rows is None else shared["P"].take(rows)
        check_two_classes(y, sample_weight, xp=xp)
        res = newton_reduced(P, y, loss=self.loss, C=float(self.C), B=shared["B"],
                             sample_weight=sample_weight, tol=float(self.tol),
                             max_iter=int(self.max_iter), verbose=self.verbose, xp=xp)
        info = {k: v for k, v in res.info.items() if k != "margins"}
        info["timings"] = res.timings
        detail = {"presolve": int(res.info.get("n_presolve_iter", 0)), "solver": int(res.n_iter)}
        return {"coef": xp.astype(res.coef, self._ctx.dtype),  # (X's: P may be float32)
                "n_iter": sum(detail.values()),
                "n_iter_detail": detail,
                "converged": res.converged, "objective_history": res.objective_history,
                "info": info, "index": None}

    def _convergence_advice(self):
        return (f"Raise max_iter or tol, or lower C (C={self.C:g}, loss={self.loss!r}); check "
                "that the features are scaled (e.g. StandardScaler)")

    def _after_fit(self, shared):
        for k, m in enumerate(self.models_):
            m["index"] = k
        finish_models(self, xp=get_namespace(self.models_[0]["coef"]),
                      r=self.support_vectors_.shape[0])
        self.objective_history_ = [m["objective_history"] for m in self.models_]
        self.solver_info_ = [m["info"] for m in self.models_]
        self.n_iter_detail_ = [m["n_iter_detail"] for m in self.models_]


def finish_models(est, *, xp, r):
    """Set ``coef_``, ``intercept_``, ``n_iter_`` and ``converged_`` from ``est.models_``."""
    W = xp.stack([m["coef"] for m in est.models_], axis=0)
    est.coef_ = W[:, :r]
    if W.shape[1] > r:
        est.intercept_ = W[:, r]
    else:
        est.intercept_ = xp.zeros((W.shape[0],), dtype=W.dtype, device=getattr(W, "device", None))
    est.n_iter_ = host_array([m["n_iter"] for m in est.models_], "int64")
    est.converged_ = host_array([m["converged"] for m in est.models_], "bool")


__all__ = ["REDUCED_SETS", "REGULARIZERS", "ReducedSVC"]
