"""BLAS thread control for small factorizations and thin products (NumPy only)."""

from __future__ import annotations

import contextlib
import contextvars
import functools

from svmgpu.backend._device import is_numpy

_SERIAL_ORDER = 2048

#: Whether BLAS already runs on one thread here (an enclosing :func:`small_blas`): the nested
#: ones then cost nothing (each threadpoolctl switch costs tens of microseconds, which a solver
#: of many small systems would pay per step).
_SERIAL = contextvars.ContextVar("svmgpu_serial_blas", default=False)


def small_blas(n, *, xp):
    """Context for a factorization of order ``n``: one BLAS thread on NumPy when ``n`` is small.

    NumPy and SciPy wheels each bundle their own OpenBLAS. Right after a NumPy product the
    NumPy BLAS threads still spin, and a small multi-threaded SciPy ``potrf`` then fights them
    for the cores, slowing a small factorization by orders of magnitude (bench/README.md,
    "Measured reasons"). Small factorizations gain nothing from threads, so they run on one.
    """
    if n <= _SERIAL_ORDER and is_numpy(xp) and not _SERIAL.get():
        controller = _blas_controller()
        if controller is not None:
            return _one_thread(controller)
    return contextlib.nullcontext()


@contextlib.contextmanager
def _one_thread(controller):
    token = _SERIAL.set(True)
    try:
        with controller.limit(limits=1, user_api="blas"):
            yield
    finally:
        _SERIAL.reset(token)


def blas_is_serial():
    """Whether BLAS runs on one thread here (inside :func:`small_blas`, :func:`serial_blas`
    or a task of :func:`map_threads`)."""
    return _SERIAL.get()


def serial_blas(*, xp):
    """Context running BLAS on one thread on NumPy (no-op elsewhere); see :func:`small_blas`.

    For loops of small products (kernel blocks of ~1 MiB whose inner dimension is the number
    of features) thread start-up and spinning cost far more than the flops (bench/README.md,
    "Measured reasons").
    """
    return small_blas(0, xp=xp)


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """A cached ``threadpoolctl.ThreadpoolController`` (scanning the libraries is not free)."""
    try:
        from threadpoolctl import ThreadpoolController  # noqa: PLC0415 - scikit-learn dependency
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()


def map_threads(fn, items, *, xp, max_workers=None):
    """``[fn(item) for item in items]``, on the CPU's cores when ``xp`` is NumPy: the items run
    in a thread pool (``max_workers``: the cores, at most), each with BLAS on one thread
    (:func:`serial_blas`, entered once here and carried into every task's context), so that
    independent problems (the regions of a partitioned SVC) fill the cores instead of one BLAS
    call at a time. NumPy releases the GIL in its kernels and BLAS. Elsewhere (a GPU queue, other
    namespaces), for one item or one core, and under serial BLAS already (a task of an
    enclosing ``map_threads``: no nested pool over the same cores), in order in this thread.
    The results keep the order of ``items``; the first exception raised is re-raised."""
    import os  # noqa: PLC0415
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    items = list(items)
    workers = min(len(items), os.cpu_count() or 1,
                  max_workers if max_workers is not None else len(items))
    if not is_numpy(xp) or workers <= 1 or _SERIAL.get():
        return [fn(item) for item in items]
    with serial_blas(xp=xp):
        contexts = [contextvars.copy_context() for _ in items]  # (one per task: a context
        with ThreadPoolExecutor(max_workers=workers) as pool:  # cannot run in two threads)
            futures = [pool.submit(c.run, fn, item) for c, item in zip(contexts, items)]
            return [f.result() for f in futures]
