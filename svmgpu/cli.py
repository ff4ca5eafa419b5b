"""Command line interface: ``python -m svmgpu`` (or the ``svmgpu`` console script).

Commands
--------
``demo``
    The README's main job: UniSVC on a million Checkerboard points (γ = 16, λ = 1e-7,
    C = 1/(λ m), rank 300), with progress, test accuracy, times, device and peak memory.
``train DATA MODEL``
    Fit an estimator on a LIBSVM/svmlight file and save it as a portable model file
    (:func:`svmgpu.io.save_model`), like LIBSVM's ``svm-train``; ``--scale`` first scales each
    feature to [−1, 1] (or ``--scale LOWER,UPPER``) like LIBSVM's ``svm-scale``, and stores the
    scaling in the model (``libsvm_scale_``), which ``predict`` applies.
``predict DATA MODEL``
    Predict the rows of a LIBSVM/svmlight file with a saved model, like ``svm-predict``;
    prints the accuracy (or, for regression, the mean squared error) when the file's labels
    are meaningful, and writes the predictions with ``--output``.

User mistakes (a missing file, a bad option value, an unknown estimator, CUDA unavailable,
...) print one line ``svmgpu <command>: error: ...`` on standard error and exit with status 1
(2 for command-line syntax); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

from svmgpu.estimators import REGISTRY

#: ``--estimator`` names, from the one registry of estimators.
ESTIMATORS = {entry.cli_name: entry for entry in REGISTRY.values()}

#: The demo's set-up: UniSVM's Checkerboard3M (γ = 2⁴, λ = 1e-7, r = 300).
DEMO_GAMMA = 16.0
DEMO_LAMBDA = 1e-7
DEMO_MAX_TEST = 200_000


class CLIError(Exception):
    """A user mistake: reported as one line, exit status 1."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``prog: error: message``), exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# ------------------------------------------------------------------------------ helpers
def estimator_class(name):
    """The estimator class behind an ``--estimator`` name (imported on demand)."""
    if name not in ESTIMATORS:
        raise CLIError(f"unknown estimator {name!r}; valid: {', '.join(ESTIMATORS)}")
    entry = ESTIMATORS[name]
    try:
        return entry.load()
    except ImportError as exc:
        raise CLIError(f"estimator {name!r} ({entry.name}) is not available in this svmgpu "
                       f"installation: {exc}") from None
    except AttributeError:
        raise CLIError(f"estimator {name!r}: module {entry.module} has no class "
                       f"{entry.name}") from None


def gpu_pool_bytes(device) -> int | None:
    """Bytes held by CuPy's default memory pool (its high-water mark, as the pool keeps the
    blocks it frees), or None off CUDA."""
    if getattr(device, "kind", str(device)[:4]) != "cuda":
        return None
    try:
        import cupy  # noqa: PLC0415

        return int(cupy.get_default_memory_pool().total_bytes())
    except Exception:  # noqa: BLE001 - a report, never a failure
        return None


def _gb(n):
    return "-" if n is None else f"{n / 1e9:.2f} GB"


def _secs(t):
    return f"{t:.2f} s" if t < 100 else f"{t:.0f} s"


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (v > 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return v


def _positive_int(text):
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _fraction(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 0.5], got {text!r}") from None
    if not 0.0 <= v <= 0.5:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 0.5], got {text!r}")
    return v


def _parse_bytes(text):
    from svmgpu.backend import parse_bytes  # noqa: PLC0415

    try:
        parse_bytes(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _label(text):
    """A class label as LIBSVM files give it: an int when integral, else a float or the text."""
    try:
        v = float(text)
    except ValueError:
        return text
    return int(v) if v.is_integer() else v


def _parse_class_weight(text):
    """``balanced`` or ``LABEL:WEIGHT,...`` (LIBSVM's ``-wi``: e.g. ``1:5,-1:1``)."""
    if text == "balanced":
        return text
    out = {}
    for item in text.split(","):
        label, sep, weight = item.rpartition(":")
        try:
            w = float(weight)
        except ValueError:
            w = None
        if not sep or not label or w is None or not w >= 0:
            raise argparse.ArgumentTypeError(
                f"class weights are 'balanced' or LABEL:WEIGHT pairs separated by commas (e.g. "
                f"1:5,-1:1) with weights >= 0, got {text!r}")
        out[_label(label)] = w
    return out


# ------------------------------------------------------------------------------ train flags
#: Estimator parameters that have flags of their own: ``--device``, ``--seed``, ``-v``.
_OWN_FLAGS = {"device": "--device", "random_state": "--seed", "verbose": "-v"}

#: Parameters whose text has a format of its own (LIBSVM's ``-wi`` pairs, byte counts).
_TEXT_FORMATS = {"class_weight": _parse_class_weight, "memory_budget": _parse_bytes}


class _Explicit:
    """``--rank none``: the value None given on the command line, kept apart from "option not
    given" (argparse's None)."""

    def __repr__(self):
        return "None"


_NONE = _Explicit()


def flag_name(name) -> str:
    """The ``svmgpu train`` flag of an estimator parameter: ``-C``, ``--max-iter``, ..."""
    return _OWN_FLAGS.get(name) or ("-C" if name == "C" else "--" + name.replace("_", "-"))


@functools.cache
def train_parameters() -> dict:
    """Every parameter of the registry's estimators that ``train`` takes as a flag: name ->
    ``(constraints, estimators)``, the union of the estimators' ``_parameter_constraints`` (the
    one declaration: the flags, their parsing and their messages come from it) and the CLI
    names of the estimators that take it."""
    out = {}
    for entry in REGISTRY.values():
        for name, cons in estimator_class(entry.cli_name)._parameter_constraints.items():
            if name in _OWN_FLAGS:
                continue
            constraints, takers = out.setdefault(name, ([], []))
            constraints.extend(c for c in cons if c not in constraints)
            takers.append(entry.cli_name)
    return out


def _describe(constraints) -> str:
    from sklearn.utils._param_validation import Options, make_constraint  # noqa: PLC0415

    parts = [str(make_constraint(c)) for c in constraints  # (what text can say)
             if (not isinstance(c, type) or c in (dict, str))
             and not (isinstance(c, Options) and c.type is type)]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]


def _candidates(text):
    """What a flag's text may mean, in the order it is tried."""
    low = text.strip().lower()
    if low in ("none", "full"):
        yield None
    if low in ("true", "false", "yes", "no"):
        yield low in ("true", "yes")
    for convert in (int, float):
        try:
            yield convert(text.replace("_", "") if convert is int else text)
        except ValueError:
            pass
    if text.lstrip().startswith("{"):
        try:
            yield json.loads(text)
        except ValueError:
            pass
    yield text


def _value_parser(name, constraints):
    """argparse's ``type`` for a parameter: the first reading of the text that one of the
    constraints accepts (``none`` for None, numbers, JSON for dicts, else the text)."""
    from sklearn.utils._param_validation import make_constraint  # noqa: PLC0415

    checks = [make_constraint(c) for c in constraints]

    def parse(text):
        if name in _TEXT_FORMATS:
            return _TEXT_FORMATS[name](text)
        for value in _candidates(text):
            if any(c.is_satisfied_by(value) for c in checks):
                return _NONE if value is None else value
        raise argparse.ArgumentTypeError(f"must be {_describe(constraints)}; got {text!r}")

    parse.__name__ = name  # (argparse names the type in some messages)
    return parse


def _add_parameter_flags(parser):
    """One flag per estimator parameter (:func:`train_parameters`)."""
    for name, (constraints, takers) in sorted(train_parameters().items(),
                                              key=lambda kv: kv[0].lower()):
        flags = ["-C", "--C"] if name == "C" else [flag_name(name)]
        which = "every estimator" if len(takers) == len(REGISTRY) else ", ".join(takers)
        if constraints == ["boolean"]:
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction,
                                default=None, help=f"{name} ({which})")
            continue
        parser.add_argument(*flags, dest=name, type=_value_parser(name, constraints),
                            metavar=name.upper().replace("_", "-"),
                            help=f"{name}: {_describe(constraints)} ({which})")


def _check_parameters(cls, params):
    """The estimator's own constraints on the parameters the command line set: an error names
    the flag, before the data are read."""
    from sklearn.utils._param_validation import (  # noqa: PLC0415
        InvalidParameterError,
        validate_parameter_constraints,
    )

    for name, value in params.items():
        try:
            validate_parameter_constraints({name: cls._parameter_constraints[name]},
                                           {name: value}, caller_name=cls.__name__)
        except InvalidParameterError as exc:
            raise CLIError(str(exc).replace(f"The '{name}' parameter", flag_name(name),
                                            1)) from None


def _as_flags(message):
    """An estimator's message with its parameter names written as ``svmgpu train`` flags
    (``rank=300`` becomes ``--rank 300``, ``memory_budget`` ``--memory-budget``): the names with
    an underscore wherever they stand, the others only as ``name=value``."""
    names = sorted(train_parameters(), key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(n for n in names if "_" in n) + r")\b(=?)|\b("
                         + "|".join(n for n in names if "_" not in n) + r")(=)")

    def flag(m):
        name, eq = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return flag_name(name) + (" " if eq else "")

    return pattern.sub(flag, message)


def _key_value(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


def _classification_losses():
    from svmgpu.losses import LOSSES  # noqa: PLC0415

    return sorted(LOSSES["classification"])


# ------------------------------------------------------------------------------ demo
def cmd_demo(args, out=print):
    import numpy as np  # noqa: PLC0415

    import svmgpu  # noqa: PLC0415
    from svmgpu.backend import get_device, peak_host_bytes, to_device, to_numpy  # noqa: PLC0415
    from svmgpu.datasets import make_checkerboard  # noqa: PLC0415
    from svmgpu.estimators.unisvm import UniSVC  # noqa: PLC0415

    device = get_device(args.device)
    n = args.n_samples
    if n < 10:
        raise CLIError(f"--n-samples must be at least 10, got {n}")
    n_test = args.n_test if args.n_test is not None else min(DEMO_MAX_TEST, n)
    C = 1.0 / (args.lam * n)
    dtype = np.dtype(args.dtype)
    out(f"svmgpu {svmgpu.__version__} demo: UniSVC on Checkerboard 4x4, {n:,} training and "
        f"{n_test:,} test points")
    out(f"  loss {args.loss}, rank {args.rank}, gamma {args.gamma:g}, lambda {args.lam:g} "
        f"(C = 1/(lambda m) = {C:.4g}), label noise {args.flip:.0%} (training only), "
        f"{dtype.name}, device {device}")

    t_start = time.perf_counter()
    t0 = time.perf_counter()
    X, y = make_checkerboard(n, flip=args.flip, dtype=dtype, random_state=args.seed)
    Xt, yt = make_checkerboard(n_test, dtype=dtype, random_state=args.seed + 1)
    if device.kind == "cuda":
        X, Xt = to_device(X, device), to_device(Xt, device)
        device.synchronize()
    t_data = time.perf_counter() - t0
    out(f"[data] {n:,} + {n_test:,} points in {_secs(t_data)}")

    clf = UniSVC(loss=args.loss, C=C, gamma=args.gamma, rank=args.rank, solver=args.solver,
                 max_iter=args.max_iter, device=str(device), dtype=dtype.name,
                 random_state=args.seed, verbose=0 if args.quiet else 1)
    t0 = time.perf_counter()
    clf.fit(X, y)
    ph = clf.fit_timings_
    device.synchronize()
    t_fit = time.perf_counter() - t0

    t0 = time.perf_counter()
    pred = to_numpy(clf.predict(Xt))
    device.synchronize()
    t_pred = time.perf_counter() - t0
    acc = float(np.mean(pred == yt))
    t_total = time.perf_counter() - t_start

    n_iter = int(np.sum(clf.n_iter_))
    converged = bool(np.all(clf.converged_))
    host, pool = peak_host_bytes(), gpu_pool_bytes(device)
    out("")
    out(f"test accuracy   {100 * acc:.3f} %  ({n_test:,} points)")
    out(f"time            features {_secs(ph['features'])} | solve {_secs(ph['solve'])} | "
        f"fit {_secs(t_fit)} | predict {_secs(t_pred)} | total {_secs(t_total)} "
        f"(with data {_secs(t_data)})")
    out(f"solver          {clf.solver_}, {n_iter} iterations, "
        f"{'converged' if converged else 'NOT converged (raise --max-iter)'}")
    out(f"device          {device} ({'CuPy' if device.kind == 'cuda' else 'NumPy'}), "
        f"{clf.fit_dtype_}, rank {clf.factor_.rank if clf.factor_ is not None else 'full'}")
    out(f"peak memory     host {_gb(host)} (VmHWM)"
        + (f" | GPU pool {_gb(pool)} (CuPy)" if pool is not None else ""))
    result = {
        "n_samples": n, "n_test": n_test, "loss": args.loss, "rank": args.rank,
        "gamma": args.gamma, "lambda": args.lam, "C": C, "flip": args.flip,
        "dtype": dtype.name, "device": str(device), "solver": clf.solver_,
        "n_iter": n_iter, "converged": converged, "accuracy": acc,
        "seconds": {"data": t_data, "features": ph["features"], "solve": ph["solve"],
                    "fit": t_fit, "predict": t_pred, "total": t_total},
        "peak_host_bytes": host, "gpu_pool_bytes": pool,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        out(f"results written to {args.json}")
    return 0


# ------------------------------------------------------------------------------ train
#: CLI option -> estimator parameter.


def _load_data(path, n_features=None, *, sparse=False, zero_based="auto"):
    """The file's X (CSR when ``sparse``: the estimator takes it, on the CPU), y, and whether
    its feature indices start at 0 (LIBSVM's start at 1; "auto": 0 when index 0 occurs)."""
    from svmgpu.datasets import load_svmlight  # noqa: PLC0415

    if not os.path.exists(path):
        raise CLIError(f"data file {path!r} does not exist")
    if os.path.isdir(path):
        raise CLIError(f"data file {path!r} is a directory")
    try:
        X, y = load_svmlight(path, n_features=n_features, dense=not sparse,
                             zero_based=False if zero_based == "auto" else zero_based)
        return X, y, zero_based is True
    except ValueError as exc:
        if zero_based != "auto" or "feature index 0 found" not in str(exc):
            if "feature index 0 found" in str(exc):
                raise CLIError(
                    f"{path} has feature index 0, but the model was trained on a file whose "
                    f"indices start at 1 (LIBSVM's convention): the columns would shift by "
                    f"one; write the file with indices from 1") from None
            raise
    X, y = load_svmlight(path, n_features=n_features, dense=not sparse, zero_based=True)
    return X, y, True


def _takes_sparse(estimator, device):
    """Whether to read the file as a SciPy CSR matrix: the estimator's ``input_tags.sparse``."""
    takes = estimator.__sklearn_tags__().input_tags.sparse
    return takes and getattr(device, "kind", "") in ("cpu", "cuda")


def _as_labels(y):
    import numpy as np  # noqa: PLC0415

    if hasattr(y, "dask"):  # a Dask array: one reduction decides
        if bool(((y == y.round()) & (abs(y) < 2**53)).all().compute()):
            return y.astype(np.int64)
        return y
    if y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y)) \
            and np.all(np.abs(y) < 2**53):
        return y.astype(np.int64)
    return y


@contextlib.contextmanager
def _dask_client(args, out):
    """The Dask client of ``--workers N`` (a local cluster, one thread a worker) or
    ``--scheduler ADDRESS``; None without either."""
    if args.workers is None and args.scheduler is None:
        yield None
        return
    try:
        from distributed import Client, LocalCluster  # noqa: PLC0415
    except ImportError:
        raise CLIError("--workers/--scheduler need Dask, the `dask` extra: pip install -e "
                       "\".[dask]\" in a checkout of svmgpu, or pip install \"dask[array]\" "
                       "distributed") from None
    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise CLIError(f"cannot reach the Dask scheduler at {args.scheduler!r} "
                           f"({exc}); start it, or pass --workers N for a local cluster") from None
        with client:
            yield f"the cluster at {args.scheduler}"
        return
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        yield f"{args.workers} local workers"


def _load_chunks(path, chunk_bytes):
    """The file as Dask arrays read per chunk (dense chunks), and whether its indices start
    at 0 (as :func:`_load_data`: LIBSVM's 1, or 0 when an index 0 occurs)."""
    from svmgpu.backend import parse_bytes  # noqa: PLC0415
    from svmgpu.datasets import load_svmlight  # noqa: PLC0415

    if not os.path.exists(path):
        raise CLIError(f"data file {path!r} does not exist")
    chunk_bytes = int(parse_bytes(chunk_bytes))
    try:
        X, y = load_svmlight(path, zero_based=False, chunks=chunk_bytes)
        return X, y, False
    except ValueError as exc:
        if "feature index 0 found" not in str(exc):
            raise
    X, y = load_svmlight(path, zero_based=True, chunks=chunk_bytes)
    return X, y, True


# ------------------------------------------------------------------------------ scaling
def _scale_range(text):
    """``LOWER,UPPER`` of ``--scale`` (svm-scale's ``-l``/``-u``): finite, LOWER < UPPER."""
    try:
        lower, upper = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOWER,UPPER (e.g. -1,1), got {text!r}") \
            from None
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise argparse.ArgumentTypeError(f"expected finite LOWER < UPPER, got {text!r}")
    return lower, upper


def fit_scale(X, lower=-1.0, upper=1.0):
    """LIBSVM's ``svm-scale -l lower -u upper`` fitted on the rows ``X`` (dense or SciPy
    sparse; a sparse matrix's implicit zeros count): the array ``[a, c]`` of shape
    (2, n_features), float64, with ``x' = a x + c`` mapping each feature's range on ``X`` to
    ``[lower, upper]``. A constant feature maps to 0 (``svm-scale`` leaves it out of its
    output); values beyond the training range are not clipped, as in ``svm-scale``."""
    import numpy as np  # noqa: PLC0415

    lo, hi = X.min(axis=0), X.max(axis=0)
    lo, hi = (np.asarray(v.toarray() if hasattr(v, "toarray") else v, dtype=np.float64).ravel()
              for v in (lo, hi))
    span = hi - lo
    moving = span > 0
    a = np.where(moving, (upper - lower) / np.where(moving, span, 1.0), 0.0)
    c = np.where(moving, lower - a * lo, 0.0)
    return np.stack([a, c])


def apply_scale(scale, X):
    """``a x + c`` for every row of ``X`` (:func:`fit_scale`'s ``[a, c]``), in X's dtype. A
    sparse X stays sparse where the scaling keeps zeros at zero (``c = 0``: ``--scale 0,1`` on
    non-negative features); otherwise it becomes dense, refused when that would not fit in
    half the free memory."""
    import numpy as np  # noqa: PLC0415

    from svmgpu.backend import available_memory, format_bytes  # noqa: PLC0415

    a, c = (np.asarray(v, dtype=X.dtype) for v in scale)
    if hasattr(X, "toarray"):
        if not np.any(c):
            return X.multiply(a[None, :]).tocsr().astype(X.dtype)
        dense = X.shape[0] * X.shape[1] * X.dtype.itemsize
        if dense > available_memory("cpu") // 2:
            raise CLIError(
                f"scaling moves the zeros of this sparse data, so its {X.shape[0]:,} x "
                f"{X.shape[1]:,} rows would be dense ({format_bytes(dense)}, more than half "
                "the free memory): for non-negative features use --scale 0,1, which keeps "
                "zeros at zero, or leave --scale out")
        X = X.toarray()
    return X * a + c


def cmd_train(args, out=print):
    from sklearn.base import is_classifier  # noqa: PLC0415 - scikit-learn's import is slow

    from svmgpu.backend import get_device  # noqa: PLC0415
    from svmgpu.io import save_model  # noqa: PLC0415

    cls = estimator_class(args.estimator)
    task = "classification" if is_classifier(cls()) else "regression"
    valid = cls().get_params(deep=False)
    params = {}
    for name in train_parameters():
        value = getattr(args, name)
        if value is None:
            continue
        if name not in valid:
            raise CLIError(f"{flag_name(name)} does not apply to estimator {args.estimator!r} "
                           f"({cls.__name__}); its parameters: {', '.join(sorted(valid))}")
        params[name] = None if value is _NONE else value
    for key, value in args.param:
        if key not in valid:
            raise CLIError(f"--param {key}: {cls.__name__} has no parameter {key!r}; its "
                           f"parameters: {', '.join(sorted(valid))}")
        params[key] = value
    _check_parameters(cls, params)
    if "random_state" in valid and "random_state" not in params:
        params["random_state"] = args.seed
    if "verbose" in valid and "verbose" not in params:
        params["verbose"] = args.verbose
    device = get_device(args.device)
    params["device"] = str(device)
    _check_writable(args.model, "the model")

    if args.workers is not None and args.scheduler is not None:
        raise CLIError("pass --workers N (a local Dask cluster) or --scheduler ADDRESS (an "
                       "existing one), not both")
    if args.scale is not None and (args.workers is not None or args.scheduler is not None):
        raise CLIError("--scale runs in this process: scale the file first, or leave --scale "
                       "out with --workers/--scheduler")
    est = cls(**params)
    with _dask_client(args, out) as client:
        t0 = time.perf_counter()
        if client is None:
            X, y, zero_based = _load_data(args.data, sparse=_takes_sparse(est, device))
        else:  # read per chunk by the workers; the fit runs on them
            X, y, zero_based = _load_chunks(args.data, args.chunk_bytes)
        if task == "classification":
            y = _as_labels(y)
        scale = None if args.scale is None else fit_scale(X, *args.scale)
        if scale is not None:
            X = apply_scale(scale, X)
        t_load = time.perf_counter() - t0
        where = "" if client is None else f" into {X.numblocks[0]} chunks on {client}"
        out(f"read {args.data}: {X.shape[0]:,} samples x {X.shape[1]} features{where} in "
            f"{_secs(t_load)}")
        t0 = time.perf_counter()
        est.fit(X, y)  # (its phases on standard error with -v: the svmgpu logger)
        t_fit = time.perf_counter() - t0
        ph = est.fit_timings_
    est.libsvm_zero_based_ = zero_based  # predict reads files with the same indexing
    if scale is not None:
        est.libsvm_scale_ = scale  # predict scales the rows the same way
    save_model(est, args.model)
    what = (f"{len(est.classes_)} classes" if hasattr(est, "classes_") else "regression")
    out(f"trained {cls.__name__} ({what}) on {device} in {_secs(t_fit)} "
        f"(features {_secs(ph['features'])}, solve {_secs(ph['solve'])}); "
        f"model saved to {args.model}")
    return 0


# ------------------------------------------------------------------------------ predict
def _format_labels(values):
    import numpy as np  # noqa: PLC0415

    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return [str(int(v)) for v in values]
    if values.dtype.kind == "f":
        return [str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(float(v))
                for v in values]
    return [str(v) for v in values]


def _check_writable(path, what):
    """Refuse, before any reading or training, an output path that cannot be written: a
    directory, a missing or read-only parent directory, a read-only file."""
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if os.path.isdir(target):
        raise CLIError(f"cannot write {what} to {path!r}: it is a directory; name a file")
    if not os.path.isdir(parent):
        raise CLIError(f"cannot write {what}: directory {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(target)
                                         and not os.access(target, os.W_OK)):
        raise CLIError(f"cannot write {what} to {path!r}: permission denied; choose a "
                       "writable place")


def cmd_predict(args, out=print):
    import numpy as np  # noqa: PLC0415

    from svmgpu.backend import get_device, to_numpy  # noqa: PLC0415
    from svmgpu.io import ScaledModelWarning, load_model  # noqa: PLC0415

    if not os.path.exists(args.model):
        raise CLIError(f"model file {args.model!r} does not exist")
    if args.output not in (None, "-"):
        _check_writable(args.output, "the predictions")
    device = get_device(args.device)
    with warnings.catch_warnings():  # (the warning for Python users of a scaled model)
        warnings.simplefilter("ignore", ScaledModelWarning)
        est = load_model(args.model, device=str(device))
    n_features = getattr(est, "n_features_in_", None)
    X, y, _ = _load_data(args.data, n_features=n_features, sparse=_takes_sparse(est, device),
                         zero_based=getattr(est, "libsvm_zero_based_", "auto"))
    if n_features is not None and X.shape[1] != n_features:
        raise CLIError(f"{args.data} has {X.shape[1]} features; the model expects {n_features}")
    if getattr(est, "libsvm_scale_", None) is not None:
        X = apply_scale(est.libsvm_scale_, X)
    t0 = time.perf_counter()
    pred = to_numpy(est.predict(X))
    t_pred = time.perf_counter() - t0
    if args.output:
        text = "\n".join(_format_labels(pred)) + ("\n" if len(pred) else "")
        if args.output == "-":
            sys.stdout.write(text)
        else:
            Path(args.output).write_text(text)
    classifier = hasattr(est, "classes_")
    msg = f"predicted {len(pred):,} samples with {type(est).__name__} on {device} in {_secs(t_pred)}"
    if classifier:
        yl = _as_labels(y)
        if len(yl) and np.all(np.isin(yl, est.classes_)):
            correct = int(np.sum(pred == yl))
            out(f"Accuracy = {100 * correct / len(yl):.4f}% ({correct}/{len(yl)}) "
                "(classification)", file=sys.stderr if args.output == "-" else None)
        else:
            out("the data's labels are not the model's classes: accuracy not computed",
                file=sys.stderr if args.output == "-" else None)
    elif len(y):
        mse = float(np.mean((pred - y) ** 2))
        var = float(np.var(y))
        r2 = 1.0 - mse / var if var > 0 else float("nan")
        out(f"Mean squared error = {mse:.6g} (regression); R2 = {r2:.6g}",
            file=sys.stderr if args.output == "-" else None)
    out(msg + (f"; predictions written to {args.output}" if args.output not in (None, "-") else ""),
        file=sys.stderr if args.output == "-" else None)
    return 0


# ------------------------------------------------------------------------------ parser
def build_parser():
    import svmgpu  # noqa: PLC0415

    p = _Parser(prog="svmgpu", description="Kernel SVMs for millions of samples on CPU and GPU.")
    p.add_argument("--version", action="version", version=f"svmgpu {svmgpu.__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    d = sub.add_parser("demo", help="UniSVC on a million Checkerboard points (the README's job)",
                       description="Train UniSVC on Checkerboard (gamma = 16, C = 1/(lambda m) "
                       "with lambda = 1e-7, as UniSVM's Checkerboard3M) and report test accuracy, "
                       "times, device and peak memory.")
    d.add_argument("--n-samples", type=_positive_int, default=1_000_000,
                   help="training points (default 1,000,000)")
    d.add_argument("--n-test", type=_positive_int, default=None,
                   help=f"test points (default min({DEMO_MAX_TEST:,}, n-samples))")
    d.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    d.add_argument("--loss", default="truncated_squared_hinge", choices=_classification_losses(),
                   metavar="LOSS", help="classification loss of UniSVM's Table 5 "
                   "(default truncated_squared_hinge; also: squared_hinge, smooth_ramp, ...)")
    d.add_argument("--rank", type=_positive_int, default=300, help="Nyström rank (default 300)")
    d.add_argument("--flip", type=_fraction, default=0.0,
                   help="fraction of training labels flipped (default 0)")
    d.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    d.add_argument("--gamma", type=_positive_float, default=DEMO_GAMMA, help="RBF width (16)")
    d.add_argument("--lam", "--lambda", dest="lam", type=_positive_float, default=DEMO_LAMBDA,
                   help="UniSVM's lambda; C = 1/(lambda m) (default 1e-7)")
    d.add_argument("--solver", default="auto", choices=["auto", "dca", "newton"])
    d.add_argument("--max-iter", type=_positive_int, default=1000)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    d.add_argument("-q", "--quiet", action="store_true", help="no solver iteration lines")
    d.set_defaults(func=cmd_demo)

    t = sub.add_parser("train", help="fit on a LIBSVM file and save the model",
                       description="Fit an svmgpu estimator on a LIBSVM/svmlight file and save "
                       "it as a portable .npz model file. Options left out keep the estimator's "
                       "defaults; an option the estimator does not take is an error.")
    t.add_argument("data", help="LIBSVM/svmlight file (plain, .gz, .bz2 or .xz)")
    t.add_argument("model", help="model file to write (.npz)")
    t.add_argument("--estimator", "-e", default="svc", choices=list(ESTIMATORS),
                   help="svc (SVC, default: scikit-learn's SVC), svr (SVR), uni (UniSVC), "
                   "unisvr (UniSVR), reduced (ReducedSVC), greedy (GreedySVC), path (L2SVMPath), "
                   "lssvm (LSSVC), psvm (PSVC), wpsvm (WPSVC)")
    _add_parameter_flags(t)
    t.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    t.add_argument("--seed", type=int, default=0, help="random_state (default 0)")
    t.add_argument("--scale", type=_scale_range, nargs="?", const=(-1.0, 1.0), default=None,
                   metavar="LOWER,UPPER",
                   help="first scale each feature's training range to [-1, 1] (or to "
                        "[LOWER, UPPER]), as LIBSVM's svm-scale; the scaling is stored in the "
                        "model and 'predict' applies it (sparse data: --scale 0,1 keeps zeros)")
    t.add_argument("--workers", type=_positive_int, metavar="N",
                   help="fit on a local Dask cluster of N worker processes (1 thread each); "
                        "the file is read per chunk by the workers (it needs "
                        "the dask extra; uni, unisvr, reduced, lssvm, psvm, wpsvm)")
    t.add_argument("--scheduler", metavar="ADDRESS",
                   help="fit on the Dask cluster at ADDRESS (e.g. tcp://host:8786); every "
                        "worker must be able to open the data file at the same path")
    t.add_argument("--chunk-bytes", dest="chunk_bytes", type=_parse_bytes, default="64MB",
                   metavar="BYTES", help="bytes of the file per Dask chunk (default 64MB)")
    t.add_argument("--param", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="any other estimator parameter (VALUE read as JSON, else as a string); "
                   "repeatable, e.g. --param loss_params='{\"a\": 2}'")
    t.add_argument("-v", "--verbose", action="count", default=0,
                   help="show the phases of the fit with their seconds (and a progress bar with "
                   "tqdm installed) on standard error; -vv also each iteration")
    t.set_defaults(func=cmd_train)

    q = sub.add_parser("predict", help="predict a LIBSVM file with a saved model",
                       description="Predict the rows of a LIBSVM/svmlight file with a model "
                       "saved by 'svmgpu train' (or svmgpu.io.save_model); print the accuracy "
                       "when the file's labels are the model's classes.")
    q.add_argument("data", help="LIBSVM/svmlight file")
    q.add_argument("model", help="model file (.npz)")
    q.add_argument("--output", "-o", metavar="FILE",
                   help="write one prediction per line ('-': standard output)")
    q.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    q.set_defaults(func=cmd_predict)
    return p


def _one_line(exc) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = str(exc.args[0])
    return " ".join(text.split())


def _user_errors():
    from svmgpu.io import ModelFormatError  # noqa: PLC0415

    return (CLIError, ValueError, TypeError, RuntimeError, MemoryError, OSError, ImportError,
            ModelFormatError)


def main(argv=None) -> int:
    """Entry point of ``python -m svmgpu`` and the ``svmgpu`` script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    k = 0
    while k < len(argv) and argv[k].startswith("-"):
        k += 1
    debug = "--debug" in argv[:k]
    command = "svmgpu"
    try:
        args = build_parser().parse_args(argv)
        command = f"svmgpu {args.command}"
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (svmgpu predict ... | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # (Python's own flush at exit would fail again)
        return 0
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, _user_errors()):
            text = _one_line(exc)
            if command == "svmgpu train" and not isinstance(exc, CLIError):
                text = _as_flags(text)
            print(f"{command}: error: {text}", file=sys.stderr)
        else:
            print(f"{command}: internal error ({type(exc).__name__}: {_one_line(exc)}); "
                  "run 'svmgpu --debug ...' for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
