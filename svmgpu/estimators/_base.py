"""Estimator base classes: common parameters, validation, devices, multi-class wrappers.

Subclasses implement a *binary* (or single-output regression) solver through three hooks:

``_prepare_fit(X, *, ctx, sample_weight)``
    work shared by every binary problem of a multi-class fit (e.g. the low-rank factor), given
    the call's :class:`~svmgpu.backend.ComputeContext` and the validated weights (or None);
``_fit_binary(shared, rows, y)``
    fit one problem on the training rows ``rows`` (None = all) with labels ``y`` in {−1, +1}
    (or real targets for regression); returns a dict of fitted arrays (the "model");
``_decision_binary(model, feats, *, xp)``
    decision values of one model on ``feats = _prepare_predict(X, ctx=ctx)``.

The base class resolves the compute context once per fit and once per prediction, validates
input (scikit-learn's validators for NumPy input, equivalent checks where device arrays live),
encodes labels (on the device for device input), runs one-vs-rest or one-vs-one, and returns
predictions in the caller's array kind.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
import warnings
from numbers import Real

import array_api_compat

# NumPy here is the host edge of the estimators: scikit-learn's validation of host input and the
# encoding of host labels of any type (strings, objects). Device input never goes through it.
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_is_fitted,
)

from svmgpu._log import caller_stacklevel, fields, get_logger, verbosity
from svmgpu.backend import (
    Device,
    array_device,
    asarray,
    check_fits,
    fetch_scalars,
    format_bytes,
    get_device,
    host_array,
    is_numpy,
    numpy_dtype,
    sorted_unique,
    to_device,
    to_host,
    to_numpy,
    tree_to_device,
)
from svmgpu.distributed import _data as dask_data
from svmgpu.distributed import fit_scope, is_dask_collection
from svmgpu.estimators._input import check_sample_weight, check_X, check_y, is_device_array
from svmgpu.estimators._multiclass import binary_problems, class_pairs, ovo_votes
from svmgpu.estimators._params import ignored_parameters
from svmgpu.estimators._probability import check_platt_classes, class_probabilities, fit_platt
from svmgpu.estimators._rank import resolve_rank
from svmgpu.estimators._tags import SVMCapabilities, SVMTags
from svmgpu.kernels import make_kernel
from svmgpu.lowrank import feature_plan, nystrom, pivoted_cholesky
from svmgpu.solvers.newton import presolve_rows

#: The docstring entries of the classifier parameters ``class_weight`` and ``probability``.
CLASSIFIER_PARAMS_DOC = """    class_weight : None, "balanced" or dict
        Weights of the classes, multiplying ``sample_weight`` (LIBSVM's per-class C):
        "balanced" weights class c by ``n_samples / (n_classes · n_c)``; a dict maps labels to
        weights (missing classes: 1). The weights used are ``class_weight_``.
    probability : bool
        Fit Platt's sigmoids on held-out decision values (an internal 5-fold cross-validation:
        about five more fits) for ``predict_proba`` / ``predict_log_proba``.
"""

def store_parameters(estimator, values):
    """Store an ``__init__``'s arguments (``locals()``) unchanged as the estimator's parameters,
    as scikit-learn requires: ``__init__`` only stores; validation happens in ``fit``."""
    for name, value in values.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


#: The largest ``C · Σ sᵢ`` a fit takes: the loss terms, gradients and Newton systems scale
#: with it (the Newton slope with its square) and must stay well inside float64 (largest
#: number 1.8e308): fits up to C · Σ sᵢ = 3e162 were measured to work.
_LOSS_SCALE_MAX = 1e170

#: Guards the claim of an instance by the thread that fits it (:func:`fit_method`).
_FIT_OWNER_LOCK = threading.Lock()


def fit_method(fit):
    """``fit`` made atomic and checked: the parameters are validated first (scikit-learn's
    ``_parameter_constraints``; a parameter the configuration ignores gets a warning), the fit
    runs inside ``verbosity(self.verbose)`` (:mod:`svmgpu._log`) with the seconds of its phases
    (:meth:`SVMBase._phase`) becoming ``fit_timings_``, and a fit that raises leaves the
    estimator exactly as it was before the call (unfitted after a failed first fit): the new
    fitted attributes replace the old ones only when the whole fit succeeded, and all of them
    (an attribute of the previous fit that this one does not set, as ``probA_`` after a refit
    with ``probability=False``, is gone, not stale). A ``fit`` that
    calls its base class's decorated ``fit`` is decorated too; the inner call runs plainly.

    One instance is fitted by one thread at a time (as in scikit-learn): a ``fit`` called while
    another thread fits the same instance raises ``RuntimeError`` instead of mixing two fits
    (different instances fit in parallel threads freely)."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        me = threading.get_ident()
        with _FIT_OWNER_LOCK:  # (check and claim at once: two threads cannot both claim it)
            owner = vars(self).get("_fit_owner")
            if owner is None:
                self._fit_owner = me
        if owner == me:  # the decorated fit of a subclass is running: this call runs plainly
            return fit(self, *args, **kwargs)
        if owner is not None:
            raise RuntimeError(
                f"this {type(self).__name__} is being fitted by another thread; fit one "
                "instance from one thread at a time (sklearn.base.clone it for parallel fits)")
        before = dict(vars(self))
        del before["_fit_owner"]
        for name in [k for k in before if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)  # (a previous fit's attributes: this fit sets its own)
        self._timings = {}
        try:
            self._validate_params()
            self._warn_ignored_parameters()
            with verbosity(self.verbose), fit_scope():  # (one executor: the fit's workers)
                t0 = time.perf_counter()
                out = fit(self, *args, **kwargs)
                self.fit_timings_ = self._timings
                self._log.info(fields(fit="done", seconds=time.perf_counter() - t0,
                                      **self.fit_timings_))
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
        del self._timings, self._fit_owner
        return out

    return wrapper


@functools.cache
def _param_names(cls):
    return tuple(BaseEstimator._get_param_names.__func__(cls))


#: With ``dtype=None`` and float64 input, the estimators that take float32 features
#: (``_float32_features``: UniSVC, UniSVR, ReducedSVC) store their held features (Nyström's,
#: or ReducedSVC's kernel columns ``K(X, X_J)``) in float32 from
#: this many bytes of float64 features on (a million rows at rank 32; 105,000 at 300), every
#: value computed in float64 (the landmarks float64's tolerance keeps, each block's
#: ``K(X, X_B) L⁻ᵀ``) and rounded once: half the memory, its first touch and the solver's
#: passes over it. Translation-invariant kernels only (RBF, Laplacian: values and features at
#: most 1); the linear and polynomial kernels' features grow with the rows' norms, and float32
#: rounds them relative to those. Session 34, this 2-core AVX-512 CPU: UniSVM's Covtype set-up (381,012 rows,
#: r = 1000, squared hinge) 15.1 → 10.2 s at the same accuracy (82.489 % both; float32
#: features computed in float32 keep 853 of the 1,000 landmarks: 82.08 % in 6.1 s); smaller
#: features stay float64 (their fits are memory-light, and float64 keeps their solutions
#: comparable to a float64 reference to rounding).
FLOAT32_FEATURES_BYTES = 256 * 2**20


class SVMBase(BaseEstimator):
    """Common parameters and machinery of every svmgpu estimator.

    Subclasses list their parameters in ``__init__`` (scikit-learn introspects it) and
    store them unchanged; everything else happens in ``fit``. The parameters below are those
    the estimators share (each takes the ones that apply to it).

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel
    gamma : "scale", "auto" or float
    degree : int
    coef0 : float
    C : float
        Weight of the loss: the objective is ``½‖f‖² + C Σᵢ ψ(rᵢ)``.
    rank : "auto", int or None
        One meaning in every estimator: an int is the rank of the low-rank factor (or the size
        of the reduced set); None is the full kernel (for reduced-set models: every training
        point in the reduced set); ``"auto"`` (the default) is the full kernel for at most
        ``AUTO_FULL_MAX_SAMPLES`` = 3,000 samples when it fits the memory budget and the model
        has a full-kernel form, else ``AUTO_RANK`` = 300 (:mod:`svmgpu.estimators._rank`, the
        one rank policy). The rank used is ``rank_``.
    lowrank : {"nystrom", "pivoted_cholesky"}
    tol : float
    max_iter : int
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where the fit runs and the fitted arrays live. ``"auto"``: where ``X`` lives when it
        is a device array (CuPy, array-api-strict, or another array-API namespace with the
        linalg extension), else the first CUDA GPU when CuPy sees one, else the CPU.
    dtype : {None, "float32", "float64"}
        None keeps float32 input as float32 and computes everything else in float64; UniSVC,
        UniSVR and ReducedSVC then store the features of a translation-invariant kernel of
        :data:`FLOAT32_FEATURES_BYTES` (256 MiB in float64) or more in float32, every value
        computed in float64. "float64" keeps
        everything in float64.
    memory_budget : int, str or None
        Bytes for blocked kernel work (None: half the free device memory, read once per fit).
    random_state : int, Generator or None
    verbose : int
        0: quiet; 1: the phases of the fit and their seconds, each solver's summary, and a
        progress bar for long phases when tqdm is installed; 2: also a line per iteration.
        Written through the ``svmgpu`` logger in one format (see :mod:`svmgpu._log`); the
        seconds of each phase are ``fit_timings_`` whatever the verbosity.
    """

    #: A Dask classification fit brings its class indices and weights (m-vectors) to the
    #: client instead of keeping them chunked (the partitioned SVC groups them by region).
    _dask_labels_on_client = False

    #: Attributes that hold the device object and the compute context of the current call:
    #: never saved or pickled (a loaded model rebuilds them from ``device_``).
    _transient_attributes = ("_device", "_ctx")

    #: Whether held features may be stored in float32 beside float64 input
    #: (:data:`FLOAT32_FEATURES_BYTES`): the estimators whose solvers take float32 features.
    _float32_features = False

    @classmethod
    def _get_param_names(cls):
        """scikit-learn's parameter names (of ``__init__``), read once per class: its
        ``inspect.signature`` costs about 70 µs and a fit asks three times (parameter
        validation, the ignored-parameter check), 0.45 ms of a 7 ms fit on iris."""
        return list(_param_names(cls))

    @property
    def _log(self) -> logging.Logger:
        return get_logger(type(self).__name__)

    def _fold_params(self):
        """Parameters that the folds of ``probability=True``'s cross-validation refit with,
        beside the fitted model's (choices the fit made that the folds keep)."""
        return {}

    def _fit_problems(self, shared, problems, n_problems, starts=None, first=0):
        """The fitted model of each of the ``n_problems`` problems ``(rows or None, labels or
        targets, weights)`` that ``problems`` yields, one at a time: :meth:`_fit_binary` on the
        shared features of ``_prepare_fit``, each a ``solve`` phase (from ``starts[k]``, a dict
        of ``_fit_binary``'s start keywords, when given). ``first``: the number of the first
        problem, when ``problems`` are those from there on (the phases' log lines count from
        it)."""
        return [self._phase("solve", self._fit_binary, shared, rows, y, w,
                            **({} if starts is None else starts[k]),
                            detail={"problem": f"{first + k + 1}/{n_problems}"}
                            if n_problems > 1 else None)
                for k, (rows, y, w) in enumerate(problems)]

    def _phase(self, name, fn, *args, detail=None, **kwargs):
        """``fn(*args, **kwargs)``, one phase of ``fit``, timed into ``fit_timings_[name]``
        (after the device's queued work) and logged at INFO: ``features`` (``_prepare_fit``),
        ``solve`` (each ``_fit_binary``), ``probability`` (Platt's cross-validation)."""
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self._ctx.device.synchronize()
        dt = time.perf_counter() - t0
        self._timings[name] = self._timings.get(name, 0.0) + dt
        if self._log.isEnabledFor(logging.INFO):
            res = out if isinstance(out, dict) else _joint(out)
            self._log.info("%s %s", name, fields(**(detail or {}), it=res.get("n_iter"),
                                                 converged=res.get("converged"), seconds=dt))
        return out

    # ------------------------------------------------------------------ validation
    def _warn_ignored_parameters(self):
        """Warn about the parameters set away from their defaults that this configuration does
        not use (:func:`~svmgpu.estimators._params.ignored_parameters`), rather than take them
        silently."""
        params = self.get_params(deep=False)
        defaults = type(self)().get_params(deep=False)
        for name, why in ignored_parameters(params, defaults).items():
            warnings.warn(f"{type(self).__name__}: {name}={params[name]!r} is ignored: {why}",
                          UserWarning, stacklevel=caller_stacklevel())

    def _fitted_device(self) -> Device:
        dev = getattr(self, "_device", None)
        return dev if dev is not None else get_device(self.device_)

    # ---------------------------------------------------------------- shared work
    def _check_loss_scale(self, sample_weight, m, *, xp):
        """Refuse, naming the user's inputs, a loss weight ``C · Σ sᵢ`` (sample and class
        weights included) whose loss terms and Newton systems overflow float64: they would
        fail later as a non-finite step at some continuation stage's C."""
        C = getattr(self, "C", None)  # (GS-SVM has no loss weight)
        if C is None or self._dask_fit:
            return
        total = float(C) * (m if sample_weight is None else float(xp.sum(
            xp.astype(sample_weight, xp.float64))))
        if not math.isfinite(total) or total > _LOSS_SCALE_MAX:
            weights = "" if sample_weight is None else \
                f", the largest sample weight (times class_weight) " \
                f"{float(xp.max(xp.astype(sample_weight, xp.float64))):.3g}"
            raise ValueError(
                f"C × the total sample weight is {total:.3g} (C={C!r}{weights}): the loss terms "
                f"overflow float64 beyond {_LOSS_SCALE_MAX:.0e}; lower C or rescale "
                "sample_weight / class_weight (they multiply: only their product matters)")

    def _make_kernel(self, X, sample_weight=None):
        return make_kernel(self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                           X=X, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        """scikit-learn's tags with svmgpu's capabilities (:class:`SVMTags`): every estimator
        takes SciPy CSR input (kernel blocks from sparse rows); subclasses declare Dask input
        and a full-kernel form."""
        tags = SVMTags.extend(super().__sklearn_tags__())
        tags.input_tags.sparse = True
        return tags

    @property
    def _capabilities(self) -> SVMCapabilities:
        return self.__sklearn_tags__().svm

    def _effective_rank(self, m, ctx):
        """The rank this fit uses (sets ``rank_``): None for the full kernel, else an int
        (at most ``m``), following the one meaning of ``rank`` (see the class docstring)."""
        rank = self.rank
        # the full kernel's form holds its rows dense: with sparse X, m × n_features more
        dense_rows = m * self.n_features_in_ * 8 if self._sparse_fit else 0
        if rank is None and dense_rows:
            check_fits(dense_rows, ctx.budget_bytes,
                       what=f"the full kernel (rank=None) of sparse X, whose {m:,} rows it "
                            f"holds dense ({self.n_features_in_:,} features)",
                       hint="set rank (e.g. rank=300) for the low-rank solver")
        full_fits = 3 * m * m * 8 + dense_rows <= ctx.budget_bytes  # K, a copy, its factor
        self.rank_ = resolve_rank(rank, m, full_kernel_form=self._capabilities.full_kernel_form,
                                  full_fits=full_fits, dask=self._dask_fit)
        return self.rank_

    def _feature_plan(self, m, r, ctx, *, itemsize, reserved=0, n_features=None):
        """:func:`svmgpu.lowrank.feature_plan` of this fit: ``(in_memory, block_budget)``,
        counting the Newton presolve's copy of its rows on NumPy, the copies of
        :meth:`_copied_feature_rows` and ``reserved`` bytes held besides (raises MemoryError
        up front when even the per-sample vectors and r × r matrices exceed the budget, or,
        given the dense rows' ``n_features``, a block row of features recomputed per block)."""
        n_pre = presolve_rows(m, r) if is_numpy(ctx.xp) else None  # "auto" presolves on NumPy
        return feature_plan(m, r, ctx.budget_bytes - reserved, itemsize=itemsize,
                            n_presolve=n_pre or 0, copied_rows=self._copied_feature_rows(m),
                            who=f"{type(self).__name__} on {m:,} samples",
                            n_features=n_features)

    def _copied_feature_rows(self, m):
        """Rows of copies of the held features that a fit of ``m`` rows makes beside them (0;
        :class:`svmgpu.SVC`'s one-vs-one pairs gather their blocks)."""
        return 0

    def _lowrank_factor(self, X, kernel, ctx, sample_weight=None):
        """The low-rank factor of the training kernel (``rank_`` landmarks; Nyström draws them
        among the rows of positive sample weight) and the bytes its row blocks may use
        (:meth:`_feature_plan`); the factor holds ``P`` when it fits the budget."""
        rank = self._effective_rank(X.shape[0], ctx)
        if rank is None:  # pragma: no cover - callers take the full-kernel form instead
            raise ValueError("the full kernel (rank=None) has no low-rank factor")
        if is_dask_collection(X):  # landmarks gathered once; features stay on the workers
            if self.lowrank != "nystrom":
                raise ValueError(f"lowrank={self.lowrank!r} does not take Dask input (its "
                                 "columns are built one after another over all rows); use "
                                 "lowrank='nystrom'")
            factor = dask_data.landmark_factor(
                X, kernel, rank, random_state=self.random_state, sample_weight=sample_weight,
                device=ctx.device)
            self.n_landmarks_ = int(factor.rank)
            return factor, ctx.budget_bytes
        in_memory, blocks, store = self._plan_held_features(
            X, rank, ctx, kernel=kernel if self.lowrank == "nystrom" else None)
        if self.lowrank == "nystrom":
            cand = None if sample_weight is None else ctx.xp.nonzero(sample_weight > 0)[0]
            factor = nystrom(X, kernel, rank, random_state=self.random_state, candidates=cand,
                             keep_features=in_memory, memory_budget=blocks,
                             feature_dtype=store)
        elif in_memory:
            factor = pivoted_cholesky(X, kernel, rank, tol=getattr(self, "lowrank_tol", 1e-3),
                                      memory_budget=blocks)
        else:
            raise MemoryError(
                f"the pivoted-Cholesky features ({X.shape[0]:,} x {rank}) do not fit the memory "
                f"budget ({format_bytes(ctx.budget_bytes)}) and are built column by column, so "
                "they cannot be recomputed per block: use lowrank='nystrom', lower the rank, "
                "or raise memory_budget")
        self.n_landmarks_ = int(factor.rank)
        if self.n_landmarks_ < rank:
            self._log.info("rank %d: %d landmarks kept; the other %d are numerically dependent "
                           "on them (Cholesky pivots below 100·eps of %s of the largest)", rank,
                           self.n_landmarks_, rank - self.n_landmarks_,
                           numpy_dtype(X.dtype).name)
        return factor, blocks

    def _plan_held_features(self, X, r, ctx, *, kernel):
        """``(in_memory, block_budget, store)``: :meth:`_feature_plan` of the features of X's
        rows on r columns of ``kernel``, and the namespace's float32 where they are held in it,
        computed in float64 (``_float32_features``, ``dtype=None``, float64 X, a
        translation-invariant kernel, whose values and features are at most 1, and
        :data:`FLOAT32_FEATURES_BYTES`), else None (X's dtype; ``kernel`` None: always)."""
        store = ctx.xp.float32 if kernel is not None and kernel.translation_invariant \
            and self._float32_features and self.dtype is None \
            and numpy_dtype(X.dtype).name == "float64" \
            and X.shape[0] * r * 8 >= FLOAT32_FEATURES_BYTES else None
        in_memory, blocks = self._feature_plan(
            X.shape[0], r, ctx,
            itemsize=numpy_dtype(X.dtype if store is None else store).itemsize)
        if store is not None and in_memory:
            self._log.info("features stored in float32, computed in float64: %s of float64 "
                           "features >= FLOAT32_FEATURES_BYTES=%s",
                           format_bytes(X.shape[0] * r * 8), format_bytes(FLOAT32_FEATURES_BYTES))
        return in_memory, blocks, store if in_memory else None

    def _prepare_fit(self, X, *, ctx, sample_weight):
        return None

    def _convergence_advice(self):
        """What to change when a solver stops at ``max_iter`` (None: the estimator warns
        itself, or its solvers always converge)."""
        return None

    def _check_fitted_finite(self):
        """Raise instead of keeping a model whose coefficients are NaN or infinite (it would
        predict one class, or NaN, for every input)."""
        ctx = self._ctx
        xp = ctx.xp
        arrays = [a for a in _floating_arrays(self.models_, xp=xp)  # those on the fit device
                  if not isinstance(a, np.generic) and array_device(a) == ctx.device]
        if not _all_finite(arrays, xp=xp):
            raise FloatingPointError(
                f"{type(self).__name__}: the fitted coefficients contain NaN or infinity: "
                f"{_OVERFLOW_ADVICE}")

    def _warn_if_not_converged(self):
        """One ``ConvergenceWarning`` when a binary problem's solver stopped without meeting its
        stopping rule: the model is then not the optimum the parameters define."""
        converged = np.asarray(getattr(self, "converged_", True), dtype=bool).reshape(-1)
        bad = np.flatnonzero(~converged)  # host flags
        advice = self._convergence_advice() if bad.size else None
        if advice is None:
            return
        n_iter = np.asarray(self.n_iter_).reshape(-1)
        which = "the problem" if converged.size == 1 else \
            f"{bad.size} of {converged.size} binary problems"
        iters = ", ".join(str(int(n_iter[k])) for k in bad[:5])
        limit = getattr(self, "max_iter", None)
        limit = "" if limit is None else f", max_iter={limit}"
        warnings.warn(
            f"{type(self).__name__}: the solver did not converge on {which} (stopped after "
            f"{iters} iterations{limit}); the model is not the optimum of its objective. "
            f"{advice}",
            ConvergenceWarning, stacklevel=caller_stacklevel(),
        )

    def _prepare_predict(self, X, *, ctx):
        return X

    def _union_support(self, supports):
        """The sorted union of the binary problems' support rows (int64 indices into the
        training rows), or None when a problem's is unknown."""
        if any(s is None for s in supports):
            return None
        xp = self._ctx.xp
        each = [xp.astype(s, xp.int64) for s in supports]
        return each[0] if len(each) == 1 else sorted_unique(xp.concat(each), xp=xp)

    def _nonzero_loss_rows(self, loss, y, f, sample_weight, rows=None):
        """The training rows where ``ψ'(rᵢ) ≠ 0`` at the decision values ``f`` (residuals
        ``1 − yᵢfᵢ``, or ``yᵢ − fᵢ`` for regression) and the weight is positive: the points
        with a nonzero representer weight, SVC's support vectors (for the margin losses, the
        points with a nonzero loss; a truncated loss's flat part holds none). Indices into the
        problem's ``rows`` when given."""
        xp = self._ctx.xp
        y = xp.astype(y, xp.float64)
        task = self._task
        r = 1.0 - y * f if task == "classification" else y - f
        mask = loss.grad(r, xp=xp) != 0
        if sample_weight is not None:
            mask = mask & (sample_weight > 0)
        idx = xp.nonzero(mask)[0]
        return idx if rows is None else xp.take(rows, idx)

    # ---------------------------------------------------------------- devices
    def to_device(self, device):
        """Move the fitted arrays to ``device``; predictions then run there. Returns self."""
        check_is_fitted(self)
        device = get_device(device)
        for k, v in list(vars(self).items()):
            if k.endswith("_") and not k.startswith("__"):
                setattr(self, k, tree_to_device(v, device))
        self.device_ = str(device)
        self._device = device
        return self

    def __getstate__(self):
        state = dict(vars(self))
        for k, v in state.items():
            if k.endswith("_") and not k.startswith("__"):
                state[k] = tree_to_device(v, "cpu")
        if "device_" in state:
            state["device_"] = "cpu"
        for k in self._transient_attributes:  # rebuilt on the next fit / predict
            state.pop(k, None)
        return state

    def __setstate__(self, state):
        vars(self).update(state)

    @staticmethod
    def _to_caller(out, X_in):
        """Return ``out`` in the array kind of the caller's ``X_in`` (host input: NumPy out,
        the one device-to-host copy of a prediction)."""
        if is_device_array(X_in):
            return asarray(out, device=array_device(X_in))
        return to_host(out, why="the caller passed host data and gets NumPy back")


def _weighted_mean(v, sample_weight, *, xp) -> float:
    """The (weighted) mean of a device array ``v``, read as a Python float."""
    if sample_weight is None:
        return float(xp.mean(v))
    w = xp.astype(to_device(sample_weight, array_device(v)), xp.float64)
    return float(xp.sum(w * v) / xp.sum(w))


def _all_finite(arrays, *, xp) -> bool:
    """Whether every array is free of NaN and infinity (one device read for all of them)."""
    ok = None
    for a in arrays:
        f = xp.all(xp.isfinite(a))
        ok = f if ok is None else ok & f
    return True if ok is None else bool(ok)


_OVERFLOW_ADVICE = ("the kernel values or the solver overflowed (large inputs, a large gamma, or "
                    "a high polynomial degree, especially in float32): scale the features (e.g. "
                    "StandardScaler), lower gamma or degree, or use dtype='float64'")


def _check_decision_finite(est, scores, *, xp):
    """Raise instead of predicting from NaN or infinite decision values."""
    if not _all_finite(scores, xp=xp):
        raise FloatingPointError(
            f"{type(est).__name__}: decision values are NaN or infinite for some inputs, so no "
            f"prediction is made: {_OVERFLOW_ADVICE}")


def _floating_arrays(tree, *, xp):
    """The floating-point device arrays in a fitted model (nested dicts and lists)."""
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in _floating_arrays(v, xp=xp)]
    if isinstance(tree, (list, tuple)):
        return [a for v in tree for a in _floating_arrays(v, xp=xp)]
    if array_api_compat.is_array_api_obj(tree) and hasattr(tree, "dtype") \
            and array_api_compat.array_namespace(tree).isdtype(tree.dtype, "real floating"):
        return [tree]
    return []


class SVCBase(ClassifierMixin, SVMBase):
    """Classifier base: label encoding and one-vs-rest / one-vs-one over a binary solver.

    Subclasses add the parameter ``multi_class`` ("ovr" or "ovo") to their ``__init__``.
    Fitted attributes: ``classes_``, ``models_`` (one dict per binary problem),
    ``pairs_`` (for one-vs-one), ``device_``.
    """

    _task = "classification"
    _default_multi_class = "ovr"

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
            NumPy (validated by scikit-learn) or CuPy.
        y : array of shape (n_samples,)
            Class labels (any hashable values; at least two classes).
        sample_weight : array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        X, ctx = check_X(self, X, reset=True)
        xp, self._ctx = ctx.xp, ctx  # the fit's context, for the hooks (never saved)
        multi = getattr(self, "multi_class", self._default_multi_class)
        if self._dask_fit:  # labels and weights stay chunked like X, on the workers
            if self.probability:
                raise ValueError("probability=True does not take Dask input yet (its internal "
                                 "cross-validation is in-memory); fit without it")
            classes, y_idx = dask_data.encode_labels(y, X)
            if self._dask_labels_on_client:  # (m class indices and weights: small)
                y_idx = asarray(y_idx.compute(), device=ctx.device)
            elif multi == "ovo" and classes.shape[0] > 2:
                raise ValueError(
                    "multi_class='ovo' does not take Dask input yet; use multi_class='ovr'"
                    if "multi_class" in self.get_params() else
                    f"{type(self).__name__}'s one-vs-one problems do not take Dask input with "
                    f"more than two classes yet ({classes.shape[0]} here); fit on X.compute()")
            sw = user_sw = dask_data.sample_weights(sample_weight, X)
            if self._dask_labels_on_client and sw is not None:
                sw = user_sw = asarray(sw.compute(), device=ctx.device, dtype=X.dtype)
        else:
            y = check_y(y, X, ctx)
            classes, y_idx = self._encode_labels(y, xp=xp)
            sw = user_sw = check_sample_weight(sample_weight, X, ctx=ctx)
            if not is_device_array(y_idx):
                y_idx = to_device(y_idx, ctx.device)  # the labels' one upload
        self.classes_ = classes
        n_classes = int(classes.shape[0])
        if self.probability:  # Platt's folds need 2 samples a class: said before the fit
            n_folds = check_platt_classes(fetch_scalars(
                *[xp.count_nonzero(y_idx == c) for c in range(n_classes)], xp=xp), classes)
        sw = self._with_class_weight(sw, y_idx, ctx=ctx, X=X)
        self._check_loss_scale(sw, X.shape[0], xp=xp)
        self._y_idx = y_idx  # (each training row's class index, for the hooks: never saved)
        shared = self._phase("features", self._prepare_fit, X, ctx=ctx, sample_weight=sw,
                             detail={"rows": X.shape[0], "columns": X.shape[1]})

        pairs = class_pairs(n_classes, multi)
        self.models_ = self._fit_problems(
            shared, binary_problems(y_idx, n_classes, pairs, sw, xp=xp, dtype=X.dtype,
                                    dask=is_dask_collection(y_idx)),
            1 if n_classes == 2 else len(pairs) if pairs else n_classes)
        self.pairs_ = pairs
        self._after_fit(shared)
        del self._y_idx
        support = getattr(self, "support_", None)
        if support is not None and not isinstance(support, list):  # (a path per class: its own)
            if is_dask_collection(y_idx):
                self.n_support_ = dask_data.class_counts(y_idx[to_numpy(support)], n_classes)
            else:  # (the support vectors' class indices, where the fit ran)
                sup = xp.take(y_idx, support)
                self.n_support_ = host_array(fetch_scalars(
                    *[xp.count_nonzero(sup == c) for c in range(n_classes)], xp=xp), "int64")
        self._check_fitted_finite()
        self._warn_if_not_converged()
        if self.probability:
            self._phase("probability", fit_platt, self, X, y_idx, user_sw, n_folds=n_folds,
                        ctx=ctx)
        return self

    def _probability_enabled(self):
        if not self.probability:
            raise AttributeError(f"predict_proba is not available when probability=False; "
                                 f"fit {type(self).__name__}(probability=True)")
        return True

    @available_if(_probability_enabled)
    def predict_proba(self, X):
        """Class probabilities, array of shape (n_samples, n_classes) in the caller's kind,
        columns in the order of ``classes_``: Platt's sigmoid of each binary problem's
        decision value (``probA_``, ``probB_``, fitted on held-out decision values), coupled
        pairwise for one-vs-one (Wu, Lin and Weng 2004) or normalised for one-vs-rest.

        As in LIBSVM and scikit-learn's ``SVC``, ``argmax`` of the probabilities may differ
        from ``predict`` (the decision values) for points near the decision boundary."""
        if not hasattr(self, "probA_"):
            raise NotFittedError(f"this {type(self).__name__} was not fitted with "
                                 f"probability=True; call fit first")
        if is_dask_collection(X):
            return dask_data.map_predict(self, "predict_proba", check_X(self, X, reset=False)[0])
        scores, xp = self._raw_decision(X)
        P = class_probabilities(scores, self.probA_.tolist(), self.probB_.tolist(),
                                pairs=self.pairs_, n_classes=int(self.classes_.shape[0]), xp=xp)
        return self._to_caller(P, X)

    @available_if(_probability_enabled)
    def predict_log_proba(self, X):
        """The logarithm of :meth:`predict_proba`."""
        P = self.predict_proba(X)
        return array_api_compat.array_namespace(P).log(P)

    def _with_class_weight(self, sw, y_idx, *, ctx, X):
        """The sample weights times ``class_weight`` of each sample's class (LIBSVM's
        per-class C): "balanced" gives class c the weight ``n / (k · n_c)``; a dict maps class
        labels to positive weights (missing classes: 1). ``class_weight_`` keeps them."""
        cw = self.class_weight
        if cw is None:
            return sw
        xp = ctx.xp
        k = int(self.classes_.shape[0])
        if isinstance(cw, str) and cw == "balanced":
            counts = dask_data.class_counts(y_idx, k).tolist() if is_dask_collection(y_idx) else \
                fetch_scalars(*[xp.count_nonzero(y_idx == c) for c in range(k)], xp=xp)
            n = float(sum(counts))
            weights = [n / (k * c) for c in counts]
        elif isinstance(cw, dict):
            labels = (to_host(self.classes_, why="class_weight keys are matched to the classes "
                                                 "on the host")
                      if is_device_array(self.classes_) else self.classes_).tolist()
            unknown = [key for key in cw if key not in labels]
            if unknown:
                raise ValueError(f"class_weight names classes {unknown} that are not in y "
                                 f"(classes: {labels})")
            weights = [cw.get(lab, 1.0) for lab in labels]
            for lab, w in zip(labels, weights):
                if isinstance(w, bool) or not isinstance(w, Real) or not (w >= 0) \
                        or not math.isfinite(w):
                    raise ValueError(f"class_weight[{lab!r}] must be a non-negative number, "
                                     f"got {w!r}")
        else:
            raise ValueError(f"class_weight must be None, 'balanced' or a dict of class: "
                             f"weight, got {cw!r}")
        self.class_weight_ = host_array(weights, "float64")
        if is_dask_collection(y_idx):
            w = dask_data.per_class(y_idx, self.class_weight_, X.dtype)
            return w if sw is None else sw * w
        per_class = asarray(self.class_weight_, device=ctx.device, dtype=X.dtype)
        w = xp.take(per_class, y_idx)
        return w if sw is None else sw * w

    def _class_counts(self, y, rows):
        """How many of the training rows ``rows`` fall in each class (``n_support_``), where
        the labels ``y`` (as given to ``fit``) live."""
        k = int(self.classes_.shape[0])
        if is_device_array(y):
            xp = self._ctx.xp
            _, y_idx = self._encode_labels(to_device(y, self._device), xp=xp)
            sub = xp.take(y_idx, rows)
            return np.array([int(xp.count_nonzero(sub == c)) for c in range(k)])
        _, y_idx = np.unique(np.asarray(y).reshape(-1), return_inverse=True)
        host_rows = to_host(rows, why="host labels are counted on the host")
        return np.bincount(y_idx[host_rows], minlength=k)

    @staticmethod
    def _encode_labels(y, *, xp):
        """``(classes, y_idx)``: sorted distinct labels and each sample's class index.

        Host labels (any hashable values) are encoded with NumPy; device labels where they
        live (``unique_inverse``). Numeric labels, on the host too, are checked here as
        scikit-learn's ``check_classification_targets`` would (finite and whole), the others
        by it (which took 0.1 ms of iris's 3 ms fit for its general checks)."""
        host = not is_device_array(y)
        if host and y.dtype.kind not in "biuf":  # (strings, objects: scikit-learn's checks)
            check_classification_targets(y)
        else:
            yx = array_api_compat.array_namespace(y) if host else xp
            if yx.isdtype(y.dtype, "real floating"):
                if not bool(yx.all(yx.isfinite(y))):
                    raise ValueError("Input y contains NaN or infinity")
                if not bool(yx.all(y == yx.round(y))):
                    raise ValueError(
                        "Unknown label type: continuous. A classifier needs discrete labels; "
                        "use a regressor for real targets"
                    )
            elif not yx.isdtype(y.dtype, ("integral", "bool")):
                raise ValueError(f"Unknown label type: y has dtype {y.dtype}")
        if host:
            classes, y_idx = np.unique(y, return_inverse=True)
        else:
            classes, y_idx = xp.unique_inverse(y)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y has only one class ({classes[0]!r}); a classifier needs at least two classes"
            )
        return classes, y_idx

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y`` (weighted by ``sample_weight``).

        Host input: scikit-learn's ``accuracy_score``. Device input is scored where it lives
        (one scalar read)."""
        if not is_device_array(X):
            return super().score(X, y, sample_weight=sample_weight)
        pred = self.predict(X)
        xp = array_api_compat.array_namespace(pred)
        hit = xp.astype(pred == to_device(y, array_device(pred)), xp.float64)
        return _weighted_mean(hit, sample_weight, xp=xp)

    def _after_fit(self, shared):
        """Hook: set fitted attributes derived from ``self.models_`` (coef_, n_iter_, ...)."""

    def _raw_decision(self, X):
        X_dev, ctx = check_X(self, X, reset=False)
        feats = self._prepare_predict(X_dev, ctx=ctx)
        scores = [self._decision_binary(m, feats, xp=ctx.xp) for m in self.models_]
        _check_decision_finite(self, scores, xp=ctx.xp)
        return scores, ctx.xp

    def decision_function(self, X):
        """Decision values, in the caller's array kind.

        Returns
        -------
        array of shape (n_samples,) for two classes (positive means ``classes_[1]``), else
        (n_samples, n_classes): the one-vs-rest scores, or for one-vs-one the votes plus the
        summed pairwise confidences squashed into (−⅓, ⅓) (scikit-learn's "ovr" shape of
        one-vs-one), so that ``argmax`` is the predicted class.
        """
        if is_dask_collection(X):
            return dask_data.map_predict(self, "decision_function", check_X(self, X, reset=False)[0])
        scores, xp = self._raw_decision(X)
        if len(scores) == 1:
            out = scores[0]
        elif self.pairs_ is None:
            out = xp.stack(scores, axis=1)
        else:
            out = ovo_votes(scores, self.pairs_, int(self.classes_.shape[0]), xp=xp)
        return self._to_caller(out, X)

    def predict(self, X):
        """Predicted class labels, array of shape (n_samples,) in the caller's kind
        (labels that are not numbers are returned as a NumPy array; a Dask array for Dask
        input, computed chunk by chunk on the workers)."""
        if is_dask_collection(X):
            return dask_data.map_predict(self, "predict", check_X(self, X, reset=False)[0])
        scores, xp = self._raw_decision(X)
        if len(scores) == 1:
            idx = xp.astype(scores[0] > 0, xp.int64)
        else:
            S = xp.stack(scores, axis=1) if self.pairs_ is None else \
                ovo_votes(scores, self.pairs_, int(self.classes_.shape[0]), xp=xp)
            idx = xp.argmax(S, axis=1)
        return self._labels_of(idx, X, xp=xp)

    def _labels_of(self, idx, X, *, xp):
        """The labels of the class indices ``idx``, in the caller's kind (see :meth:`predict`)."""
        if is_device_array(self.classes_):  # classes live with the model: map on the device
            return self._to_caller(xp.take(self.classes_, idx), X)
        labels = self.classes_[to_host(idx, why="host labels (any hashable values) are "
                                                "mapped on the host")]
        if is_device_array(X) and labels.dtype.kind in "biuf":
            return asarray(labels, device=array_device(X))
        return labels


class SVRBase(RegressorMixin, SVMBase):
    """Regressor base: real targets, one model in ``models_[0]``."""

    _task = "regression"

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit the regressor.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
        y : array of shape (n_samples,)
            Finite real targets.
        sample_weight : array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        X, ctx = check_X(self, X, reset=True)
        xp, self._ctx = ctx.xp, ctx  # the fit's context, for the hooks (never saved)
        if self._dask_fit:  # targets and weights stay chunked like X, on the workers
            y = dask_data.regression_targets(y, X)
            sw = dask_data.sample_weights(sample_weight, X)
            return self._fit_regression(X, y.astype(X.dtype), sw, ctx=ctx)
        y = check_y(y, X, ctx)
        if is_device_array(y):
            if not xp.isdtype(y.dtype, ("real floating", "integral")):
                raise ValueError(f"regression targets y must be numbers, got dtype {y.dtype}")
            finite = bool(xp.all(xp.isfinite(xp.astype(y, xp.float64))))
        else:
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"regression targets y must be numbers: {exc}") from None
            finite = bool(np.all(np.isfinite(y)))
        if not finite:
            raise ValueError("regression targets y contain NaN or infinity; remove those samples")
        sw = check_sample_weight(sample_weight, X, ctx=ctx)
        self._check_loss_scale(sw, X.shape[0], xp=xp)
        return self._fit_regression(X, asarray(y, device=ctx.device, dtype=X.dtype), sw, ctx=ctx)

    def _fit_regression(self, X, y, sw, *, ctx):
        """The one model of a regressor from validated ``X``, targets ``y`` and weights."""
        shared = self._phase("features", self._prepare_fit, X, ctx=ctx, sample_weight=sw,
                             detail={"rows": X.shape[0], "columns": X.shape[1]})
        self.models_ = self._fit_problems(shared, [(None, y, sw)], 1)
        self._after_fit(shared)
        if getattr(self, "support_", None) is not None:
            self.n_support_ = host_array([self.support_.shape[0]], "int64")
        self._check_fitted_finite()
        self._warn_if_not_converged()
        return self

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R² of ``predict(X)`` (weighted by ``sample_weight``).

        Host input: scikit-learn's ``r2_score``. Device input is scored where it lives."""
        if not is_device_array(X):
            return super().score(X, y, sample_weight=sample_weight)
        pred = self.predict(X)
        xp = array_api_compat.array_namespace(pred)
        y = xp.astype(to_device(y, array_device(pred)), xp.float64)
        pred = xp.astype(pred, xp.float64)
        mean = _weighted_mean(y, sample_weight, xp=xp)
        ss_res = _weighted_mean((y - pred) ** 2, sample_weight, xp=xp)
        ss_tot = _weighted_mean((y - mean) ** 2, sample_weight, xp=xp)
        if ss_tot == 0.0:
            return 1.0 if ss_res == 0.0 else 0.0
        return 1.0 - ss_res / ss_tot

    def _after_fit(self, shared):
        """Hook: set fitted attributes derived from ``self.models_``."""

    def predict(self, X):
        """Predictions, array of shape (n_samples,) in the caller's array kind (a Dask array
        for Dask input)."""
        if is_dask_collection(X):
            return dask_data.map_predict(self, "predict", check_X(self, X, reset=False)[0])
        X_dev, ctx = check_X(self, X, reset=False)
        feats = self._prepare_predict(X_dev, ctx=ctx)
        out = self._decision_binary(self.models_[0], feats, xp=ctx.xp)
        _check_decision_finite(self, [out], xp=ctx.xp)
        return self._to_caller(out, X)


def _joint(out):
    """The log fields of a phase that returned several models solved at once (SVC's chunk of
    one-vs-one pairs: one Newton iteration for all): their largest ``n_iter`` and whether all
    converged; {} for anything else."""
    if not isinstance(out, list) or not out or not all(isinstance(o, dict) for o in out):
        return {}
    its = [o.get("n_iter") for o in out]
    conv = [o.get("converged") for o in out]
    return {"n_iter": max(its) if all(isinstance(t, int) for t in its) else None,
            "converged": all(conv) if all(isinstance(c, bool) for c in conv) else None}
