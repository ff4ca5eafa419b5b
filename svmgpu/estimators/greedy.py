"""``GreedySVC``: the greedy stagewise hard-margin SVM (GS-SVM) as a scikit-learn classifier.

Paper: ``papers/gs-svm-greedy-stagewise-hard-margin.txt`` (sections III–IV, Algorithm 1). The
solver is :func:`svmgpu.solvers.stagewise.greedy_stagewise`.
"""

from __future__ import annotations

from svmgpu.backend import host_array, model_rows, set_rows, sorted_unique, take_rows
from svmgpu.estimators._base import CLASSIFIER_PARAMS_DOC, SVCBase, fit_method, store_parameters
from svmgpu.estimators._params import POSITIVE_INT, constraints
from svmgpu.kernels import kernel_matvec
from svmgpu.solvers.stagewise import greedy_stagewise


class GreedySVC(SVCBase):
    __doc__ = ("""Greedy stagewise hard-margin SVM (GS-SVM): early stopping instead of ``C``.

    Each binary problem minimizes the hard-margin dual (10) stagewise: a stage adds the kernel
    function of the unselected training sample that lowers the loss most, with its closed-form
    weight ((19)–(22)), and never changes earlier weights; fitting stops when no unselected
    sample violates its margin (``y f(x) < 1``), i.e. when the loss stops decreasing. That early
    stop is the regularizer (section VI): there is no ``C`` and no offset, and the cost is one
    kernel column per support vector, ``O(n·l)``, with the kernel matrix never formed. On the
    CPU a column skips the row blocks (k-d tree order) where every RBF/Laplacian value is below
    the rounding level, so a local kernel evaluates a fraction of each column (``prune`` of
    :func:`~svmgpu.solvers.stagewise.greedy_stagewise`; the result is the same to rounding).
    The decision function of a binary problem is ``f(x) = Σᵢ αᵢ yᵢ K(x, xᵢ)`` (5).

    **Sample and class weights.** The hard-margin SVM has no per-sample loss term to weight:
    its samples are constraints, which a duplicated row leaves unchanged. What a duplicated row
    changes is the stagewise algorithm, which selects each kernel function at most once ((11),
    the constraint that keeps one kernel function from being "excessively magnified"): so a
    weight ``sᵢ`` (``sample_weight`` times ``class_weight``) is row i's selection budget, the
    counterpart of the soft-margin box ``αᵢ <= C sᵢ`` of (4). The row may be selected
    ``⌈sᵢ⌉`` times, with the closed-form step (19) per whole unit and the fraction
    ``sᵢ − ⌊sᵢ⌋`` of it for a last partial unit; the selection (21) compares the loss decreases
    (20) of those steps. An integer weight k is exactly k copies of the row (``batch=1``; the
    pool of ``batch > 1`` counts rows, not copies), a zero weight removes the row, unit weights
    are the paper's algorithm, and ``class_weight="balanced"`` gives the smaller class the
    larger budgets.

    **Sparse X** (SciPy CSR): kernel columns are sparse · dense products against the selected
    rows, taken dense a batch at a time (``support_vectors_`` sparse where they have at most 5 %
    nonzeros, as scikit-learn's); X is never densified. The k-d tree
    pruning needs dense coordinates: with sparse X every column is evaluated in full (same
    model to rounding, without the saving for a local kernel). The Laplacian kernel does not
    take sparse X.

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel, default "rbf"
        The paper uses the Gaussian kernel ``exp(−θ‖x − z‖²)`` (θ is ``gamma``).
    gamma : "scale", "auto" or float, default "scale"
        As in scikit-learn. The paper picks θ by cross-validation on the grid
        ``2^-8 … 2^8`` after scaling the features to [−1, 1] (section V-C).
    degree : int, default 3
    coef0 : float, default 0.0
        Parameters of the polynomial kernel.
    max_support : int or None, default None
        At most this many selections per binary problem, i.e. support vectors (a row of weight
        above 1 counts once per selection, like its copies); None: no limit but the rule.
    tol : float, default 1e-3
        The stopping rule: stop when every unselected sample has
        ``g_β/√K_ββ >= −tol`` (for RBF: ``y f(x) >= 1 − tol``), i.e. a KKT violation of at most
        ``tol`` (the paper runs LIBSVM with the same 0.001). Must be > 0 here; the solver
        itself also takes 0, the paper's exact rule.
    batch : int, default 1
        Samples selected per stage. 1 is the paper's algorithm; ``b > 1`` runs the stages on a
        pool of the ``b`` best candidates and updates the gradient with one ``(l, b)`` kernel
        block (a variation for GPUs, see :mod:`svmgpu.solvers.stagewise`).
    multi_class : {"ovo", "ovr"}, default "ovo"
        One-vs-one, as in the paper (section V-C), or one-vs-rest.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default "auto"
    dtype : {None, "float32", "float64"}, default None
        None keeps float32 input as float32 and computes everything else in float64.
    memory_budget : int, str or None, default None
        Bytes for blocked kernel work (None: half the free device memory).
    random_state : None, int or Generator, default None
        Unused: the algorithm is deterministic (ties go to the lowest index). Accepted for a
        uniform interface with the other estimators.
    verbose : int, default 0
""" + CLASSIFIER_PARAMS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_ : ndarray of shape (n_SV,)
        Indices of the training rows that are support vectors of some binary problem, sorted.
    support_vectors_ : array of shape (n_SV, n_features)
        Those rows, on the fit device.
    dual_coef_ : array of shape (n_problems, n_SV)
        ``αᵢ yᵢ`` of each binary problem on the rows of ``support_`` (0 where a row is not a
        support vector of that problem); ``n_problems`` is 1 for two classes, else
        ``n_classes`` (one-vs-rest) or ``n_classes (n_classes − 1) / 2`` (one-vs-one, in the
        order of ``pairs_``, the first class of a pair positive).
    n_support_ : ndarray of shape (n_classes,)
        The rows of ``support_`` per class (each row once, whatever its weight).
    n_iter_ : ndarray of shape (n_problems,)
        Stages per binary problem.
    converged_ : ndarray of shape (n_problems,)
        Whether the stopping rule was reached (False where ``max_support`` stopped first).
    objective_history_ : list of lists
        The loss (10) after 0, 1, … selections, per binary problem.
    implicit_margin_ : ndarray of shape (n_problems,)
        ``A_ω = 1/‖w‖`` of (28): the hyperplanes lie in the set ``‖w‖ <= A_ω⁻¹`` the early
        stop chose implicitly.
    n_kernel_evals_ : int
        Kernel evaluations of the fit.
    kernel_ : Kernel
        The resolved kernel (``gamma="scale"`` turned into a number).
    device_, fit_dtype_, pairs_, n_features_in_ : see :class:`svmgpu.estimators.SVCBase`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from svmgpu.estimators.greedy import GreedySVC
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = GreedySVC(gamma=0.5, device="cpu").fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """)

    _default_multi_class = "ovo"

    _parameter_constraints = constraints(
        "kernel", "gamma", "degree", "coef0", "tol", "multi_class", "device", "dtype",
        "memory_budget", "random_state", "verbose", "class_weight", "probability",
        max_support=[POSITIVE_INT, None], batch=[POSITIVE_INT])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.svm.full_kernel_form = False  # (no rank: kernel columns of the selected rows)
        # Why a Dask X is refused: the greedy selection is sequential over all rows.
        tags.svm.dask_refusal = ("adds support vectors one at a time, each chosen among all "
                                 "rows through a k-d tree of the whole training set: a "
                                 "sequential, one-process method")
        return tags

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=0.0, max_support=None,
                 tol=1e-3, batch=1, multi_class="ovo", device="auto", dtype=None,
                 memory_budget=None, random_state=None, verbose=0, class_weight=None,
                 probability=False):
        store_parameters(self, locals())

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit one GS-SVM per binary problem.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
            NumPy (validated by scikit-learn), SciPy CSR, or CuPy.
        y : array of shape (n_samples,)
            Class labels, at least two classes.
        sample_weight : array of shape (n_samples,), optional
            Non-negative selection budgets (see the class notes), multiplied by
            ``class_weight``; None: 1 each, the paper's algorithm.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For NaN/inf, wrong shapes, negative or non-finite weights, a single class (among
            the rows of positive weight), ``max_support < 1``, ``tol <= 0``, ``batch < 1``, or
            an unknown kernel, device or ``multi_class``.
        """
        return super().fit(X, y, sample_weight)

    def _convergence_advice(self):
        return (f"max_support={self.max_support} support vectors were selected before the "
                f"stopping rule (tol={self.tol:g}) held: raise max_support, or tol")

    def _prepare_fit(self, X, *, ctx, sample_weight):
        kernel = self._make_kernel(X, sample_weight)  # gamma="scale": weights as repetitions
        return {"X": X, "kernel": kernel}

    def _fit_binary(self, shared, rows, y, sample_weight):
        xp, X = self._ctx.xp, shared["X"]
        Xr = X if rows is None else take_rows(X, rows, xp=xp)
        res = greedy_stagewise(Xr, y, shared["kernel"], xp=xp, sample_weight=sample_weight,
                               max_support=self.max_support, tol=self.tol, batch=self.batch,
                               memory_budget=self._ctx.budget_bytes, verbose=self.verbose)
        support = res.info["support"]
        if rows is not None:
            support = xp.take(rows, support)
        return {"support": support, "dual_coef": res.info["dual_coef"], "n_iter": res.n_iter,
                "converged": res.converged, "history": res.objective_history,
                "implicit_margin": res.info["implicit_margin"],
                "n_kernel_evals": res.info["n_kernel_evals"]}

    def _after_fit(self, shared):
        xp, X = self._ctx.xp, shared["X"]
        # The union of the binary problems' supports (sorted), and each problem's weights
        # spread over it: on the device.
        sup_each = [xp.astype(m["support"], xp.int64) for m in self.models_]
        support = sorted_unique(xp.concat(sup_each), xp=xp)
        dual = [set_rows(self._ctx.zeros((support.shape[0],), dtype=X.dtype),
                         xp.searchsorted(support, s), xp.astype(m["dual_coef"], X.dtype), xp=xp)
                for m, s in zip(self.models_, sup_each)]
        self.kernel_ = shared["kernel"]
        self.support_ = support
        self.support_vectors_ = model_rows(X, support, xp=xp)  # (sparse: CSR if few nonzeros)
        self.dual_coef_ = xp.stack(dual, axis=0)
        self.n_iter_ = host_array([m["n_iter"] for m in self.models_], "int64")
        self.converged_ = host_array([m["converged"] for m in self.models_], "bool")
        self.objective_history_ = [m["history"] for m in self.models_]
        self.implicit_margin_ = host_array([m["implicit_margin"] for m in self.models_], "float64")
        self.n_kernel_evals_ = int(sum(m["n_kernel_evals"] for m in self.models_))
        self.models_ = [{"row": p} for p in range(len(self.models_))]

    def _prepare_predict(self, X, *, ctx):
        """Decision values of every binary problem at once: ``K(X, SV) @ dual_coef_ᵀ``,
        array of shape (n_samples, n_problems), computed block by block."""
        xp = ctx.xp
        if self.support_vectors_.shape[0] == 0:
            return xp.zeros((X.shape[0], self.dual_coef_.shape[0]), dtype=X.dtype,
                            device=getattr(X, "device", None))
        return kernel_matvec(self.kernel_, X, self.support_vectors_,
                             xp.matrix_transpose(self.dual_coef_), memory_budget=ctx.budget_bytes,
                             prune=True)

    def _decision_binary(self, model, F, *, xp):
        return F[:, model["row"]]
