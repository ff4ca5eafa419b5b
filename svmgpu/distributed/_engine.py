"""The Dask engine: row partitions that stay on their workers, and the small reductions the
solvers read from them.

A fit on a row-chunked ``dask.array`` ``X`` runs the library's one semi-smooth Newton method
(:func:`svmgpu.solvers.newton.semismooth_newton`) unchanged. What changes is where its rows
live: each chunk of ``X`` becomes, on the worker that holds it, a
:class:`~svmgpu.lowrank.FeatureOperator` over its own rows (the Nyström features, computed
there and never gathered) and a :class:`~svmgpu.solvers.newton.NewtonRows` (labels, weights,
margins, the loss state). Every solver call — ``examine``, ``gradient``, ``curvature``,
``trial``, ... — runs on every partition; the small results (0-d values, an r-vector, an
r × r matrix) are summed on each worker, and the client adds one result per worker and runs
the r × r algebra. The landmarks (r rows) are gathered once and broadcast with the
feature map.

The executor is the current ``distributed.Client`` when there is one, else this process (the
chunks then run one after another here: the same code, no cluster).

The features are ordinary Dask tasks (recomputed from their lineage if a worker is lost before
the solve). The solver's state of a problem (labels, margins, the loss state of each row) lives
in one Dask actor per worker: a solver call reaches the workers directly, without the
scheduler (a task graph per step costs far more than an actor call). A worker lost
during the solve takes its actor with it: the fit then raises :class:`DistributedFitError`
(never a model built from part of the rows).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import sys
import time

from svmgpu.backend import (
    array_device,
    asarray,
    is_dask_collection,
    require_dask,
    resolve_budget,
)
from svmgpu.lowrank import combine_rules, feature_plan
from svmgpu.lowrank import reduced_kernel_features as _reduced_kernel_features
from svmgpu.solvers.newton import NewtonRows

#: Exceptions from Dask that mean "a worker (and what it held) was lost".
_LOST = ("KilledWorker", "CommClosedError", "FutureCancelledError", "CancelledError")


class DistributedFitError(RuntimeError):
    """A distributed fit lost partitions that Dask could not recompute."""


# --------------------------------------------------------------------------- executors
class _Local:
    """No cluster: the partitions live in this process ("futures" are the values)."""

    client = None

    def blocks(self, arr):
        import dask  # noqa: PLC0415

        return list(dask.compute(*arr.to_delayed().ravel()))

    def persist(self, arrays):
        import dask  # noqa: PLC0415

        return list(dask.persist(*arrays))

    def submit(self, fn, *args, where=None):
        return fn(*args)

    def where(self, futures):
        return [None] * len(futures)

    def actor(self, cls, *args, where=None):
        return cls(*args)

    def call(self, actors, method, *args):
        return [getattr(a, method)(*args) for a in actors]

    def gather(self, futures):
        return list(futures)


#: Seconds between checks that the fit's workers are alive while a result is awaited: an
#: actor on a worker that died is otherwise awaited without end (issue 26, item 5).
_POLL_SECONDS = 1.0


class _Cluster:
    """The current ``distributed.Client``: partition tasks on the worker of their chunk, and
    one actor per worker and problem holding that worker's partitions (a call reaches the
    workers directly, without the scheduler, instead of a task graph per solver step).

    The workers present when the executor is made are the fit's: every wait polls, and a fit
    whose worker left the cluster (killed, or restarted by its nanny under a new address)
    ends in :class:`DistributedFitError`, in any phase, within a few seconds (the scheduler
    is asked, at most once per :data:`_POLL_SECONDS`)."""

    def __init__(self, client):
        self.client = client
        self.workers = self._live_workers()
        self._checked = time.monotonic()
        self.used = False  # (an in-memory fit beside a client never checks the workers)

    def persist(self, arrays):
        self.used = True
        return self.client.persist(list(arrays))

    def blocks(self, arr):
        self.used = True
        futures = self.client.compute(list(arr.to_delayed().ravel()))
        self.check_workers()
        return futures

    def submit(self, fn, *args, where=None):
        self.used = True
        self.check_workers()
        return self.client.submit(fn, *args, pure=False,
                                  workers=None if where is None else [where],
                                  allow_other_workers=where is not None)

    def where(self, futures):
        """The address of a worker holding each future (None: not known)."""
        who = self.client.who_has(list(futures))
        return [min(who.get(f.key, ()), default=None) for f in futures]

    def actor(self, cls, *args, where=None):
        self.used = True
        with _lost_as_error():
            self.check_workers()
            future = self.client.submit(cls, *args, actor=True, pure=False,
                                        workers=None if where is None else [where])
            return self._result(future)

    def call(self, actors, method, *args):
        with _lost_as_error():
            futures = [getattr(a, method)(*args) for a in actors]  # all workers at once
            return [self._result(f) for f in futures]

    def gather(self, futures):
        from distributed import wait  # noqa: PLC0415

        with _lost_as_error():
            futures = list(futures)
            while True:
                try:
                    wait(futures, timeout=_POLL_SECONDS)
                    break
                except TimeoutError:
                    self.check_workers()
            out = self.client.gather(futures)
            self.check_workers()
            return out

    def _result(self, future):
        """``future.result()``, checking between polls that the fit's workers are alive."""
        while True:
            try:
                out = future.result(timeout=_POLL_SECONDS)
                break
            except TimeoutError:
                if future.done():  # (the timeout raced the result)
                    continue
                self.check_workers()
        self.check_workers()
        return out

    def _live_workers(self):
        """The scheduler's workers now (asked: the client's own view lags by seconds)."""
        return set(self.client.run_on_scheduler(_scheduler_workers))

    def check_workers(self, *, force=False):
        """Raise :class:`DistributedFitError` when a worker of the fit has left the cluster
        (asked of the scheduler at most once per :data:`_POLL_SECONDS` unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._checked < _POLL_SECONDS:
            return
        self._checked = now
        lost = self.workers - self._live_workers()
        if lost:
            raise DistributedFitError(
                f"a Dask worker was lost during the fit ({', '.join(sorted(lost))}), and with "
                "it the partitions and solver state it held; fit again on the cluster as it is "
                "now (no model was produced)")


def _scheduler_workers(dask_scheduler=None):
    """The addresses of the scheduler's workers (run on the scheduler)."""
    return list(dask_scheduler.workers)


@contextlib.contextmanager
def _lost_as_error():
    """The loss of a worker (and of the actor it held) as :class:`DistributedFitError`."""
    try:
        yield
    except DistributedFitError:
        raise
    except Exception as exc:
        if type(exc).__name__ in _LOST or "lost" in str(exc).lower() \
                or isinstance(exc, (OSError, TimeoutError)):
            raise DistributedFitError(
                f"a Dask worker was lost during the fit, and with it the solver's state of its "
                f"partitions ({type(exc).__name__}: {exc}); fit again on the cluster as it is "
                "now (no model was produced)") from exc
        raise


#: The executor of the fit in progress in this context (:func:`fit_scope`).
_FIT_EXECUTOR = contextvars.ContextVar("svmgpu_fit_executor", default=None)


@contextlib.contextmanager
def fit_scope():
    """One executor for everything a fit does: the workers present when the fit starts are the
    fit's, so a worker lost in any later phase (set-up, features, presolve, solve) ends the fit
    in :class:`DistributedFitError` (:class:`_Cluster`). (Made at the start only when
    ``distributed`` is imported already: a client exists only then, and a fit without one
    does not pay its import.)"""
    scope = {"ex": _make_executor()} if "distributed" in sys.modules else {}
    token = _FIT_EXECUTOR.set(scope)
    try:
        yield
        if isinstance(scope.get("ex"), _Cluster) and scope["ex"].used:  # (lost after the
            # last check: the fit may have ended within a poll interval of the loss)
            scope["ex"].check_workers(force=True)
    finally:
        _FIT_EXECUTOR.reset(token)


def executor():
    """The current ``distributed.Client`` as an executor, else this process (within a
    :func:`fit_scope`, the same one for the whole fit)."""
    scope = _FIT_EXECUTOR.get()
    if scope is None:
        return _make_executor()
    if "ex" not in scope:
        scope["ex"] = _make_executor()
    return scope["ex"]


def _make_executor():
    if "distributed" in sys.modules or _has_distributed():
        from distributed import default_client  # noqa: PLC0415

        try:
            return _Cluster(default_client())
        except ValueError:  # no client
            pass
    return _Local()


@functools.lru_cache(maxsize=1)
def _has_distributed() -> bool:
    try:
        import distributed  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ partition tasks
def _add(a, b):
    """Sum of two partition results: arrays, numbers, None, or tuples/lists of them."""
    if a is None:
        return None
    if isinstance(a, (tuple, list)):
        return type(a)(_add(x, y) for x, y in zip(a, b))
    return a + b


def _plain(v):
    """0-d arrays as Python numbers (tuples/lists element by element); other arrays as they
    are: what travels back to the client is small."""
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(x) for x in v)
    shape = getattr(v, "shape", None)
    if shape is not None and len(shape) == 0:
        return float(v)
    return v


def _to_client(v, device):
    """A reduced result on the client's device (numbers and None stay as they are)."""
    if isinstance(v, (tuple, list)):
        return type(v)(_to_client(x, device) for x in v)
    if v is None or isinstance(v, (int, float)):
        return v
    return asarray(v, device=device)


def _reduce_part(fn, F, *blocks):
    return _plain(fn(F, *blocks))


def _features(Xb, build, budget, in_memory):
    """The partition's FeatureOperator (``build(Xb, in_memory=, memory_budget=)``)."""
    return build(Xb, in_memory=in_memory, memory_budget=budget)


class _PartitionGroup:
    """The partitions of one problem on one worker (a Dask actor there): the rows object of
    each partition (``make(P, y, sample_weight)``: a
    :class:`~svmgpu.solvers.newton.NewtonRows` or :class:`~svmgpu.solvers.unisvm.DCARows`);
    a call runs the method on each and returns the sum of their results (or the list)."""

    def __init__(self, make, n, *parts):
        self.rows = [make(F, yb, sb)
                     for F, yb, sb in zip(parts[:n], parts[n:2 * n], parts[2 * n:])]

    def call(self, method, args, kwargs, how):
        outs = [_plain(getattr(r, method)(*args, **kwargs)) for r in self.rows]
        if how == "sum":
            return functools.reduce(_add, outs) if outs else None
        return outs if how == "list" else None


# -------------------------------------------------------------------------- features
class DaskFeatures:
    """The m × r features of a Dask fit: one :class:`~svmgpu.lowrank.FeatureOperator` per
    row chunk of ``X``, built and kept on the worker that holds the chunk.

    Parameters
    ----------
    X : dask.array.Array of shape (m, n_features)
        Row-chunked (one column chunk), NumPy or CuPy chunks.
    build : callable
        ``build(X_chunk, in_memory=bool, memory_budget=int) -> FeatureOperator``, picklable
        (sent with the tasks): the Nyström map of a factor without features
        (:meth:`~svmgpu.lowrank.LowRankFactor.operator`), the reduced-kernel columns
        (:func:`~svmgpu.lowrank.reduced_kernel_features`) or the rows themselves
        (:func:`~svmgpu.lowrank.linear_features`).
    rank : int
        r, the width of the features.
    memory_budget : int
        Bytes per worker: the rows of P of a worker's partitions are held when they fit with
        the solver's per-row vectors (:func:`svmgpu.lowrank.feature_plan` of the worker's row
        count), else recomputed per block; MemoryError up front when even the per-row vectors
        do not fit.
    device : Device
        The client's device (where the r × r algebra runs).
    """

    distributed = True

    def __init__(self, X, build, rank, *, memory_budget, device):
        self.ex = executor()
        self.chunks = X.chunks[0]
        self.shape = (int(X.shape[0]), int(rank))
        self.device, self.xp, self.dtype = device, device.xp, X.dtype
        blocks = self.ex.blocks(X)
        self.where = self.ex.where(blocks)
        rows = {}  # rows per worker
        for n, w in zip(self.chunks, self.where):
            rows[w] = rows.get(w, 0) + n
        self.plan = {w: feature_plan(n, int(rank), memory_budget, itemsize=X.dtype.itemsize,
                                     who=f"a Dask worker with {n:,} rows" if w else
                                     f"{n:,} rows in this process")
                     for w, n in rows.items()}
        self.parts = [
            self.ex.submit(_features, b, build, *self.plan[w][::-1], where=w)
            for b, w in zip(blocks, self.where)]

    def __repr__(self):
        m, r = self.shape
        return f"DaskFeatures({m} × {r} in {len(self.parts)} partitions)"

    def reduce(self, fn, *vectors):
        """``Σ_k fn(P_k, *chunks_k)`` over the partitions, on the client's device: ``fn`` (a
        picklable function of a partition's FeatureOperator and its chunks of ``vectors``,
        Dask arrays of X's rows or None) returns arrays, numbers or None, or a tuple of them.
        One task per partition; the results are gathered and added here."""
        ex = self.ex
        chunks = [[None] * len(self.parts) if v is None else ex.blocks(v.rechunk((self.chunks,)))
                  for v in vectors]
        outs = [ex.submit(_reduce_part, fn, F, *[c[k] for c in chunks], where=w)
                for k, (F, w) in enumerate(zip(self.parts, self.where))]
        return _to_client(functools.reduce(_add, ex.gather(outs)), self.device)

    def rows(self, cls, y, sample_weight=None, **kwargs):
        """The row object ``cls(P_k, y_k, s_k, **kwargs)`` of a problem on every partition,
        behind its Dask form (:func:`dask_rows`; ``y`` and ``sample_weight``: Dask arrays of
        X's rows): the :class:`~svmgpu.lowrank.RowSource` contract."""
        return dask_rows(cls)(self, y, sample_weight, **kwargs)


def factor_features(factor, X, *, memory_budget=None) -> DaskFeatures:
    """The training features of a low-rank factor on a Dask ``X``: each partition's rows of
    ``P`` computed, held or recomputed per block, on its worker by the factor's own map
    (:meth:`~svmgpu.lowrank.LowRankFactor.operator`); the Dask form of
    :meth:`LowRankFactor.features(X) <svmgpu.lowrank.LowRankFactor.features>`.

    Parameters
    ----------
    factor : LowRankFactor
        Its landmarks and ``L_inv`` (``P`` is not read: a Dask fit's factor has none,
        :func:`svmgpu.distributed._data.landmark_factor`).
    X : dask.array.Array of shape (m, n_features)
        The training points, row-chunked.
    memory_budget : int or str, optional
        Bytes per worker (see :class:`DaskFeatures`), resolved once here.

    Returns
    -------
    DaskFeatures
    """
    device = array_device(factor.landmark_X)
    return DaskFeatures(X, factor.without_features().operator, factor.rank,
                        memory_budget=resolve_budget(memory_budget, device), device=device)


def reduced_kernel_features(X, kernel, Z, *, intercept=False, memory_budget=None) -> DaskFeatures:
    """The reduced-kernel features ``K(X, Z)`` (``[K(X, Z), 1]`` with ``intercept``) of a Dask
    ``X``, each partition's columns on its worker: the Dask form of
    :func:`svmgpu.lowrank.reduced_kernel_features` (same parameters, ``in_memory`` planned per
    worker).

    Returns
    -------
    DaskFeatures
    """
    build = functools.partial(_reduced_kernel_features, kernel=kernel, Z=Z,
                              intercept=bool(intercept))
    device = array_device(Z)
    return DaskFeatures(X, build, Z.shape[0] + int(bool(intercept)),
                        memory_budget=resolve_budget(memory_budget, device), device=device)


class DaskRows:
    """The Dask form of a row class (``rows_class``, e.g.
    :class:`~svmgpu.solvers.newton.NewtonRows`): one row object per partition of
    :class:`DaskFeatures`, held by one Dask actor per worker. A subclass gets a method for each
    method that the row class declares with :func:`~svmgpu.lowrank.combine`: called here, it
    runs on every partition and combines their results as declared (summed on each worker, then
    over the workers on the client: one small result per worker and call). Methods declared
    ``"client"`` are the subclass's own; undeclared ones have no Dask form.
    """

    distributed = True
    #: The row class whose objects live on the partitions (set by each subclass).
    rows_class = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "rows_class" not in vars(cls):  # (a subclass of a Dask form keeps its methods)
            return
        for name, (how, totals) in combine_rules(cls.rows_class).items():
            if how == "client":
                if name not in vars(cls):
                    raise TypeError(f"{cls.__name__} must implement {name}: "
                                    f"{cls.rows_class.__name__}.{name} combines on the client")
            elif name not in vars(cls):
                setattr(cls, name, _forwarder(cls.rows_class, name, how, totals))
        _DASK_FORMS.setdefault(cls.rows_class, cls)

    def __init__(self, features, y, sample_weight=None, **kwargs):
        ex = self.ex = features.ex
        self.shape, self.device, self.xp = features.shape, features.device, features.xp
        self.kwargs = kwargs
        make = functools.partial(self.rows_class, **kwargs)
        ys = ex.blocks(y.rechunk((features.chunks,)))
        ss = [None] * len(ys) if sample_weight is None else \
            ex.blocks(sample_weight.rechunk((features.chunks,)))
        groups = {}  # worker -> its partitions
        for k, w in enumerate(features.where):
            groups.setdefault(w, []).append(k)
        self.actors = [
            ex.actor(_PartitionGroup, make, len(ks),
                     *[features.parts[k] for k in ks], *[ys[k] for k in ks],
                     *[ss[k] for k in ks], where=w)
            for w, ks in groups.items()]

    def _map(self, method, how, args=(), kwargs=None):
        """Run ``method`` on every partition and combine the results by the rule ``how``."""
        if how == "stay":
            return None
        per_worker = {"sum": "sum", "none": None}.get(how, "list")
        outs = self.ex.call(self.actors, "call", method, args, kwargs or {}, per_worker)
        if how == "none":
            return None
        if how == "sum":
            return self._client(functools.reduce(_add, [o for o in outs if o is not None]))
        parts = [o for group in outs for o in group]  # one per partition
        if how == "max":
            return tuple(functools.reduce(lambda a, b: [max(x, y) for x, y in zip(a, b)],
                                          parts))
        parts = [self._client(p) for p in parts]
        if how == "concat":
            xp = self.xp
            if isinstance(parts[0], (tuple, list)):
                return tuple(xp.concat(list(col), axis=0) for col in zip(*parts))
            return xp.concat(parts, axis=0)
        return parts  # "list"

    def _client(self, v):
        return _to_client(v, self.device)


#: The Dask form of each row class (:func:`dask_rows`).
_DASK_FORMS = {}


def _forwarder(rows_class, name, how, totals):
    """The Dask form's method ``name``: the row class's method on every partition, combined by
    ``how``, without the arguments ``totals`` (counts over all rows: each partition reads its
    own)."""
    signature = inspect.signature(getattr(rows_class, name))

    def method(self, *args, **kwargs):
        if totals:
            bound = signature.bind(None, *args, **kwargs)
            for t in totals:
                bound.arguments.pop(t, None)
            args, kwargs = bound.args[1:], bound.kwargs
        return self._map(name, how, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f":meth:`{rows_class.__module__}.{rows_class.__name__}.{name}` on every "
                      f"partition, combined by {how!r}.")
    return method


def dask_rows(rows_class):
    """The Dask form (a :class:`DaskRows` subclass) of a row class: its registered one (e.g.
    :class:`DaskNewtonRows`), else one made from the class's :func:`~svmgpu.lowrank.combine`
    declarations."""
    form = _DASK_FORMS.get(rows_class)
    if form is None:
        form = type(f"Dask{rows_class.__name__}", (DaskRows,), {"rows_class": rows_class,
                                                               "__module__": __name__})
    return form


class DaskNewtonRows(DaskRows):
    """:class:`~svmgpu.solvers.newton.NewtonRows` over the partitions, each method combined as
    NewtonRows declares (sums; ``active_rows`` concatenated; counts per partition, the margins
    left on the partitions); the presolve's ``strided`` rows are gathered to the client."""

    rows_class = NewtonRows

    def __init__(self, features, y, sample_weight=None, *, task="classification", tau=0.0):
        super().__init__(features, y, sample_weight, task=task, tau=tau)
        self.task, self.tau, self.cls = task, tau, task == "classification"

    def strided(self, n):
        """The presolve's rows (every ``m // n``-th row of each partition) gathered into an
        in-memory :class:`~svmgpu.solvers.newton.NewtonRows` on the client (about
        ``n × r`` features cross the network, once), and ``Σs / Σs_subset``."""
        xp = self.xp
        parts = self.strided_rows(max(self.shape[0] // n, 1))
        P = xp.concat([p[0] for p in parts], axis=0)
        y = xp.concat([p[1] for p in parts])
        s = None if parts[0][2] is None else xp.concat([p[2] for p in parts])
        total = sum(float(p[3]) for p in parts)
        sub = NewtonRows(P, y, s, task=self.task, tau=self.tau)
        return sub, total / float(y.shape[0] if s is None else xp.sum(s))


__all__ = ["DaskFeatures", "DaskNewtonRows", "DaskRows", "DistributedFitError", "dask_rows",
           "executor", "factor_features", "fit_scope", "is_dask_collection", "reduced_kernel_features",
           "require_dask"]
