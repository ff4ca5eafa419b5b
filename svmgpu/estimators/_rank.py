"""The one rank policy of every estimator.

``rank`` has one meaning everywhere: an int is the rank of the low-rank factor (or the size of
the reduced set), capped by the number of samples (a rank above them means all of them); None is
the full kernel (for reduced-set models: every candidate row in the reduced set); ``"auto"`` is
the full kernel for at most :data:`AUTO_FULL_MAX_SAMPLES` samples when it fits the memory budget
and the model has a full-kernel form (the ``full_kernel_form`` tag), else :data:`AUTO_RANK`.
A Dask fit is always low-rank (no m × m kernel on a cluster): ``"auto"`` is :data:`AUTO_RANK`.
"""

from __future__ import annotations

#: ``rank="auto"``: the full kernel up to this many samples (when it fits the memory budget) for
#: the models that have a full-kernel form, else a factor or reduced set of ``AUTO_RANK``.
AUTO_FULL_MAX_SAMPLES = 3000
AUTO_RANK = 300


def resolve_rank(rank, m, *, full_kernel_form=False, full_fits=False, dask=False):
    """The rank a fit on ``m`` samples (or candidate rows) uses: None for the full kernel,
    else an int at most ``m``.

    Parameters
    ----------
    rank : "auto", int or None
        The estimator's parameter (validated by its constraints).
    m : int
        Samples, or the candidate rows a reduced set is drawn among.
    full_kernel_form : bool
        The model has a full-kernel form that ``"auto"`` may choose.
    full_fits : bool
        The full kernel (and what the model holds beside it) fits the memory budget.
    dask : bool
        A Dask fit: low-rank only (``rank=None`` is refused).
    """
    if dask:
        if rank is None:
            raise ValueError("rank=None (the full kernel) does not take Dask input: set rank "
                             f"(e.g. rank={AUTO_RANK}) for the distributed low-rank solver")
        if rank == "auto" and full_kernel_form and m <= AUTO_FULL_MAX_SAMPLES:
            # one policy for both: in memory "auto" is the full kernel here, which a cluster
            # cannot hold; a silently different (low-rank) model would be worse than asking
            raise ValueError(
                f"rank='auto' is the full kernel for {m:,} samples (at most "
                f"{AUTO_FULL_MAX_SAMPLES:,}) in memory, which Dask input does not take (no m x m "
                f"kernel on a cluster): pass rank={AUTO_RANK} for the distributed low-rank "
                "solver, or fit on X.compute() for the full kernel")
        rank = AUTO_RANK if rank == "auto" else rank
    if rank == "auto":
        small = m <= AUTO_FULL_MAX_SAMPLES and full_fits
        rank = None if (full_kernel_form and small) else AUTO_RANK
    return None if rank is None else min(int(rank), m)
