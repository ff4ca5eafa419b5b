"""Linear algebra the array API standard lacks, under SciPy's names.

NumPy arrays go to :mod:`scipy.linalg`, CuPy arrays to :mod:`cupyx.scipy.linalg` / cuBLAS;
any other namespace (array-api-strict, PyTorch, ...) uses the standard's ``linalg`` extension
(``cholesky``, ``solve``) on its own device. A namespace without that extension gets
:class:`NotImplementedError` naming it.
"""

from __future__ import annotations

import math
import warnings

from numpy.linalg import LinAlgError

from svmgpu.backend._device import is_cupy, is_numpy, numpy_dtype
from svmgpu.backend._threads import small_blas


def _linalg(xp, what):
    """The namespace's standard ``linalg`` extension, or NotImplementedError naming ``what``."""
    ext = getattr(xp, "linalg", None)
    if ext is None or not hasattr(ext, "cholesky") or not hasattr(ext, "solve"):
        raise NotImplementedError(
            f"{what} needs NumPy, CuPy or a namespace with the array API's linalg extension; "
            f"namespace {getattr(xp, '__name__', xp)!r} has none: convert the input with "
            "numpy.asarray or cupy.asarray"
        )
    return ext


def _finite(xp, a) -> bool:
    return bool(xp.all(xp.isfinite(a)))


def factor_ok(L, *, xp):
    """Whether a Cholesky factor is a real one, as a 0-d boolean array on its device (no read):
    a positive diagonal and finite entries.

    CuPy's default ``linalg='ignore'`` does not raise on failure and returns LAPACK's partial
    factor: potrf stops at the first non-positive pivot and leaves it (≤ 0, or NaN) on the
    diagonal, e.g. ``[[1, 0], [2, -3]]`` for ``[[1, 2], [2, 1]]``, with finite entries. A NaN
    test alone would accept it; the diagonal test catches every failed pivot.
    """
    d = xp.linalg.diagonal(L) if hasattr(xp.linalg, "diagonal") else xp.diagonal(L)
    return xp.all(d > 0) & xp.all(xp.isfinite(L))


_LAPACK = {}


def _lapack(name, a):
    """SciPy's LAPACK routine ``name`` for a float32/float64 NumPy array (None otherwise),
    called directly: ``scipy.linalg.cholesky``/``cho_solve`` add about 20 µs of argument
    handling a call, which the exact path's small systems paid thousands of times a fit
    (9 ms of digits' 106 ms)."""
    key = (name, a.dtype.char)
    if key not in _LAPACK:
        from scipy.linalg import lapack  # noqa: PLC0415

        prefix = {"d": "d", "f": "s"}.get(a.dtype.char)
        _LAPACK[key] = None if prefix is None else getattr(lapack, prefix + name)
    return _LAPACK[key]


def cholesky(a, *, lower: bool = True, check: bool = True, overwrite: bool = False,
             clean: bool = True, xp):
    """Cholesky factor of an SPD matrix ``a`` of shape (n, n).

    Returns the lower (``a = L Lᵀ``) or upper (``a = Uᵀ U``) factor.

    ``clean=False`` leaves the other triangle as it was on NumPy instead of zeroing it: a
    factor read only through LAPACK's triangular solves (:func:`cho_solve`,
    :func:`solve_triangular`), which never read it. Zeroing it is a pass over half the matrix:
    1.5 of 21 ms for a float32 factor of order 2,272 on this CPU (session 35).

    ``overwrite=True`` lets NumPy factor ``a`` in its own memory (its contents are then
    undefined): LAPACK reads a C-ordered symmetric matrix as its (equal) Fortran-ordered
    transpose, with no copy.

    ``check=False`` skips the test of the factor that makes CuPy and other non-NumPy
    namespaces raise (one device synchronisation): for matrices positive definite by
    construction whose callers check their results (a step that is not finite) anyway.

    Raises
    ------
    numpy.linalg.LinAlgError
        When ``a`` is not (numerically) positive definite, on every backend (with ``check``).
    """
    if is_numpy(xp):
        potrf = _lapack("potrf", a)
        if potrf is None:  # (not float32/float64: SciPy's checks and conversions)
            import scipy.linalg  # noqa: PLC0415

            with small_blas(a.shape[0], xp=xp):
                return scipy.linalg.cholesky(a, lower=lower, check_finite=False)
        if overwrite and a.flags.c_contiguous and not a.flags.f_contiguous:
            a = a.T  # the same symmetric matrix, Fortran-ordered: factored in place
        with small_blas(a.shape[0], xp=xp):
            c, info = potrf(a, lower=lower, clean=int(clean), overwrite_a=int(overwrite))
        if info > 0:
            raise LinAlgError(f"{info}-th leading minor not positive definite")
        if info < 0:  # pragma: no cover - an argument LAPACK refuses
            raise ValueError(f"LAPACK potrf: illegal value in argument {-info}")
        return c
    import numpy as np  # noqa: PLC0415 - the one exception type every backend raises

    try:
        L = _linalg(xp, "cholesky").cholesky(a)
    except Exception as exc:  # PyTorch raises its own LinAlgError (a RuntimeError subclass)
        if type(exc).__name__.endswith("LinAlgError"):
            raise np.linalg.LinAlgError(f"matrix is not positive definite ({exc})") from exc
        raise
    if check and not bool(factor_ok(L, xp=xp)):  # CuPy returns a partial factor, no error
        raise np.linalg.LinAlgError("matrix is not positive definite")
    return L if lower else xp.matrix_transpose(L)


def solve_triangular(a, b, *, lower: bool = True, trans: int | str = 0, xp):
    """Solve ``op(a) x = b`` for triangular ``a`` of shape (n, n); ``b`` of shape (n,) or (n, k).

    ``trans`` is 0/'N' (a), 1/'T' (aᵀ), as in :func:`scipy.linalg.solve_triangular`.
    """
    if is_numpy(xp):
        import scipy.linalg  # noqa: PLC0415

        with small_blas(a.shape[0], xp=xp):
            return scipy.linalg.solve_triangular(a, b, lower=lower, trans=trans, check_finite=False)
    if is_cupy(xp):
        import cupyx.scipy.linalg  # noqa: PLC0415

        return cupyx.scipy.linalg.solve_triangular(a, b, lower=lower, trans=trans)
    # The standard has no triangular solve: a general solve of the triangular matrix (LU with
    # partial pivoting does no pivoting on a triangular matrix whose diagonal dominates its
    # column; the result equals the substitution to rounding).
    ext = _linalg(xp, "solve_triangular")
    if trans in (1, "T", "C"):
        a = xp.matrix_transpose(a)
    elif trans not in (0, "N"):
        raise ValueError(f"trans must be 0/'N' or 1/'T', got {trans!r}")
    if b.ndim == 1:
        return ext.solve(a, b[:, None])[:, 0]
    return ext.solve(a, b)


def tri_inv(a, *, lower: bool = True, xp):
    """The inverse of a triangular matrix ``a`` of shape (n, n) (triangular, same side).

    LAPACK ``trtri`` on NumPy (n³/3 flops, a third of a triangular solve with the identity).
    """
    n = a.shape[0]
    if is_numpy(xp):
        import scipy.linalg  # noqa: PLC0415

        trtri = scipy.linalg.get_lapack_funcs("trtri", (a,))
        with small_blas(n, xp=xp):
            inv, info = trtri(a, lower=int(lower), unitdiag=0, overwrite_c=0)
        if info != 0:
            raise scipy.linalg.LinAlgError(f"singular triangular matrix (trtri info={info})")
        return inv
    eye = xp.eye(n, dtype=a.dtype, device=getattr(a, "device", None))
    return solve_triangular(a, eye, lower=lower, xp=xp)


def pivoted_cholesky_dense(a, *, rel_tol: float, xp):
    """Diagonal-pivoted Cholesky of a symmetric positive semidefinite ``a`` of shape (n, n),
    stopped before the first pivot ``<= rel_tol · max(diag(a))``.

    Returns ``(L, piv)``: ``L`` of shape (k, k) lower triangular and ``piv`` an int64 NumPy
    array of k distinct indices with ``a[piv][:, piv] = L Lᵀ`` (in pivot order); the indices
    left out are numerically dependent on the kept ones.

    The usual matrix is numerically of full rank: then a plain Cholesky (LAPACK/cuSOLVER
    ``potrf``, on the array's device) whose pivots all clear the threshold is the answer, with
    ``piv = 0 … n − 1``; one scalar is read back to decide. Otherwise LAPACK's pivoted ``pstrf``
    (largest remaining diagonal first, the greedy rule of Zhou 2016) runs on the host: for a
    CuPy array that is one documented round trip of the (n, n) matrix, not of data of the
    sample size. Other namespaces run :func:`greedy_pivoted_cholesky` on their own device
    (three scalar reads per pivot). All follow the same rule, so they pick the same pivots.
    """
    import numpy as np  # noqa: PLC0415 - host-side pivot bookkeeping and LAPACK

    n = a.shape[0]
    dmax = float(xp.max(xp.linalg.diagonal(a))) if n else 0.0
    if n == 0 or not dmax > 0:
        return a[:0, :0], np.zeros(0, dtype=np.int64)
    threshold = rel_tol * dmax
    try:
        L = cholesky(a, lower=True, xp=xp)
        if float(xp.min(xp.linalg.diagonal(L))) ** 2 > threshold:
            return L, np.arange(n, dtype=np.int64)
    except np.linalg.LinAlgError:
        pass
    if not (is_numpy(xp) or is_cupy(xp)):
        Lt, piv, _ = greedy_pivoted_cholesky(xp.linalg.diagonal(a), lambda j: a[:, j], n,
                                             stop_trace=0.0, rel_tol=rel_tol, xp=xp)
        idx = xp.asarray(np.asarray(piv, dtype=np.int64), device=a.device)
        return xp.matrix_transpose(xp.take(Lt, idx, axis=1)), np.asarray(piv, dtype=np.int64)
    import scipy.linalg  # noqa: PLC0415

    from svmgpu.backend._device import array_device, asarray, to_numpy  # noqa: PLC0415

    host = np.array(to_numpy(a), dtype=np.float64, order="F")
    pstrf = scipy.linalg.get_lapack_funcs("pstrf", (host,))
    with small_blas(n, xp=xp):
        c, piv, rank, info = pstrf(host, tol=threshold, lower=1, overwrite_a=1)
    if info < 0:  # pragma: no cover - argument error, a bug
        raise ValueError(f"pstrf: illegal argument {-info}")
    # pstrf stops once the largest remaining pivot is <= tol; drop a last pivot that equals it
    k = int(rank)
    while k and c[k - 1, k - 1] ** 2 <= threshold:
        k -= 1
    L = np.tril(c[:k, :k])
    if not is_numpy(xp):
        L = asarray(L, device=array_device(a))
    return L, (piv[:k] - 1).astype(np.int64)


def greedy_pivoted_cholesky(diag, column, max_rank, *, stop_trace, rel_tol, xp):
    """Diagonal-pivoted Cholesky, matrix-free (Zhou 2016; UniSVM section 4.2).

    The pivot is the largest diagonal of the residual; only the visited columns are computed
    (O(n r²) time). Used by the pivoted-Cholesky kernel factor (columns of the kernel matrix
    over all training rows) and by :func:`pivoted_cholesky_dense` for namespaces without
    LAPACK (columns of an explicit matrix).

    Parameters
    ----------
    diag : array of shape (n,)
        Diagonal of the matrix.
    column : callable ``j -> array of shape (n,)``
        Column ``j`` of the matrix.
    max_rank : int
    stop_trace : float
        Stop once ``trace(residual) <= stop_trace``.
    rel_tol : float
        Stop before a pivot ``<= rel_tol · max(diag)`` (numerically dependent columns).

    Returns
    -------
    Pt : array of shape (k, n)
        ``Pᵀ`` (row j is column j of the factor), k <= max_rank, ``P Pᵀ`` reproducing the
        visited rows and columns.
    pivots : list of int
    trace : float
        The residual trace at the stop.
    """
    n = diag.shape[0]
    Pt = xp.empty((max_rank, n), dtype=diag.dtype, device=diag.device)
    d = xp.where(diag > 0, diag, xp.zeros_like(diag))
    scale = float(xp.max(d)) if n else 0.0
    pivots: list[int] = []
    trace = float(xp.sum(d))
    for k in range(max_rank):
        if trace <= stop_trace or scale == 0.0:
            break
        j = int(xp.argmax(d))
        dj = float(d[j])
        if dj <= rel_tol * scale:
            break
        col = column(j)
        if k:
            col = col - xp.matmul(xp.matrix_transpose(Pt[:k, :]), Pt[:k, j])
        col = col / math.sqrt(dj)
        Pt[k, :] = col
        d = d - col * col
        d[j] = 0.0
        d = xp.where(d > 0, d, xp.zeros_like(d))
        pivots.append(j)
        trace = float(xp.sum(d))
    return Pt[: len(pivots), :], pivots, trace


def cho_factor(a, *, lower: bool = True, check: bool = True, overwrite: bool = False, xp):
    """Cholesky factorization for :func:`cho_solve` (and :func:`solve_triangular`): returns
    ``(c, lower)`` (``check`` and ``overwrite`` as in :func:`cholesky`); on NumPy c's other
    triangle is left unspecified (``clean=False``: those solves read one triangle)."""
    return cholesky(a, lower=lower, check=check, overwrite=overwrite, clean=False,
                    xp=xp), lower


def cho_solve(c_and_lower, b, *, xp):
    """Solve ``a x = b`` given ``(c, lower)`` from :func:`cho_factor`."""
    c, lower = c_and_lower
    if is_numpy(xp):
        potrs = _lapack("potrs", c) if b.dtype == c.dtype else None
        if potrs is None:
            import scipy.linalg  # noqa: PLC0415

            with small_blas(c.shape[0], xp=xp):
                return scipy.linalg.cho_solve((c, lower), b, check_finite=False)
        with small_blas(c.shape[0], xp=xp):
            x, info = potrs(c, b, lower=lower)
        if info != 0:  # pragma: no cover - an argument LAPACK refuses
            raise ValueError(f"LAPACK potrs: illegal value in argument {-info}")
        return x
    if lower:
        y = solve_triangular(c, b, lower=True, xp=xp)
        return solve_triangular(c, y, lower=True, trans=1, xp=xp)
    y = solve_triangular(c, b, lower=False, trans=1, xp=xp)
    return solve_triangular(c, y, lower=False, xp=xp)


def jittered_cholesky(a, *, lower: bool = True, xp, initial_shift: float | None = None,
                      max_tries: int = 12):
    """Cholesky of ``a + s I`` with the smallest shift ``s`` in a growing sequence that works.

    Tries ``s = 0`` first, then ``s = initial_shift · 10^k`` (default initial shift:
    ``10 · eps · mean(diag(a))``).

    Returns
    -------
    L : array of shape (n, n)
        The factor of ``a + s I``.
    shift : float
        The shift ``s`` that was used (0.0 when ``a`` itself factored).

    Raises
    ------
    numpy.linalg.LinAlgError
        When even the largest shift fails (``a`` is far from positive semidefinite or not finite).
    """
    import numpy as np  # noqa: PLC0415 - only for the LinAlgError type and finfo

    if not _finite(xp, a):
        raise np.linalg.LinAlgError("jittered_cholesky: the matrix has NaN or inf entries")
    n = a.shape[0]
    try:
        return cholesky(a, lower=lower, xp=xp), 0.0
    except np.linalg.LinAlgError:
        pass
    if initial_shift is None:
        mean_diag = float(xp.mean(xp.abs(xp.linalg.diagonal(a)))) if n else 1.0
        initial_shift = 10.0 * float(np.finfo(numpy_dtype(a.dtype)).eps) * max(
            mean_diag, math.ulp(1.0)
        )
    eye = xp.eye(n, dtype=a.dtype, device=getattr(a, "device", None))
    shift = float(initial_shift)
    for _ in range(max_tries):
        try:
            return cholesky(a + shift * eye, lower=lower, xp=xp), shift
        except np.linalg.LinAlgError:
            shift *= 10.0
    raise np.linalg.LinAlgError(
        f"jittered_cholesky: not positive definite even with a diagonal shift of {shift / 10:.3g}"
    )


#: What to change when a system that is SPD in exact arithmetic is not so in floating point.
_SPD_ADVICE = "center and scale the features (e.g. StandardScaler), or lower C"


def spd_factor(H, *, xp, allow_jitter, what=None):
    """Lower Cholesky factor of a matrix that is SPD in exact arithmetic (solve with
    ``cho_solve((L, True), b)``).

    When rounding makes it indefinite and ``allow_jitter`` is set, the factor of ``H + s I``
    with the smallest working shift ``s`` (:func:`jittered_cholesky`); with ``what`` (a name for
    messages) a ``RuntimeWarning`` reports the shift, which acts as extra regularization. When
    even the largest shift fails, a ``FloatingPointError`` names ``what`` and the fix.

    Raises
    ------
    numpy.linalg.LinAlgError
        When ``H`` does not factor and ``allow_jitter`` is False.
    FloatingPointError
        When even the largest shift fails.
    """
    with small_blas(H.shape[0], xp=xp):
        try:
            return cholesky(H, lower=True, xp=xp)
        except LinAlgError:
            if not allow_jitter:
                raise
            try:
                L, shift = jittered_cholesky(H, lower=True, xp=xp)
            except LinAlgError as exc:
                raise FloatingPointError(
                    f"{what or 'an SPD system'} could not be factored, even with a diagonal "
                    f"shift (it is far from positive definite in floating point): "
                    f"{_SPD_ADVICE}") from exc
            if what is not None:
                scale = float(xp.max(xp.abs(xp.linalg.diagonal(H))))
                warnings.warn(
                    f"{what} is not numerically positive definite; it was factored with "
                    f"{shift:.3g} added to its diagonal ({shift / max(scale, 1e-300):.1e} of "
                    f"the largest diagonal entry), which regularizes the solution a little "
                    f"more than asked: {_SPD_ADVICE}", RuntimeWarning, stacklevel=4)
            return L


def spd_factor_solve(H, rhs, *, xp, allow_jitter, checked=True):
    """Solve ``H x = rhs`` for ``H`` SPD in exact arithmetic by Cholesky (:func:`spd_factor`,
    jittered when ``allow_jitter``), e.g. a Newton system.

    Returns ``(x, ok)``. ``checked=False`` on a GPU: the factor is not tested here (a device
    synchronisation) and ``ok`` is a 0-d flag that it is a real one (:func:`factor_ok`), for the
    caller to read with its other scalars and, when false, to solve again checked (which raises
    or jitters). Checked, or on NumPy (whose LAPACK reports failure at once): ``ok`` is None.
    """
    with small_blas(H.shape[0], xp=xp):
        if not checked and not is_numpy(xp):
            try:
                L = cholesky(H, lower=True, check=False, xp=xp)
            except LinAlgError:  # namespaces that raise at once (PyTorch)
                pass
            else:
                return cho_solve((L, True), rhs, xp=xp), factor_ok(L, xp=xp)
        L = spd_factor(H, xp=xp, allow_jitter=allow_jitter)
        return cho_solve((L, True), rhs, xp=xp), None


def smw_factor_solve(U, lam_diag, lam, b, *, xp, checked=True):
    """:func:`solve_smw` as ``(z, ok)``, its n × n factor checked or not (``checked`` and ``ok``
    as in :func:`spd_factor_solve`; ``ok`` None for an empty ``U``)."""
    n = U.shape[0]
    if n == 0:
        return b / lam, None
    M = xp.matmul(U, xp.matrix_transpose(U))  # (NumPy: syrk, exactly symmetric; SciPy's
    # gemm made M's rounding depend on U's layout, and a Dask fit's Newton steps differed from
    # the in-memory fit's in 2–3 runs of 4: tests/test_dask.py)
    M = M + xp.eye(n, dtype=xp.float64, device=getattr(U, "device", None)) * (lam / lam_diag)[None, :]
    t, ok = spd_factor_solve(M, xp.matmul(U, b), xp=xp, allow_jitter=False, checked=checked)
    return (b - xp.matmul(t, U)) / lam, ok


def solve_smw(U, lam_diag, lam, b, *, xp):
    """Solve ``(λ I + Uᵀ Λ U) z = b`` by the Sherman–Morrison–Woodbury identity (Zhou 2013 (28)).

    ``z = (b − Uᵀ (λ Λ⁻¹ + U Uᵀ)⁻¹ U b) / λ``, an n × n SPD system: O(r n²) instead of the
    O(r³) of the r × r system when ``n < r``.

    Parameters
    ----------
    U : array of shape (n, r), float64
        The rows of the update (the Newton method's active rows ``P_I``).
    lam_diag : array of shape (n,)
        The positive diagonal of Λ.
    lam : float
    b : array of shape (r,)
    xp : namespace

    Returns
    -------
    z : array of shape (r,)
    """
    return smw_factor_solve(U, lam_diag, lam, b, xp=xp, checked=True)[0]


def tri_inv_matmul_inplace(block, lower_inv, *, xp):
    """Return ``block @ lower_invᵀ`` for a lower-triangular ``lower_inv`` of shape (r, r).

    On NumPy this is BLAS ``trmm`` in place on ``block`` (half the flops of a general product);
    elsewhere it is a plain matmul. ``block`` of shape (b, r) must be C-contiguous on NumPy.
    """
    if is_numpy(xp):
        from scipy.linalg import blas  # noqa: PLC0415

        trmm = blas.dtrmm if block.dtype.char == "d" else blas.strmm
        # blockᵀ is Fortran-ordered (r, b): blockᵀ := lower_inv @ blockᵀ, in place.
        out = trmm(1.0, lower_inv, block.T, side=0, lower=1, overwrite_b=1)
        if out.base is not block and out is not block.T:
            block[...] = out.T
        return block
    return xp.matmul(block, xp.matrix_transpose(lower_inv))


#: Columns per block of :meth:`GramAccumulator.result`'s copy of the lower triangle.
_SYMMETRIZE_BLOCK = 128


class GramAccumulator:
    """``G = Σ_b Aᵦᵀ Wᵦ Bᵦ`` over row blocks, an r × r float64 matrix: the one accumulation of
    every Gram matrix (``PᵀP``, the Newton Hessian ``PᵀΛP`` and its updates).

    On NumPy the blocks go to SciPy's BLAS with ``beta = 1``, in place: :meth:`add_sym` is a
    ``syrk`` into the lower triangle (half the flops of a product; the upper triangle is filled
    once by :meth:`result`), :meth:`add` a ``gemm``. No r × r temporary per block (8 MB at
    r = 1000, allocated and added once per block: bench/README.md), and the same
    BLAS library as the factorizations and the Nyström ``trmm`` (see
    :func:`svmgpu.backend.matmul`). Elsewhere ``G += AᵀB``.

    Use either :meth:`add_sym` or :meth:`add` on one accumulator, not both.
    """

    def __init__(self, r, *, xp, device=None):
        self.xp = xp
        self._np = is_numpy(xp)
        if self._np:
            import numpy as np  # noqa: PLC0415

            self.G = np.zeros((r, r), dtype=np.float64, order="F")
        else:
            self.G = xp.zeros((r, r), dtype=xp.float64, device=device)
        self._lower = False

    def add_sym(self, A, alpha=1.0):
        """``G += alpha · AᵀA`` for a float64 block A of shape (n, r)."""
        if A.shape[0] == 0:
            return
        if not self._np:
            P = self.xp.matmul(self.xp.matrix_transpose(A), A)
            self.G += P if alpha == 1.0 else alpha * P
            return
        from scipy.linalg import blas  # noqa: PLC0415

        # AᵀA = (Aᵀ)(Aᵀ)ᵀ: syrk with trans=0 on Aᵀ, which is column-major for a C-ordered A
        At, trans = (A.T, 0) if A.flags.c_contiguous else (A, 1)
        res = blas.dsyrk(float(alpha), At, beta=1.0, c=self.G, trans=trans, lower=1,
                         overwrite_c=1)
        if res is not self.G:  # pragma: no cover - f2py writes a Fortran-ordered c in place
            self.G[...] = res
        self._lower = True

    def add(self, A, B):
        """``G += AᵀB`` for float64 blocks A, B of shape (n, r)."""
        if A.shape[0] == 0:
            return
        if not self._np:
            self.G += self.xp.matmul(self.xp.matrix_transpose(A), B)
            return
        from scipy.linalg import blas  # noqa: PLC0415

        left, trans_a = (A.T, 0) if A.flags.c_contiguous else (A, 1)  # Aᵀ, column-major
        right, trans_b = (B.T, 1) if B.flags.c_contiguous else (B, 0)  # B = (Bᵀ)ᵀ
        res = blas.dgemm(1.0, left, right, trans_a=trans_a, trans_b=trans_b, beta=1.0, c=self.G,
                         overwrite_c=1)
        if res is not self.G:  # pragma: no cover
            self.G[...] = res

    def result(self):
        """The accumulated ``G`` (symmetric after :meth:`add_sym`)."""
        if self._lower:  # the lower triangle copied up, a block of columns at a time (an
            # index array of the triangle cost 10 ms at r = 1,000, these copies 0.8 ms)
            G, r = self.G, self.G.shape[0]
            for j in range(0, r, _SYMMETRIZE_BLOCK):
                e = min(j + _SYMMETRIZE_BLOCK, r)
                G[j:e, e:] = G[e:, j:e].T
                for i in range(j, e - 1):
                    G[i, i + 1:e] = G[i + 1:e, i]
            self._lower = False
        return self.G
