"""Kernel objects.

Each kernel evaluates blocks ``K(X, Z)`` and diagonals ``k(x, x)`` for arrays of any
array-API namespace. Rows are first *prepared* (centred, squared norms attached), so that a
large set that is used many times (the training set, the landmarks) is prepared once.

Translation-invariant kernels (RBF, Laplacian) centre both sides on a common point before
using the expansion ``‖x − z‖² = ‖x‖² + ‖z‖² − 2xᵀz``: the expansion loses
``eps · (‖x‖² + ‖z‖²)`` absolutely, which for float32 data far from the origin would swamp the
distance itself. Squared distances are clipped at zero.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

from svmgpu._log import caller_stacklevel
from svmgpu.backend import (
    check_positive,
    column_moments,
    column_range,
    exp_neg_clipped_inplace,
    fetch_scalars,
    get_namespace,
    is_sparse,
    matmul,
    native_device,
    numpy_dtype,
    power_inplace,
    row_sq_norms,
    sparse_product_t,
)


@dataclass(frozen=True)
class Prepared:
    """Rows prepared for kernel evaluation.

    Attributes
    ----------
    data : array of shape (n, d) or (n, d + 2)
        The rows, centred for translation-invariant kernels; for RBF the augmented rows
        ``[x − c, ‖x − c‖², 1]`` so that a block's exponent is a single matrix product.
    center : array of shape (d,) or None
        The common centre ``c`` (None for kernels that are not translation-invariant).
    """

    data: object
    center: object = None

    @property
    def n(self) -> int:
        return int(self.data.shape[0])

    def rows(self, start: int, stop: int) -> Prepared:
        """The prepared rows ``start:stop`` (a view)."""
        return Prepared(self.data[start:stop, ...], self.center)

    def take(self, indices, *, xp) -> Prepared:
        """The prepared rows at ``indices`` (a copy)."""
        return Prepared(xp.take(self.data, indices, axis=0), self.center)


class Kernel:
    """Base class: subclasses implement ``_evaluate`` and ``diag``."""

    name = "kernel"
    translation_invariant = False

    def _param_names(self):
        return ()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._param_names())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self._param_names()
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + tuple(getattr(self, k) for k in self._param_names()))

    def get_params(self) -> dict:
        """The kernel's parameters as a dict."""
        return {k: getattr(self, k) for k in self._param_names()}

    # -- preparation ---------------------------------------------------------------
    def center_of(self, Z, *, xp):
        """The centre used for ``Z`` and anything evaluated against it (mean of the rows);
        None for a kernel that is not translation-invariant, or sparse ``Z`` (sparse rows are
        not centred, which would densify them: :meth:`sparse_block`)."""
        if not self.translation_invariant or is_sparse(Z):
            return None
        if Z.shape[0] == 0:
            return xp.zeros((Z.shape[1],), dtype=Z.dtype, device=getattr(Z, "device", None))
        return xp.mean(Z, axis=0)

    def prepare(self, A, center=None, *, xp=None) -> Prepared:
        """Prepare rows ``A`` of shape (n, d) against ``center`` (see :meth:`center_of`)."""
        xp = xp or get_namespace(A)
        if self.translation_invariant and center is not None:
            A = A - center
        return Prepared(self._augment(A, xp=xp), center)

    def _augment(self, A, *, xp):
        return A

    # -- evaluation ----------------------------------------------------------------
    def evaluate(self, px: Prepared, pz: Prepared, *, xp, out=None):
        """``K`` of shape (px.n, pz.n) for prepared rows; written into ``out`` when given
        (NumPy; other namespaces return a new array)."""
        return self._evaluate(px.data, pz.data, xp=xp, out=out)

    def against(self, pz: Prepared, *, xp):
        """A function ``f(px, out=None, start=0)`` returning ``evaluate(px, pz[start:],
        out=out)`` (pz's rows from ``start``), with the work that depends on ``pz`` alone done
        once (for many row blocks against the same rows). ``out`` may have a narrower dtype
        than the rows (float64 rows, float32 values): the values are then computed in the rows'
        dtype and cast into it (:meth:`_from_side_narrow`)."""
        side = self._side(pz.data, xp=xp)

        def f(px, out=None, start=0):
            if out is not None and out.dtype != px.data.dtype:
                return self._from_side_narrow(px.data, side[start:, ...], xp=xp, out=out)
            return self._from_side(px.data, side[start:, ...], xp=xp, out=out)

        return f

    def _side(self, B, *, xp):
        """The column side of prepared rows ``B`` (rows in B's order; :meth:`against`)."""
        return B

    def _from_side(self, A, side, *, xp, out):
        """``K`` of prepared rows ``A`` against the rows of a column side (:meth:`_side`)."""
        return self._evaluate(A, side, xp=xp, out=out)

    def _from_side_narrow(self, A, side, *, xp, out):
        """:meth:`_from_side` into ``out`` of a narrower dtype than ``A``'s: computed in A's
        dtype and cast (kernels whose last step is cheap; :class:`RBF` narrows before it)."""
        out[...] = xp.astype(self._from_side(A, side, xp=xp, out=None), out.dtype)
        return out

    def block(self, X, Z):
        """The kernel block ``K(X, Z)``.

        Parameters
        ----------
        X : array of shape (n_x, n_features)
        Z : array of shape (n_z, n_features)

        Returns
        -------
        K : array of shape (n_x, n_z), same namespace, device and dtype as ``X``.
        """
        xp = get_namespace(X, Z)
        if is_sparse(X):
            return self.sparse_block(X, Z, xp=xp)
        if is_sparse(Z):
            return self.sparse_block(Z, X, xp=xp).T.copy()
        c = self.center_of(Z, xp=xp)
        return self.evaluate(self.prepare(X, c, xp=xp), self.prepare(Z, c, xp=xp), xp=xp)

    __call__ = block

    def sparse_block(self, X, Z, *, xp, sq_z=None, out=None):
        """``K(X, Z)`` for sparse rows ``X`` (SciPy CSR) and dense or sparse rows ``Z``, from
        the product ``X Zᵀ`` (and the squared row norms, for RBF: ``sq_z`` may be passed once
        for many blocks), without densifying X or Z. Unlike :meth:`block`, the rows are not
        centred (a centre would make them dense); sparse data sit near the origin anyway."""
        K = self._from_product(sparse_product_t(X, Z), X, Z, xp=xp, sq_z=sq_z)
        if out is not None:
            out[...] = K
            return out
        return K

    def _from_product(self, G, X, Z, *, xp, sq_z):
        raise TypeError(f"the {self.name!r} kernel does not take sparse input: use 'rbf', "
                        "'poly' or 'linear', or pass X.toarray()")

    def diag(self, X):
        """``k(x_i, x_i)`` for each row, array of shape (n,)."""
        raise NotImplementedError  # pragma: no cover - every concrete kernel overrides it

    def feature_dimension(self, n_features):
        """The dimension of the kernel's feature space on ``n_features`` features, where it is
        finite: an upper bound on the rank of every kernel matrix of such rows (None: no finite
        bound, as for the RBF and Laplacian kernels)."""
        return None

    def negligible_distance(self, threshold):
        """A distance ``r`` with ``|k(x, z)| <= threshold`` whenever ``‖x − z‖₂ >= r``.

        None for kernels that do not decay with distance (linear, polynomial). Used to skip
        row blocks that lie entirely beyond ``r`` (see :class:`RowPartition`).

        Raises
        ------
        ValueError
            When ``threshold`` is not in (0, 1].
        """
        _check_threshold(threshold)
        return None

    def _evaluate(self, A, B, *, xp, out):
        raise NotImplementedError  # pragma: no cover


def _check_threshold(threshold):
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
    return float(threshold)


def _gram(A, B, *, xp, out):
    return matmul(A, xp.matrix_transpose(B), xp=xp, out=out)


class Linear(Kernel):
    """Linear kernel ``k(x, z) = xᵀz``."""

    name = "linear"

    def _evaluate(self, A, B, *, xp, out):
        return _gram(A, B, xp=xp, out=out)

    def _from_product(self, G, X, Z, *, xp, sq_z):
        return G

    def diag(self, X):
        return row_sq_norms(X, xp=get_namespace(X))

    def feature_dimension(self, n_features):
        """``n_features``: the features themselves."""
        return int(n_features)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, z) = (γ xᵀz + coef0)^degree``."""

    name = "poly"

    def __init__(self, degree=3, gamma=1.0, coef0=0.0):
        if isinstance(degree, bool) or not isinstance(degree, Integral) or degree < 1:
            raise ValueError(f"degree must be an integer >= 1, got {degree!r}")
        self.degree = int(degree)
        self.gamma = check_positive("gamma", gamma)
        if isinstance(coef0, bool) or not isinstance(coef0, Real) or not math.isfinite(coef0):
            raise ValueError(f"coef0 must be a finite number, got {coef0!r}")
        if coef0 < 0:  # (the constant's power alone, coef0^degree · 11ᵀ for degree odd, or
            # the cross term 2 γ coef0 XXᵀ for degree 2, is negative definite on its span)
            raise ValueError(
                f"coef0 must be >= 0 for the 'poly' kernel, got {coef0!r}: with coef0 < 0, "
                f"(gamma * x'z + coef0)^degree is not a positive semi-definite kernel, and "
                "svmgpu's solvers factor its matrices (scikit-learn's SVC accepts it without a "
                "guarantee); use coef0 >= 0")
        self.coef0 = float(coef0)

    def _param_names(self):
        return ("degree", "gamma", "coef0")

    def _evaluate(self, A, B, *, xp, out):
        G = _gram(A, B, xp=xp, out=out)
        G *= self.gamma
        G += self.coef0
        return power_inplace(G, self.degree, xp=xp)

    def _from_product(self, G, X, Z, *, xp, sq_z):
        G *= self.gamma
        G += self.coef0
        return power_inplace(G, self.degree, xp=xp)

    def diag(self, X):
        return (self.gamma * row_sq_norms(X, xp=get_namespace(X)) + self.coef0) ** self.degree

    def feature_dimension(self, n_features):
        """The monomials of the features: ``C(d + degree, degree)`` of degree at most
        ``degree`` where ``coef0 != 0``, ``C(d + degree − 1, degree)`` of degree ``degree``
        exactly where ``coef0 == 0``."""
        d = int(n_features)
        return math.comb(d + self.degree - (self.coef0 == 0.0), self.degree)


class RBF(Kernel):
    """Gaussian kernel ``k(x, z) = exp(−γ ‖x − z‖²)``.

    A block's exponent is one matrix product of augmented rows
    ``[x − c, ‖x − c‖², 1] · [2γ(z − c), −γ, −γ‖z − c‖²]ᵀ``, clipped at 0 before ``exp``.
    """

    name = "rbf"
    translation_invariant = True

    def __init__(self, gamma=1.0):
        self.gamma = check_positive("gamma", gamma)

    def _param_names(self):
        return ("gamma",)

    def _augment(self, A, *, xp):
        n = A.shape[0]
        sq = xp.sum(A * A, axis=1, keepdims=True)
        ones = xp.ones((n, 1), dtype=A.dtype, device=getattr(A, "device", None))
        return xp.concat([A, sq, ones], axis=1)

    def _side(self, B, *, xp):
        """``[2γ(z − c), −γ, −γ‖z − c‖²]`` for augmented rows ``B``: (n_z, d + 2), its rows
        contiguous (a slice of rows is a product's operand without a copy)."""
        g = self.gamma
        d = B.shape[1] - 2
        return xp.concat([(2.0 * g) * B[:, :d], -g * B[:, d + 1 :], -g * B[:, d : d + 1]], axis=1)

    def _from_side(self, A, side, *, xp, out):
        return exp_neg_clipped_inplace(matmul(A, xp.matrix_transpose(side), xp=xp, out=out),
                                       xp=xp)

    def _from_side_narrow(self, A, side, *, xp, out):
        """The exponent in A's dtype (the expansion's cancellation needs it), cast into
        ``out`` and ``exp`` taken in out's dtype: float64 rows stored as float32 kernel values
        (ReducedSVC's features) cost a float32 ``exp``, 2.4 against 9.9 ns a value on an AVX2
        CPU (NumPy's float64 ``exp`` is vectorized only with AVX-512). The exponent's rounding
        to float32 (relative 2⁻²⁴) changes a value ``e⁻ᵃ`` by at most ``a e⁻ᵃ 2⁻²⁴ ≤ 2.2e-8``,
        below the half unit (6e-8) of float32's rounding of values near 1."""
        out[...] = xp.astype(matmul(A, xp.matrix_transpose(side), xp=xp), out.dtype)
        K = exp_neg_clipped_inplace(out, xp=xp)
        if K is not out:  # (namespaces without an in-place exp)
            out[...] = K
        return out

    def _evaluate(self, A, B, *, xp, out):
        return self._from_side(A, self._side(B, xp=xp), xp=xp, out=out)

    def _from_product(self, G, X, Z, *, xp, sq_z):
        # −γ‖x − z‖² = 2γ xᵀz − γ‖x‖² − γ‖z‖², clipped at 0 before exp
        sq_z = row_sq_norms(Z, xp=xp) if sq_z is None else sq_z
        G *= 2.0 * self.gamma
        G -= self.gamma * row_sq_norms(X, xp=xp)[:, None]
        G -= self.gamma * sq_z[None, :]
        return exp_neg_clipped_inplace(G, xp=xp)

    def diag(self, X):
        xp = get_namespace(X)
        return xp.ones((X.shape[0],), dtype=X.dtype, device=native_device(X))

    def negligible_distance(self, threshold):
        # exp(−γ r²) <= threshold  ⇔  r >= sqrt(−log(threshold) / γ)
        return math.sqrt(-math.log(_check_threshold(threshold)) / self.gamma)


class Laplacian(Kernel):
    """Laplacian kernel ``k(x, z) = exp(−γ ‖x − z‖₁)`` (as scikit-learn's laplacian_kernel)."""

    name = "laplacian"
    translation_invariant = True

    def __init__(self, gamma=1.0):
        self.gamma = check_positive("gamma", gamma)

    def _param_names(self):
        return ("gamma",)

    def _evaluate(self, A, B, *, xp, out):
        D = None
        for k in range(A.shape[1]):
            t = xp.abs(A[:, k : k + 1] - B[None, :, k])
            D = t if D is None else D + t
        if D is None:
            D = xp.zeros((A.shape[0], B.shape[0]), dtype=A.dtype, device=getattr(A, "device", None))
        D *= -self.gamma
        K = exp_neg_clipped_inplace(D, xp=xp)
        if out is not None:
            out[...] = K
            return out
        return K

    def diag(self, X):
        xp = get_namespace(X)
        return xp.ones((X.shape[0],), dtype=X.dtype, device=native_device(X))

    def negligible_distance(self, threshold):
        # ‖·‖₁ >= ‖·‖₂, so exp(−γ‖x − z‖₁) <= exp(−γ r) <= threshold when ‖x − z‖₂ >= r
        return -math.log(_check_threshold(threshold)) / self.gamma


#: Features get a warning with ``gamma="scale"`` where the largest standard deviation is more
#: than this factor above the lower quartile of the features' (nonzero) ones: the largest then
#: decides every kernel value. Against the smallest instead, one feature nonzero in a single
#: row of many was enough to warn (a border pixel inked faintly in one image of 60,000: its
#: standard deviation is its value / 245), though it decides no distance.
UNSCALED_RATIO = 1e4

#: Kernel names accepted by :func:`make_kernel`.
KERNELS = {"rbf": RBF, "poly": Polynomial, "linear": Linear, "laplacian": Laplacian}


def distance_range_problem(amax, d, finfo):
    """``"overflow"`` or ``"underflow"`` when the squared distances of d-dimensional rows whose
    largest absolute value is ``amax`` cannot be computed in the dtype of ``finfo`` (they
    pass its largest number, or fall below its smallest normal one: every RBF value would be
    1), else None (also for ``amax`` 0: all rows at the origin)."""
    if amax == 0.0:
        return None
    if not math.isfinite(amax) or amax > math.sqrt(float(finfo.max) / (4.0 * d)):
        return "overflow"
    if amax < math.sqrt(float(finfo.smallest_normal)) * 1e3:
        return "underflow"
    return None


def _check_representable_scale(X, *, xp):
    """Refuse, with the cause and a fix, features whose squared distances cannot be computed in
    X's dtype: they overflow (values near the largest float) or underflow to 0 (values so small
    that every kernel value would be exp(0) = 1, a constant model)."""
    fi = xp.finfo(X.dtype)
    d = X.shape[1]
    if is_sparse(X):
        data = X.data
        amax = float(xp.max(xp.abs(xp.asarray(data)))) if data.shape[0] else 0.0
    else:  # (max |x| without a temporary of X's size)
        hi, lo = fetch_scalars(xp.max(X), xp.min(X), xp=xp)
        amax = max(float(hi), -float(lo))
    name = numpy_dtype(X.dtype).name
    problem = distance_range_problem(amax, d, fi)
    if problem == "overflow":
        raise ValueError(
            f"X's largest absolute value is {amax:.3g}: its squared distances overflow {name} "
            "(so gamma='scale' cannot be computed); scale the features (e.g. "
            "sklearn.preprocessing.StandardScaler)")
    if problem == "underflow":
        raise ValueError(
            f"X's largest absolute value is {amax:.3g}: its squared distances underflow to 0 in "
            f"{name}, so every kernel value would be 1 (a constant model); scale the features "
            "(e.g. sklearn.preprocessing.StandardScaler)"
            + ("" if name == "float64" else " or use dtype='float64'"))


def _constant_as_zero(col_var, X, *, xp, keep=None):
    """Column variances with those of constant columns set to 0: a constant column's
    computed variance is rounding, ~(n · eps · mean)² along NumPy's axis-0 sums (a column of
    0.1 over 5,000 rows: 8e-29), not 0, and is no feature scale. Constant: its largest and
    smallest entries are equal (over the rows of ``keep``, a boolean (n,) array, where given:
    the rows of positive weight; :func:`~svmgpu.backend.column_range`)."""
    lo, hi = column_range(X, xp=xp, keep=keep)
    return xp.where(hi <= lo, xp.zeros_like(col_var), col_var)


def _resolve_gamma(gamma, X, *, xp, sample_weight=None):
    if isinstance(gamma, str):
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training data X to be resolved")
        d = X.shape[1]
        if gamma == "scale":
            if not X.shape[0]:
                return 1.0
            _check_representable_scale(X, xp=xp)
            # per feature and over all entries (weights count as repetitions: a weight of 2
            # counts a row twice)
            col, total = column_moments(X, None if sample_weight is None
                                        else xp.asarray(sample_weight), xp=xp)
            if is_sparse(X):
                col, total = xp.asarray(col), xp.asarray(total)
            else:
                col = _constant_as_zero(col, X, xp=xp, keep=None if sample_weight is None else
                                        xp.asarray(sample_weight) > 0)
            big, n_pos, var = fetch_scalars(xp.max(col), xp.count_nonzero(col > 0), total,
                                            xp=xp)
            small = math.inf
            if n_pos > 0:  # (the lower quartile of the nonzero variances)
                ordered = xp.sort(xp.where(col > 0, col, xp.full_like(col, math.inf)),
                                  stable=False)
                (small,) = fetch_scalars(ordered[(int(n_pos) - 1) // 4], xp=xp)
            if d > 1 and small < math.inf and big > UNSCALED_RATIO ** 2 * small:
                warnings.warn(
                    f"gamma='scale' on features whose scales differ by a factor "
                    f"{math.sqrt(big / small):.1e} (the largest standard deviation against the "
                    "lower quartile of the features'): the largest feature dominates every "
                    "distance and an RBF model may predict at chance; "
                    "standardize the features (e.g. sklearn.preprocessing.StandardScaler)",
                    UserWarning, stacklevel=caller_stacklevel())
            return 1.0 / (d * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / d
        raise ValueError(f"gamma must be 'scale', 'auto' or a positive number, got {gamma!r}")
    return check_positive("gamma", gamma)


def make_kernel(kernel="rbf", *, gamma="scale", degree=3, coef0=0.0, X=None,
                sample_weight=None) -> Kernel:
    """A :class:`Kernel` from a name (or a Kernel, returned as is).

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel
    gamma : "scale", "auto" or float
        As in scikit-learn: ``"scale"`` is ``1 / (n_features · X.var())``, ``"auto"`` is
        ``1 / n_features``. Ignored by the linear kernel.
    degree, coef0 : parameters of the polynomial kernel.
    X : array of shape (n_samples, n_features), optional
        Training data, needed for ``gamma="scale"`` or ``"auto"``.
    sample_weight : array of shape (n_samples,), optional
        Weights of the rows of ``X`` for ``gamma="scale"``'s variance, counted as repetitions
        (a weight of 2 is a duplicated row, 0 a removed one).

    Raises
    ------
    ValueError
        For an unknown kernel name (the message lists the valid ones) or bad parameters.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; valid kernels: {sorted(KERNELS)}")
    if kernel == "linear":
        return Linear()
    xp = get_namespace(X) if X is not None else None
    g = _resolve_gamma(gamma, X, xp=xp, sample_weight=sample_weight)
    if kernel == "poly":
        return Polynomial(degree=degree, gamma=g, coef0=coef0)
    return KERNELS[kernel](gamma=g)
