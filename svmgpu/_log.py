"""One log for every solver and estimator: the standard-library logger ``svmgpu``.

Each solver logs under a child logger (``svmgpu.newton``, ``svmgpu.unisvm``,
``svmgpu.stagewise``, ``svmgpu.path``) and each estimator under ``svmgpu.<Class>``, every
record in one format, ``[svmgpu.<name>] key=value key=value ...``:

* ``INFO``: the phases of a fit and what they took (``features``: the kernel or low-rank
  features; ``solve``: each binary problem, with its iterations and whether it converged), a
  rank lower than asked and why, and each solver's summary;
* ``DEBUG``: one line per iteration, with these fields where the solver has them: ``it``
  (iteration), ``obj`` (the objective the solver minimises), ``kkt`` (its optimality measure:
  for Newton ‖∇F‖ over its scale, the stopping test ``kkt <= tol``; for UniSVM's DCA the same
  for the current convex subproblem), ``active`` (rows with nonzero curvature), ``step`` (the
  line-search step), ``stage`` (Newton's continuation stage in C), ``lambda`` and ``m_E`` (the
  path's λ and active-set size), ``loo``/``rm`` (the path's leave-one-out and radius-margin
  estimates), ``selected`` (GS-SVM's support vectors).

An estimator's ``verbose=1`` (or a solver's) shows INFO, ``verbose=2`` DEBUG, on standard
error, for the duration of the call (and not through the root logger's handlers too); with
``verbose=1`` and `tqdm <https://tqdm.github.io>`_ installed (the ``progress`` extra), the long
phases (feature blocks, iterations, path steps) also get a progress bar. Applications that
route the records themselves leave ``verbose=0`` and set the level (their handlers on the root
logger then receive them), or attach a handler to the ``svmgpu`` logger, which ``verbose`` then
uses instead of standard error::

    import logging
    logging.basicConfig()
    logging.getLogger("svmgpu").setLevel(logging.INFO)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def caller_stacklevel() -> int:
    """The ``stacklevel`` of a warning that points at the first frame outside svmgpu (the
    user's call, however many svmgpu frames (subclass fits, decorators, solvers) are between)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level


__all__ = ["FORMAT", "caller_stacklevel", "fields", "get_logger", "honours_verbose", "progress",
           "verbosity"]

#: The one format of every record shown by ``verbose``.
FORMAT = "[%(name)s] %(message)s"

logger = logging.getLogger("svmgpu")

#: The verbosity of the innermost active :func:`verbosity` block (0 outside), and its open bars.
_STATE = contextvars.ContextVar("svmgpu_verbosity", default=(0, None))


def get_logger(name: str) -> logging.Logger:
    """The logger ``svmgpu.<name>`` (a solver's or an estimator's)."""
    return logger.getChild(name)


def fields(**values) -> str:
    """``key=value`` pairs in the one format: floats to 8 significant digits, ``None`` left out.
    """
    out = []
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, float):
            v = f"{v:.8g}"
        out.append(f"{k}={v}")
    return " ".join(out)


class _Handler(logging.StreamHandler):
    """Standard error, through ``tqdm.write`` while a bar is open (so lines and bars do not
    overwrite each other)."""

    def emit(self, record):
        bars = _STATE.get()[1]
        if bars:
            try:
                bars[0].write(self.format(record), file=self.stream)
                return
            except Exception:  # noqa: BLE001 - a broken bar must not lose the record
                pass
        super().emit(record)


def _own_handlers() -> bool:
    """Whether the application attached handlers to the ``svmgpu`` logger itself."""
    return any(not isinstance(h, _Handler) for h in logger.handlers)


@contextlib.contextmanager
def verbosity(verbose):
    """Show svmgpu's INFO records (``verbose=1``) or DEBUG records too (``verbose >= 2``) on
    standard error inside the block; nested blocks keep the outer one's setting unless they ask
    for more. ``verbose=0`` changes nothing (records still reach handlers the application
    configured)."""
    v = int(verbose or 0)
    outer, bars = _STATE.get()
    if v <= outer:
        yield
        return
    handler = None
    level, propagate = logger.level, logger.propagate
    wanted = logging.INFO if v == 1 else logging.DEBUG
    logger.setLevel(wanted if level == logging.NOTSET else min(level, wanted))
    if not _own_handlers():  # standard error, and not a second copy through the root's
        handler = _Handler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        logger.propagate = False
    open_bars = [] if bars is None else bars
    token = _STATE.set((v, open_bars))
    try:
        yield
    finally:
        if bars is None:  # the outermost block closes the bars its callees left open
            for bar in open_bars:
                bar.close()
        _STATE.reset(token)
        logger.setLevel(level)
        if handler is not None:
            logger.removeHandler(handler)
            logger.propagate = propagate


def honours_verbose(fn):
    """Decorator: run ``fn`` inside ``verbosity(verbose)``, its keyword argument ``verbose``."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with verbosity(kwargs.get("verbose", 0)):
            return fn(*args, **kwargs)

    return wrapper


class _NoBar:
    def update(self, n=1, **postfix):
        pass

    def close(self):
        pass


class _Bar:
    def __init__(self, bar, bars):
        self._bar, self._bars = bar, bars

    def update(self, n=1, **postfix):
        if postfix:
            self._bar.set_postfix_str(fields(**postfix), refresh=False)
        self._bar.update(n)

    def close(self):
        if self._bar in self._bars:
            self._bars.remove(self._bar)
            self._bar.close()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress(desc: str, *, total=None, unit="it"):
    """A progress bar for a long phase: a tqdm bar while ``verbose == 1``, tqdm is installed and
    standard error is a terminal, otherwise an object whose ``update(n, **fields)`` and
    ``close()`` do nothing (a log file gets no carriage returns).
    (``verbose >= 2`` logs each iteration instead.) Bars left open are closed when the
    outermost :func:`verbosity` block ends."""
    v, bars = _STATE.get()
    if v != 1 or not _is_terminal(sys.stderr):  # (a log file gets the phase lines, no \r bars)
        return _NoBar()
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - optional, imported when a bar is shown
    except ImportError:
        return _NoBar()
    bar = tqdm(desc=f"svmgpu {desc}", total=total, unit=unit, leave=False, file=sys.stderr,
               dynamic_ncols=True)
    bars.append(bar)
    return _Bar(bar, bars)
