"""The row-source contract, written once: what a solver may ask of the m × r features ``P``
(:class:`RowSource`, :class:`FeatureRows`), and of the objects that hold a problem's per-row
state on them (:class:`AdditiveRows`), with the rule by which each of their methods' results
combine over a split of the rows (:func:`combine`).

A row source is a :class:`~svmgpu.lowrank.FeatureOperator` (the rows in this process) or a
:class:`svmgpu.distributed.DaskFeatures` (the rows on the partitions of a Dask array). A solver
never asks which: it builds its row object with :meth:`RowSource.rows` (the row class of the
solver, e.g. :class:`svmgpu.solvers.newton.NewtonRows`, here or on every partition), reduces
with :meth:`RowSource.reduce`, and reads :attr:`RowSource.distributed` where the answer is
different (nothing m-long comes back from partitions). The Dask form of a row class is generated
from the :func:`combine` declarations of its methods (:class:`svmgpu.distributed.DaskRows`).
"""

from __future__ import annotations

import functools
from typing import Any, Protocol, runtime_checkable

#: How the results of a row-object method combine over the row partitions of a problem:
#:
#: ``"sum"``
#:     added (arrays, numbers, or tuples/lists of them; the sums over any split of the rows);
#: ``"concat"``
#:     concatenated along the rows (an array, or a tuple of arrays each concatenated);
#: ``"list"``
#:     one result per partition, as a list;
#: ``"max"``
#:     element-wise maximum of per-partition tuples of numbers;
#: ``"none"``
#:     run on every partition for its effect; nothing comes back (None);
#: ``"stay"``
#:     m-long results that stay with their partitions: not called, None on the client;
#: ``"client"``
#:     the distributed form implements the method itself (e.g. gathering rows to the client).
COMBINE_RULES = ("sum", "concat", "list", "max", "none", "stay", "client")


def combine(how, *, totals=()):
    """Declare how a row-object method's results combine over row partitions.

    Parameters
    ----------
    how : {"sum", "concat", "list", "max", "none", "stay", "client"}
        See :data:`COMBINE_RULES`.
    totals : tuple of str
        Arguments that are totals over all rows (counts a caller read once for the whole
        problem): a partition is called without them and reads its own.

    Returns
    -------
    callable
        A decorator that marks the method (its ``__combine__`` attribute) and returns it.
    """
    if how not in COMBINE_RULES:
        raise ValueError(f"unknown combine rule {how!r}; valid: {list(COMBINE_RULES)}")

    def mark(method):
        method.__combine__ = (how, tuple(totals))
        return method

    return mark


@functools.cache
def combine_rules(cls) -> dict:
    """``{method name: (how, totals)}`` of the :func:`combine` declarations of a row class
    (its bases' included)."""
    rules = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            rule = getattr(value, "__combine__", None)
            if rule is not None:
                rules[name] = rule
    return rules


@runtime_checkable
class AdditiveRows(Protocol):
    """A problem's per-row state on a row source (the solver's side of the rows):
    :class:`~svmgpu.solvers.newton.NewtonRows` (the semi-smooth Newton method),
    :class:`~svmgpu.solvers.unisvm.DCARows` (UniSVM's DCA), or their Dask forms
    (:class:`svmgpu.distributed.DaskRows`).

    Built by ``P.rows(cls, y, sample_weight, **kwargs)`` as ``cls(P, y, sample_weight,
    **kwargs)``. Its methods return small results (0-d arrays, r-vectors, r × r matrices) that
    combine over any split of the rows as each method declares with :func:`combine`; the
    solver does its r × r algebra on them and never touches an m-vector.
    """

    #: True for the rows of a distributed fit (their m-long state stays on the partitions).
    distributed: bool
    shape: tuple
    xp: Any
    device: Any


@runtime_checkable
class RowSource(Protocol):
    """The m × r features ``P`` of a kernel model as every solver reads them, in this process
    or on the partitions of a Dask array.

    Attributes
    ----------
    shape : tuple of int
        ``(m, r)``.
    dtype : dtype
        The dtype of the rows (products are float64).
    xp : namespace
    device : Device
        Where the r × r algebra runs (the client's device for Dask).
    distributed : bool
        True when the rows live on partitions: nothing m-long comes back to the solver.
    """

    shape: tuple
    dtype: Any
    xp: Any
    device: Any
    distributed: bool

    def rows(self, cls, y, sample_weight=None, **kwargs) -> AdditiveRows:
        """The row object ``cls(P, y, sample_weight, **kwargs)`` of a problem on these rows
        (on a distributed source: one per partition, behind its Dask form)."""

    def reduce(self, fn, *vectors):
        """``Σ_k fn(P_k, *vectors_k)`` over the row partitions ``P_k`` (one partition, the
        whole ``P``, in this process); ``fn`` returns arrays, numbers, None, or tuples of
        them."""


@runtime_checkable
class FeatureRows(RowSource, Protocol):
    """A :class:`RowSource` whose rows are in this process (held or recomputed per block):
    the products over row blocks (:class:`~svmgpu.lowrank.FeatureOperator`)."""

    def matvec(self, v):
        """``P v`` (float64)."""

    def rmatvec(self, u, *, rows=None):
        """``Pᵀ u`` over all rows or the rows ``rows`` (float64)."""

    def gram(self, weights=None, *, rows=None, nonnegative=False):
        """``Pᵀ diag(weights) P`` (float64, r × r)."""

    def take(self, rows) -> FeatureRows:
        """The source of the rows ``rows`` only."""

    def to_array(self, dtype=None):
        """The m × r matrix as one array."""


__all__ = ["COMBINE_RULES", "AdditiveRows", "FeatureRows", "RowSource", "combine",
           "combine_rules"]
