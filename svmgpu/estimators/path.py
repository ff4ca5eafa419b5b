"""L2SVMPath: the l2-SVM with automatic C by following its regularization path."""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from svmgpu.backend import (
    astype_rows,
    check_fits,
    cho_solve,
    dense_rows,
    format_bytes,
    host_array,
    is_sparse,
    jittered_cholesky,
    model_rows,
)
from svmgpu.estimators._base import CLASSIFIER_PARAMS_DOC, SVCBase, fit_method, store_parameters
from svmgpu.estimators._params import POSITIVE, constraints
from svmgpu.kernels import kernel_columns, kernel_matvec
from svmgpu.solvers.path import CRITERIA, check_path_params, l2svm_path


class L2SVMPath(SVCBase):
    __doc__ = ("""l2-SVM classifier whose C is chosen by following the regularization path.

    Bonidal, Tindel & Guermeur (2013): the solutions of the l2-SVM (squared hinge loss, with
    offset) are followed from ``lambda_max`` down to ``lambda_min`` with one low-rank factor
    of the kernel (:func:`svmgpu.solvers.path.l2svm_path`); at every breakpoint the
    leave-one-out span estimate (16) (and, for ``criterion="radius_margin"``, the
    radius-margin bound) is recorded, and the classifier at the λ minimizing the criterion
    is returned.

    **C ↔ λ.** The paper's Problem 1 is ``min ‖ξ‖² + λ/2 ‖h̄‖²`` with
    ``ξᵢ = (1 − yᵢ h(xᵢ))₊``; divided by λ it is the library's objective
    ``½‖h̄‖² + C Σᵢ ψ(1 − yᵢ h(xᵢ))`` with the squared hinge ``ψ(u) = u₊²`` and

        C = 1 / λ        (``best_C_ = 1 / best_lambda_``).

    (The systems use the paper's shift ``(λ − ε)/2``: with the exact factor of
    ``K + ε/2 I`` (``rank=None``) the dual matrix is exactly ``YKY + λ/2 I``; with a low-rank
    factor ``PPᵀ`` the model at λ is the l2-SVM with kernel ``PPᵀ`` and ``C = 1/(λ − ε)``,
    within ``ε/λ <= 1 %`` of ``1/λ`` for the defaults.)

    **Sample and class weights.** A weight ``sᵢ`` (``sample_weight`` times ``class_weight``)
    multiplies sample i's loss term: ``min Σᵢ sᵢ ξᵢ² + λ/2 ‖h̄‖²``, i.e. ``C sᵢ`` per sample. The
    dual matrix becomes ``Y K Y + λ/2 D⁻¹`` (``D = diag(s)``, (1): ``ξᵢ = λ αᵢ / (2 sᵢ)``), and
    every step of the paper carries over (derived in the user guide, docs/path.md): the
    systems (7)/(10)–(11) and the derivatives (13) in variables scaled by ``√sᵢ``, the
    breakpoint rule counting ``Σ_E sᵢ``, the exact factor ``L Lᵀ = K + ε/2 D⁻¹`` for
    ``rank=None``, the leave-one-out estimate (16)/(20) leaving one unit of weight out (the
    whole sample when ``sᵢ <= 1``) and counting errors with their weights, and the
    radius-margin bound on the points counted ``sᵢ`` times. An integer weight k gives the path
    of k repeated rows (same breakpoints, criteria and classifiers, to rounding), a zero weight
    the path without the row, and ``class_weight="balanced"`` a leave-one-out estimate of the
    balanced error.

    **Sparse X** (SciPy CSR): the Nyström landmarks (and, for ``rank=None``, the kernel
    columns, block by block) come from sparse · dense products; the rows the model keeps
    (landmarks, or the active set for ``refit=True`` / ``rank=None``) are dense. X itself is
    never densified.

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel
    gamma : "scale", "auto" or float
    degree, coef0 : parameters of the polynomial kernel.
    rank : int, None or "auto", default 200
        int: a low-rank factor with this many landmarks (``min(rank, m)``; Proposition 3:
        each λ step costs O(m_E r² + r³)); with ``rank >= m`` the Nyström factor is the exact
        factor of K. None: the exact factor ``L Lᵀ = K + ε/2 I`` of the full kernel (memory
        O(m²), each λ step O(m³): for a few thousand samples at most). "auto": the full kernel up
        to 3,000 samples, else 300. The default is not the library's usual "auto" because the
        full-rank path is cubic in m at every step.
    lowrank : {"nystrom", "pivoted_cholesky"}
        How the low-rank factor is built (ignored when ``rank`` is None).
    eps : float
        The paper's ε (default 1e-8): ``H(ε) = Y(K + ε/2 I)Y`` is what is factored, and the
        systems use ``R_E R_Eᵀ + (λ − ε)/2 I``. Must be below ``lambda_min``.
    lambda_min, lambda_max : float
        The path runs from ``lambda_max`` (default 1e7, the starting point (14)) down to
        ``lambda_min`` (default 1e-6), i.e. ``C`` from 1e-7 to 1e6.
    criterion : {"loo_span", "radius_margin"}
        What selects λ: the leave-one-out span estimate (16) (computed at every λ anyway) or
        the radius-margin bound ``4 R² ‖w̃‖² / m`` (one extra small QP per λ). Ties go to
        the largest λ.
    refit : bool
        True: the selected classifier is expanded on the kernel over the active set E at the
        best λ (section 2.7.3), ``h(x) = Σ_{i∈E} γᵢ κ(xᵢ, x) + b``, by solving
        ``(K_EE + ε/2 I) γ = (P Pᵀ)_{E,·} (y ∘ α)`` (O(m_E³), needs m_E² memory). False:
        the selected classifier stays in the feature form of the factor,
        ``h(x) = p(x)ᵀ w + b`` (an exact expansion on the r landmarks; prediction cost O(r)).
        With ``rank=None`` the expansion over E is exact (γ = y ∘ α) either way.
    tol : float
        Consistency tolerance on the margins of the partition (see ``l2svm_path``).
    max_iter : int
        Maximum number of λ steps.
    device : {"auto", "cpu", "cuda", "cuda:N"}
    dtype : {None, "float32", "float64"}
        Storage of the factor and of the fitted model; the path itself is computed in
        float64 (its systems reach condition numbers near ``‖K‖ / lambda_min``).
    memory_budget : int, str or None
    random_state : int or None
        Seeds the Nyström landmarks.
    verbose : int
""" + CLASSIFIER_PARAMS_DOC + """
    Attributes
    ----------
    lambdas_ : ndarray of shape (n_steps,)
        The breakpoints λ¹ > λ² > ... (largest first).
    loo_error_ : ndarray of shape (n_steps,)
        Leave-one-out span estimate (fraction of the training set) at every λ.
    radius_margin_ : ndarray of shape (n_steps,) or None
        The radius-margin bound at every λ (None unless ``criterion="radius_margin"``).
    n_active_ : ndarray of shape (n_steps,)
        Size of E at every λ.
    intercept_path_ : ndarray of shape (n_steps,)
        α₀ = b at every λ.
    best_lambda_, best_C_ : float
        The selected λ and ``C = 1/λ``.
    intercept_ : ndarray of shape (1,)
        b of the selected classifier.
    support_ : array of shape (m_E,)
        Training indices of E at the selected λ (the points with αᵢ > 0: ``yᵢ h(xᵢ) < 1``;
        never a row of weight 0).
    n_support_ : ndarray of shape (n_classes,)
        The rows of ``support_`` per class; for more than two classes, the rows that are in E
        for at least one of the one-vs-rest problems, per class (as scikit-learn's ``SVC``
        counts the support vectors shared by its binary problems once).
    n_iter_ : int
        Number of λ steps; ``converged_``: whether ``lambda_min`` was reached.
    classes_, kernel_, factor_ (LowRankFactor or None), device_, models_.

    For more than two classes the problem is split one-vs-rest (each binary problem selects
    its own λ): ``lambdas_``, ``loo_error_``, ``radius_margin_``, ``n_active_``,
    ``intercept_path_`` and ``support_`` are then lists with one entry per class, and
    ``best_lambda_``, ``best_C_``, ``intercept_``, ``n_iter_``, ``converged_`` arrays of
    shape (n_classes,).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from svmgpu.estimators.path import L2SVMPath
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = L2SVMPath(gamma=0.02, random_state=0).fit(X, y)
    >>> clf.best_C_, clf.loo_error_.min()  # doctest: +SKIP
    """)

    _parameter_constraints = constraints(
        "kernel", "gamma", "degree", "coef0", "rank", "lowrank", "max_iter", "device", "dtype",
        "memory_budget", "random_state", "verbose", "class_weight", "probability",
        eps=[POSITIVE], lambda_min=[POSITIVE], lambda_max=[POSITIVE], tol=[POSITIVE],
        criterion=[StrOptions(set(CRITERIA))], refit=["boolean"])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.svm.full_kernel_form = True  # rank=None: the path on the full kernel
        # Why a Dask X is refused: the path's active-set algebra is one process's.
        tags.svm.dask_refusal = ("follows the regularization path by adding and removing "
                                 "single rows of its active set, whose features it gathers "
                                 "and factors in one process at every step")
        return tags

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=0.0, rank=200,
                 lowrank="nystrom", eps=1e-8, lambda_min=1e-6, lambda_max=1e7,
                 criterion="loo_span", refit=True, tol=1e-6, max_iter=1000, device="auto",
                 dtype=None, memory_budget=None, random_state=None, verbose=0,
                 class_weight=None, probability=False):
        store_parameters(self, locals())

    # ------------------------------------------------------------------ fit
    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Follow the path on ``(X, y)`` and keep the classifier at the selected λ.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
            NumPy (validated by scikit-learn), SciPy CSR, or CuPy.
        y : array of shape (n_samples,)
            Class labels (at least two classes; more are split one-vs-rest).
        sample_weight : array of shape (n_samples,), optional
            Non-negative weights of the samples' loss terms (see the class notes), multiplied
            by ``class_weight``.

        Returns
        -------
        self
        """
        super().fit(X, y, sample_weight)
        if isinstance(self.support_, list):  # one-vs-rest: the union of the active sets
            xp = self._ctx.xp
            union = xp.unique_values(xp.concat(self.support_))
            self.n_support_ = self._class_counts(y, union)
        return self

    def _validate_path_params(self):  # (the order of eps < lambda_min < lambda_max)
        check_path_params(eps=self.eps, lambda_min=self.lambda_min, lambda_max=self.lambda_max,
                          tol=self.tol, max_iter=self.max_iter, criterion=self.criterion)

    def _ridge(self, sample_weight, rows, *, xp, n, device):
        """``ε/2 D⁻¹`` on the rows ``rows`` (None: all) as an (n, n) diagonal matrix: the
        weighted ``H(ε)`` (``ε/2 I`` without weights; rows of weight 0 get ``ε/2``, they never
        enter the path)."""
        eye = xp.eye(n, dtype=xp.float64, device=device)
        if sample_weight is None:
            return (0.5 * self.eps) * eye
        s = xp.astype(sample_weight if rows is None else xp.take(sample_weight, rows),
                      xp.float64)
        pos = s > 0
        return eye * ((0.5 * self.eps) / xp.where(pos, s, xp.ones_like(s)))[None, :]

    def _full_kernel(self, X, *, xp, budget):
        """The m × m kernel matrix in float64; for sparse X by column blocks against dense
        row blocks (X never densified whole)."""
        if not is_sparse(X):
            X64 = xp.astype(X, xp.float64)
            return self.kernel_.block(X64, X64)
        X64 = X.astype("float64")
        m = X.shape[0]
        K = xp.empty((m, m), dtype=xp.float64, device=getattr(X64.data, "device", None))
        step = 512
        for s in range(0, m, step):
            e = min(s + step, m)
            K[:, s:e] = kernel_columns(self.kernel_, X64, dense_rows(X64, slice(s, e), xp=xp),
                                       memory_budget=budget)
        return K

    def _prepare_fit(self, X, *, ctx, sample_weight):
        xp = ctx.xp
        self._validate_path_params()
        self.kernel_ = self._make_kernel(X, sample_weight)  # gamma="scale": weights as repetitions
        m = X.shape[0]
        budget = ctx.budget_bytes
        if self._effective_rank(m, ctx) is None:
            # The paper's exact factor of H(ε) (up to the signs y): L Lᵀ = K + ε/2 I; weighted,
            # K + ε/2 D⁻¹, so that the systems are exactly YKY + λ/2 D⁻¹ (solvers.path).
            check_fits(4 * m * m * 8, budget, what=f"the full kernel of {m} samples",
                       hint="set rank (e.g. rank=300) for a low-rank factor")
            K = self._full_kernel(X, xp=xp, budget=budget)
            dev = getattr(K, "device", None)
            K = K + self._ridge(sample_weight, None, xp=xp, n=m, device=dev)
            L, shift = jittered_cholesky(K, lower=True, xp=xp)
            if shift:
                K = K + shift * xp.eye(m, dtype=xp.float64, device=dev)
            self.factor_ = None
            # A jitter s makes L Lᵀ = K + (ε/2 + s) I: the solver's ε absorbs it, so that the
            # systems stay exactly YKY + λ/2 I, unless it is too large for that (then it acts
            # as a ridge of s on the kernel). With the exact factor (r = m >= m_E) the solver
            # works in the m_E × m_E space of E from the Gram matrix L Lᵀ. (With weights the
            # jitter, s I, is not of the form ε/2 D⁻¹: it stays a ridge on the kernel.)
            eps = float(self.eps) + (2.0 * shift if sample_weight is None else 0.0)
            return {"P": L, "gram": K, "X": X, "budget": budget,
                    "eps": eps if eps < 0.5 * self.lambda_min else float(self.eps)}
        if self.refit:  # the worst case of the expansion after the path, checked before it
            check_fits(2 * m * m * 8, budget,
                       what=f"L2SVMPath(refit=True): expanding the selected classifier on its "
                            f"active set (at worst all {m:,} points, an m_E x m_E system)",
                       hint="use refit=False (the classifier then stays on the r landmarks)")
        self.factor_, _ = self._lowrank_factor(X, self.kernel_, ctx, sample_weight)
        if self.factor_.P is None:  # the path gathers and updates rows of P at every lambda
            raise MemoryError(
                f"L2SVMPath keeps its {X.shape[0]:,} x {self.factor_.rank} features in memory and "
                f"they do not fit the memory budget ({format_bytes(budget)}); lower the rank or "
                "raise memory_budget")
        return {"P": self.factor_.P, "eps": float(self.eps), "X": X, "budget": budget}

    def _convergence_advice(self):  # the estimator base's one ConvergenceWarning
        reached = min(float(m["path"]["lambdas"][-1]) for m in self.models_
                      if not m["converged"])
        return (f"The path stopped at lambda={reached:.3g} > lambda_min={self.lambda_min:g}; "
                "raise max_iter or lambda_min")

    def _fit_binary(self, shared, rows, y, sample_weight):
        xp = self._ctx.xp
        res = l2svm_path(shared["P"], y, xp=xp, sample_weight=sample_weight, eps=shared["eps"],
                         lambda_min=self.lambda_min,
                         lambda_max=self.lambda_max, criterion=self.criterion, tol=self.tol,
                         max_iter=self.max_iter, gram=shared.get("gram"), verbose=self.verbose)
        info = res.info
        rm = info["radius_margin"]
        path = {
            "lambdas": host_array(info["lambdas"], "float64"),
            "loo_error": host_array(info["loo_error"], "float64"),
            "radius_margin": None if rm[0] is None else host_array(rm, "float64"),
            "n_active": host_array(info["n_active"], "int64"),
            "intercepts": host_array(info["intercepts"], "float64"),
        }
        model = {"path": path, "lambda": float(info["best_lambda"]), "b": float(info["intercept"]),
                 "n_iter": res.n_iter, "converged": res.converged, "timings": res.timings,
                 "m": int(y.shape[0])}
        active = info["active"]
        support = xp.nonzero(active)[0]
        model["support"] = xp.astype(support, xp.int64)
        X = shared["X"]
        dt = X.dtype
        if self.factor_ is None:
            # Exact factor: h(x) = Σ_E αᵢ yᵢ κ(xᵢ, x) + b (2).
            coef = xp.take(res.coef, support) * xp.astype(xp.take(y, support), xp.float64)
            model.update(form="kernel", X_support=model_rows(X, support, xp=xp),
                         dual_coef=xp.astype(coef, dt))
        elif self.refit:
            # Section 2.7.3 with J = E: (K_EE + ε/2 I) γ = (P Pᵀ)_{E,E} (y ∘ α) = P_E w
            # (weighted: H(ε) has ε/2 D⁻¹, the expansion of k copies of a row summed).
            n_E = int(support.shape[0])
            check_fits(2 * n_E * n_E * 8, shared["budget"],
                       what=f"expanding the selected classifier on its {n_E} active points",
                       hint="use refit=False (the classifier then stays on the r landmarks)")
            XE = model_rows(X, support, xp=xp)  # (sparse rows of few nonzeros stay sparse)
            XE64 = astype_rows(XE, xp.float64, xp=xp)
            KE = self.kernel_.block(XE64, XE64)
            KE = KE + self._ridge(sample_weight, support, xp=xp, n=n_E,
                                  device=getattr(KE, "device", None))
            g = xp.matmul(xp.astype(xp.take(shared["P"], support, axis=0), xp.float64), info["w"])
            Lk, _ = jittered_cholesky(KE, lower=True, xp=xp)
            del KE, XE64
            coef = cho_solve((Lk, True), g, xp=xp)
            model.update(form="kernel", X_support=XE, dual_coef=xp.astype(coef, dt))
        else:
            model.update(form="features", w=xp.astype(info["w"], dt))
        return model

    # ------------------------------------------------------------------ predict
    def _prepare_predict(self, X, *, ctx):
        P = None
        if any(m["form"] == "features" for m in self.models_):
            P = self.factor_.transform(X, memory_budget=ctx.budget_bytes)
        return {"X": X, "P": P, "budget": ctx.budget_bytes}

    def _decision_binary(self, model, feats, *, xp):
        if model["form"] == "features":
            P = feats["P"]
            return xp.matmul(P, xp.astype(model["w"], P.dtype)) + model["b"]
        X = feats["X"]
        coef = xp.astype(model["dual_coef"], X.dtype)
        Z = astype_rows(model["X_support"], X.dtype, xp=xp)
        return kernel_matvec(self.kernel_, X, Z, coef, memory_budget=feats["budget"]) + \
            model["b"]

    def _after_fit(self, shared):
        if self.factor_ is not None:  # keep what prediction needs, not the m x r features
            self.factor_ = self.factor_.without_features()
        models = self.models_
        keys = {"lambdas_": "lambdas", "loo_error_": "loo_error", "radius_margin_": "radius_margin",
                "n_active_": "n_active", "intercept_path_": "intercepts"}
        if len(models) == 1:
            mdl = models[0]
            for attr, k in keys.items():
                setattr(self, attr, mdl["path"][k])
            self.best_lambda_ = mdl["lambda"]
            self.best_C_ = 1.0 / mdl["lambda"]
            self.intercept_ = host_array([mdl["b"]], "float64")
            self.support_ = mdl["support"]
            self.n_iter_ = mdl["n_iter"]
            self.converged_ = mdl["converged"]
        else:
            for attr, k in keys.items():
                setattr(self, attr, [mdl["path"][k] for mdl in models])
            self.best_lambda_ = host_array([mdl["lambda"] for mdl in models], "float64")
            self.best_C_ = 1.0 / self.best_lambda_
            self.intercept_ = host_array([mdl["b"] for mdl in models], "float64")
            self.support_ = [mdl["support"] for mdl in models]
            self.n_iter_ = host_array([mdl["n_iter"] for mdl in models], "int64")
            self.converged_ = host_array([mdl["converged"] for mdl in models], "bool")

    # ------------------------------------------------------------------ plot
    def plot_path(self, ax=None, problem=0):
        """Plot the leave-one-out estimate, the radius-margin bound (truncated to 1, when
        computed) and the active-set size ``|E|/m`` against λ (as the paper's Figure 3).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure).
        problem : int
            Which binary problem (one-vs-rest class index) for more than two classes.

        Returns
        -------
        matplotlib Axes

        Raises
        ------
        ImportError
            When matplotlib is not installed.
        """
        try:
            import matplotlib.pyplot as plt  # noqa: PLC0415 - optional dependency
        except ImportError as exc:
            raise ImportError(
                "L2SVMPath.plot_path needs matplotlib, which is not installed: "
                "pip install matplotlib"
            ) from exc
        check_is_fitted(self)
        mdl = self.models_[problem]
        path = mdl["path"]
        if ax is None:
            _, ax = plt.subplots()
        lam = path["lambdas"]
        ax.plot(lam, path["loo_error"], label="leave-one-out span estimate")
        if path["radius_margin"] is not None:
            ax.plot(lam, [min(v, 1.0) for v in path["radius_margin"]],
                    label="radius-margin bound (truncated to 1)")
        ax.plot(lam, path["n_active"] / mdl["m"], label="|E| / m")
        ax.axvline(mdl["lambda"], color="k", linestyle="--",
                   label=f"selected λ = {mdl['lambda']:.3g} (C = {1.0 / mdl['lambda']:.3g})")
        ax.set_xscale("log")
        ax.set_xlabel("λ  (C = 1/λ)")
        ax.set_title("l2-SVM regularization path")
        ax.legend()
        return ax


__all__ = ["L2SVMPath"]
