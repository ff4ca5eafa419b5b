"""Portable model files: :func:`save_model` and :func:`load_model`.

A model file is one NumPy ``.npz`` archive holding

* every fitted array of the estimator, moved to the host (one ``.npy`` member per array), and
* one member ``__svmgpu_meta__``: UTF-8 JSON (stored as a ``uint8`` array) with the format
  name and version, the svmgpu version, the estimator's class, its ``get_params()``, its
  fitted attributes as a tree whose leaves are JSON values or references to the arrays, and
  the name, dtype, shape and attribute path of every array.

Loading never executes code from the file: the archive is read with
``numpy.load(allow_pickle=False)``, the estimator class is looked up in an allow-list of
svmgpu estimators, kernels are rebuilt from their class name and parameters, losses through
:func:`svmgpu.losses.get_loss`, and only the dataclasses listed in ``_DATACLASSES``
(``LowRankFactor``, ``SolverResult``, ...) are rebuilt from their fields.

The encoder is generic: a fitted attribute may be a NumPy or CuPy array, a NumPy scalar, a
Python scalar or string, None, a list, tuple or dict of those, a :class:`~svmgpu.kernels.Kernel`,
a :class:`~svmgpu.losses.Loss` or an allow-listed dataclass (e.g.
:class:`~svmgpu.lowrank.LowRankFactor`). Anything else raises a ``TypeError`` naming the
attribute.

Example
-------
>>> from svmgpu import UniSVC
>>> from svmgpu.datasets import make_checkerboard
>>> from svmgpu.io import load_model, save_model
>>> X, y = make_checkerboard(2000, random_state=0)
>>> clf = UniSVC(C=10.0, gamma=16.0, rank=100, random_state=0, device="cpu").fit(X, y)
>>> save_model(clf, "/tmp/svmgpu_doctest_model.npz")
>>> clf2 = load_model("/tmp/svmgpu_doctest_model.npz")
>>> bool((clf2.predict(X) == clf.predict(X)).all())
True
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import platform
import stat
import tempfile
import warnings
import zipfile

import array_api_compat
import numpy as np

from svmgpu.backend import is_device_sparse, is_foreign_array, is_sparse, to_host
from svmgpu.estimators import REGISTRY

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ModelFormatError", "ScaledModelWarning", "load_model",
           "read_metadata",
           "save_model"]

#: Name written into every model file.
FORMAT_NAME = "svmgpu-model"
#: Version of the file layout; a file of a later version is refused with a clear message.
FORMAT_VERSION = 1
_META = "__svmgpu_meta__"

#: Dataclasses that may appear in a fitted model: name -> (module, class name).
_DATACLASSES = {
    "LowRankFactor": ("svmgpu.lowrank._factor", "LowRankFactor"),
    "SolverResult": ("svmgpu.solvers._result", "SolverResult"),
    "Prepared": ("svmgpu.kernels._kernels", "Prepared"),
    "Device": ("svmgpu.backend._device", "Device"),
}

_TAGS = ("__array__", "__scalar__", "__scalars__", "__objarray__", "__float__", "__complex__",
         "__tuple__", "__dict__", "__dtype__", "__nptype__", "__kernel__", "__loss__",
         "__dataclass__", "__csr__")


class ScaledModelWarning(UserWarning):
    """A loaded model was trained on features scaled by ``svmgpu train --scale``: its
    ``predict`` expects rows scaled the same way (``svmgpu.cli.apply_scale``)."""


class ModelFormatError(ValueError):
    """The file is not an svmgpu model, or one this version cannot read."""


# ------------------------------------------------------------------------------- encoding
def _is_array(x) -> bool:
    # (array_api_compat counts NumPy scalars as arrays: the encoder tests np.generic first)
    return array_api_compat.is_numpy_array(x) or array_api_compat.is_cupy_array(x) or \
        is_foreign_array(x)


def _host(x) -> np.ndarray:
    return to_host(x, why="a model file holds host arrays")


class _Encoder:
    """Turns a tree of fitted values into JSON plus a dict of host arrays."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.index: dict[str, dict] = {}
        self._seen: dict[int, tuple[object, str]] = {}  # id -> (array, name): shared arrays once

    def _store(self, arr: np.ndarray, path: str, kind: str) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = arr
        self.index[name] = {"path": path, "dtype": arr.dtype.str, "shape": list(arr.shape),
                            "kind": kind}
        return name

    def encode(self, obj, path: str):
        # JSON-native leaves (bool before int: bool is an int subclass)
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) is int:
            return obj
        if type(obj) is float:
            if math.isfinite(obj):
                return obj
            return {"__float__": repr(obj)}
        if type(obj) is complex:
            return {"__complex__": [self.encode(obj.real, path), self.encode(obj.imag, path)]}
        if isinstance(obj, np.generic):
            if isinstance(obj, np.object_):
                raise self._error(path, obj)
            return {"__scalar__": self._store(np.asarray(obj), path, "scalar")}
        if _is_array(obj):
            seen = self._seen.get(id(obj))
            if seen is not None and seen[0] is obj:
                return {"__array__": seen[1]}
            arr = _host(obj)
            if arr.dtype.hasobject:
                return self._object_array(arr, path)
            kind = "numpy" if array_api_compat.is_numpy_array(obj) else \
                "cupy" if array_api_compat.is_cupy_array(obj) else \
                array_api_compat.array_namespace(obj).__name__
            name = self._store(arr, path, kind)
            self._seen[id(obj)] = (obj, name)
            return {"__array__": name}
        if is_sparse(obj):  # (a sparse fit's support vectors: CSR, as its three arrays)
            host = obj.get() if is_device_sparse(obj) else obj.tocsr()
            return {"__csr__": [self._store(np.asarray(getattr(host, part)), f"{path}.{part}",
                                            "csr")
                                for part in ("data", "indices", "indptr")],
                    "shape": [int(n) for n in host.shape]}
        if isinstance(obj, np.dtype):
            return {"__dtype__": obj.str}
        if isinstance(obj, type) and issubclass(obj, np.generic) and obj is not np.object_:
            return {"__nptype__": np.dtype(obj).str}
        if isinstance(obj, list):
            return self._list(obj, path)
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"__tuple__": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (str, int, float, bool, tuple))):
                    raise TypeError(
                        f"cannot save {path}: dict key {k!r} of type {type(k).__name__} "
                        "(keys must be strings, numbers, None or tuples of those)"
                    )
                items.append([self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")])
            return {"__dict__": items}
        kernel = self._kernel(obj, path)
        if kernel is not None:
            return kernel
        loss = self._loss(obj, path)
        if loss is not None:
            return loss
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return self._dataclass(obj, path)
        raise self._error(path, obj)

    @staticmethod
    def _error(path, obj):
        return TypeError(
            f"cannot save attribute {path} of type {type(obj).__module__}.{type(obj).__qualname__}: "
            "a model file holds NumPy/CuPy arrays, numbers, strings, None, lists, tuples and dicts "
            "of those, Kernel and Loss objects and svmgpu dataclasses (LowRankFactor, SolverResult)"
        )

    def _list(self, obj, path):
        # A long list of NumPy scalars of one dtype (e.g. an objective history) is one array.
        if len(obj) > 1 and all(isinstance(v, np.generic) and not isinstance(v, np.object_)
                                for v in obj):
            dtypes = {v.dtype for v in obj}
            if len(dtypes) == 1:
                arr = np.asarray(obj, dtype=dtypes.pop())
                return {"__scalars__": self._store(arr, path, "scalar list")}
        return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]

    def _object_array(self, arr, path):
        flat = []
        for v in arr.reshape(-1).tolist():
            if not (v is None or isinstance(v, (str, bool, int, float))):
                raise TypeError(
                    f"cannot save {path}: an object array holding {type(v).__name__} values "
                    "(only strings, numbers and None are allowed in object arrays)"
                )
            flat.append(self.encode(v, path))
        return {"__objarray__": flat, "shape": list(arr.shape)}

    def _kernel(self, obj, path):
        from svmgpu.kernels import KERNELS, Kernel

        if not isinstance(obj, Kernel):
            return None
        cls = type(obj)
        if cls not in KERNELS.values():
            raise TypeError(
                f"cannot save {path}: kernel class {cls.__qualname__} is not one of svmgpu's "
                f"kernels ({', '.join(sorted(c.__name__ for c in KERNELS.values()))})"
            )
        return {"__kernel__": cls.__name__,
                "params": self.encode(obj.get_params(), f"{path}.get_params()")}

    def _loss(self, obj, path):
        from svmgpu.losses import LOSSES, Loss

        if not isinstance(obj, Loss):
            return None
        if LOSSES.get(obj.task, {}).get(obj.name) is not type(obj):
            raise TypeError(f"cannot save {path}: loss {obj!r} is not one of svmgpu's losses")
        return {"__loss__": obj.name, "task": obj.task,
                "params": self.encode(obj.params, f"{path}.params")}

    def _dataclass(self, obj, path):
        name = type(obj).__name__
        spec = _DATACLASSES.get(name)
        if spec is None or _import_attr(*spec) is not type(obj):
            raise self._error(path, obj)
        fields = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            fpath = f"{path}.{f.name}"
            fields[f.name] = self.encode(value, fpath)
        return {"__dataclass__": name, "fields": fields}


def _import_attr(module, name):
    return getattr(importlib.import_module(module), name)


# ------------------------------------------------------------------------------- decoding
class _Decoder:
    def __init__(self, npz, index):
        self.npz = npz
        self.index = index
        self._cache = {}

    def _array(self, name):
        if name in self._cache:  # an array shared by several attributes stays shared
            return self._cache[name]
        if not isinstance(name, str) or name not in self.index or name == _META:
            raise ModelFormatError(f"the model refers to an array {name!r} that it does not list")
        try:
            arr = self.npz[name]
        except KeyError:
            raise ModelFormatError(f"the model file lacks its array {name!r}") from None
        except Exception as exc:  # noqa: BLE001 - any failure to read a member is damage
            raise ModelFormatError(f"the model file's array {name!r} is damaged "
                                   f"({type(exc).__name__}: {str(exc)[:200]})") from None
        self._cache[name] = arr
        return arr

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise ModelFormatError(f"unexpected JSON value {node!r} in the model metadata")
        tag = next((t for t in _TAGS if t in node), None)
        if tag is None:
            raise ModelFormatError(f"unknown node {sorted(node)} in the model metadata")
        v = node[tag]
        if tag == "__array__":
            return self._array(v)
        if tag == "__scalar__":
            return self._array(v)[()]
        if tag == "__scalars__":
            return list(self._array(v))
        if tag == "__objarray__":
            out = np.empty(len(v), dtype=object)
            out[:] = [self.decode(x) for x in v]
            return out.reshape(node["shape"])
        if tag == "__csr__":
            return _csr(*(self._array(x) for x in v), node.get("shape"))
        if tag == "__float__":
            return float(v)
        if tag == "__complex__":
            return complex(self.decode(v[0]), self.decode(v[1]))
        if tag == "__tuple__":
            return tuple(self.decode(x) for x in v)
        if tag == "__dict__":
            return {_hashable(self.decode(k)): self.decode(x) for k, x in v}
        if tag == "__dtype__":
            return np.dtype(v)
        if tag == "__nptype__":
            dt = np.dtype(v)
            if dt.kind not in "biufcUSMm":
                raise ModelFormatError(f"refusing NumPy type {v!r} in the model metadata")
            return dt.type
        if tag == "__kernel__":
            from svmgpu.kernels import KERNELS

            classes = {c.__name__: c for c in KERNELS.values()}
            if v not in classes:
                raise ModelFormatError(f"unknown kernel class {v!r} (known: {sorted(classes)})")
            return classes[v](**self.decode(node["params"]))
        if tag == "__loss__":
            from svmgpu.losses import get_loss

            return get_loss(v, task=node["task"], **self.decode(node["params"]))
        # __dataclass__
        spec = _DATACLASSES.get(v)
        if spec is None:
            raise ModelFormatError(f"refusing unknown class {v!r} in the model metadata")
        cls = _import_attr(*spec)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(node["fields"]) - set(fields))
        if unknown:
            raise ModelFormatError(f"unknown fields {unknown} of {v} in the model metadata")
        values = {k: self.decode(x) for k, x in node["fields"].items()}
        init = {k: values.pop(k) for k in list(values) if fields[k].init}
        obj = cls(**init)
        for k, x in values.items():
            object.__setattr__(obj, k, x)
        return obj


def _csr(data, indices, indptr, shape):
    """A SciPy CSR matrix from a model file's arrays, checked whole (indices within the
    shape, pointers ascending) before any prediction reads it."""
    import scipy.sparse as sp  # noqa: PLC0415

    if not (isinstance(shape, list) and len(shape) == 2 and
            all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise ModelFormatError(f"a sparse matrix in the model metadata has shape {shape!r}")
    try:
        out = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
        out.check_format(full_check=True)
    except (ValueError, TypeError) as exc:
        raise ModelFormatError(f"a sparse matrix of the model file is damaged ({exc})") from None
    return out


def _hashable(k):
    return tuple(_hashable(x) for x in k) if isinstance(k, list) else k


# ------------------------------------------------------------------------------- public API
def _estimator_class(name):
    entry = REGISTRY.get(name)
    if entry is None:  # (the registry: loading imports only the estimators' own modules)
        raise ModelFormatError(
            f"unknown estimator class {name!r}; a model file may hold one of {sorted(REGISTRY)}"
        )
    try:
        return entry.load()
    except (ImportError, AttributeError) as exc:
        raise ModelFormatError(
            f"the model is a {name}, which this svmgpu installation does not provide ({exc})"
        ) from None


def _check_savable(estimator):
    name = type(estimator).__name__
    entry = REGISTRY.get(name)
    ok = entry is not None and type(estimator).__module__ == entry.module
    if not ok:
        raise TypeError(
            f"save_model saves svmgpu estimators ({', '.join(sorted(REGISTRY))}), "
            f"got {type(estimator).__module__}.{type(estimator).__qualname__}"
        )
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)


def _encode_params(estimator, enc):
    params = estimator.get_params(deep=False)
    out = {}
    for k, v in params.items():
        if isinstance(v, (np.random.Generator, np.random.RandomState)):
            warnings.warn(
                f"{type(estimator).__name__}.{k} is a NumPy random generator, which a model file "
                "cannot hold; it is saved as None (the fitted model does not need it)",
                UserWarning, stacklevel=3,
            )
            v = None
        out[k] = enc.encode(v, f"{k} (parameter)")
    return out


def save_model(estimator, path, *, compress=False):
    """Save a fitted svmgpu estimator to a portable ``.npz`` model file.

    Parameters
    ----------
    estimator : fitted svmgpu estimator
        UniSVC, UniSVR, ReducedSVC, GreedySVC, LSSVC, PSVC, WPSVC or L2SVMPath, fitted on any
        device (arrays are copied to the host).
    path : str or os.PathLike
        The file to write (written as given: no suffix is added). An existing file is replaced
        atomically.
    compress : bool, default False
        Deflate the arrays (smaller files for data with repetitions; slower).

    Raises
    ------
    TypeError
        When ``estimator`` is not an svmgpu estimator, or one of its attributes cannot be
        encoded (the message names the attribute).
    sklearn.exceptions.NotFittedError
        When the estimator is not fitted.
    """
    _check_savable(estimator)
    enc = _Encoder()
    params = _encode_params(estimator, enc)
    param_names = set(estimator.get_params(deep=False))
    attributes = {}
    transient = getattr(estimator, "_transient_attributes", ())
    for k, v in vars(estimator).items():
        if k in param_names or k in transient:
            continue
        attributes[k] = enc.encode(v, k)
    import svmgpu

    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "svmgpu_version": getattr(svmgpu, "__version__", "unknown"),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "class": type(estimator).__name__,
        "module": type(estimator).__module__,
        "params": params,
        "attributes": attributes,
        "arrays": enc.index,
    }
    blob = np.frombuffer(json.dumps(meta, ensure_ascii=False, allow_nan=False).encode("utf-8"),
                         dtype=np.uint8)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".svmgpu-model-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compress else np.savez)(fh, **{_META: blob}, **enc.arrays)
        umask = os.umask(0)  # mkstemp makes the file 0600: give it the usual permissions
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: What a model file may expand to at most: its arrays' total size, when more than
#: ``_EXPAND_MIN`` bytes, may be at most ``_EXPAND_RATIO`` times the file's size (a file of
#: zeros compressed a thousandfold is refused before it is read, not after it filled memory).
_EXPAND_MIN = 64 * 2**20
_EXPAND_RATIO = 200


def _open(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"model file {path!r} does not exist")
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would be read forever
        raise ModelFormatError(f"{path!r} is not a regular file (a directory, FIFO or device); "
                               "an svmgpu model file is a .npz archive")
    if not zipfile.is_zipfile(path):
        raise ModelFormatError(f"{path!r} is not an svmgpu model file (not a .npz archive)")
    _check_expansion(path)
    try:
        npz = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - damaged headers raise many kinds of errors
        raise ModelFormatError(f"{path!r} is not an svmgpu model file "
                               f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile) or _META not in npz.files:
        raise ModelFormatError(f"{path!r} is not an svmgpu model file (no {_META} entry)")
    try:
        meta = json.loads(npz[_META].tobytes().decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - damaged member, bad UTF-8 or JSON, deep nesting
        raise ModelFormatError(f"{path!r}: unreadable model metadata ({type(exc).__name__}: "
                               f"{str(exc)[:200]})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFormatError(f"{path!r} is not an svmgpu model file")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{path!r} has model format version {version!r} (written by svmgpu "
            f"{meta.get('svmgpu_version')}); this svmgpu reads versions <= {FORMAT_VERSION}: "
            "upgrade svmgpu"
        )
    if version < 1:  # no release wrote one: older formats are refused, not guessed at
        raise ModelFormatError(
            f"{path!r} has model format version {version}, older than any this svmgpu reads "
            f"(1 to {FORMAT_VERSION}); refit and save the model again")
    for key, kind in (("class", str), ("params", dict), ("attributes", dict), ("arrays", dict)):
        if not isinstance(meta.get(key), kind):
            raise ModelFormatError(f"{path!r}: the model metadata lacks a valid {key!r} entry")
    return npz, meta


def _check_expansion(path):
    """Refuse an archive whose members would expand far beyond the file (see
    :data:`_EXPAND_RATIO`), from the sizes its directory declares."""
    try:
        with zipfile.ZipFile(path) as zf:
            total = sum(max(int(i.file_size), 0) for i in zf.infolist())
    except Exception as exc:  # noqa: BLE001 - a damaged directory raises BadZipFile, OSError,
        # ValueError or NotImplementedError (an unknown zip version): one error for all
        raise ModelFormatError(f"{path!r} is not an svmgpu model file ({type(exc).__name__}: "
                               f"{str(exc)[:200]})") from None
    size = os.path.getsize(path)
    if total > _EXPAND_MIN and total > _EXPAND_RATIO * size:
        raise ModelFormatError(
            f"{path!r} ({size:,} bytes) would expand to {total:,} bytes of arrays, more than "
            f"{_EXPAND_RATIO} times its size: refused before reading (a damaged or hostile "
            "file); an svmgpu model file's arrays are its fitted model")


def read_metadata(path) -> dict:
    """The JSON metadata of a model file (class, parameters, array index, versions), without
    building the estimator."""
    npz, meta = _open(path)
    npz.close()
    return meta


def load_model(path, *, device=None):
    """Load an estimator saved by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike
    device : {None, "cpu", "auto", "cuda", "cuda:N"}, default None
        Where the fitted arrays go (and so where predictions run). None: the host
        (``device_ == "cpu"``), as after unpickling.

    Returns
    -------
    estimator
        A fitted estimator of the saved class, with the saved parameters and attributes.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ModelFormatError
        When the file is not an svmgpu model file, was written by a later format version, or
        names a class outside the allow-list.
    """
    npz, meta = _open(path)
    try:
        est = _build(npz, meta)
    except RecursionError:
        raise ModelFormatError(f"{os.fspath(path)!r}: the model metadata is nested too "
                               "deeply") from None
    except ModelFormatError:
        raise
    except (TypeError, KeyError, AttributeError, ValueError, IndexError) as exc:
        # (a value of the wrong type or shape anywhere in the metadata: one error type for all)
        raise ModelFormatError(f"{os.fspath(path)!r}: malformed model metadata "
                               f"({type(exc).__name__}: {str(exc)[:200]})") from None
    finally:
        npz.close()
    if "device_" in vars(est):  # the arrays are on the host now
        est.device_ = "cpu"
    _validate_loaded(est, os.fspath(path))
    if getattr(est, "libsvm_scale_", None) is not None:
        warnings.warn(f"{os.fspath(path)!r} was trained by 'svmgpu train --scale' on scaled "
                      "features: scale new rows with svmgpu.cli.apply_scale(est.libsvm_scale_, "
                      "X) before predict (svmgpu predict does)", ScaledModelWarning,
                      stacklevel=2)
    if device is not None and hasattr(est, "to_device"):
        est.to_device(device)
    return est


def _validate_loaded(est, path):
    """A loaded model must be fitted, finite and consistent: it predicts one probe row (zeros)
    with the right output shape, instead of failing inside BLAS (wrong shapes) or predicting
    class 0 from NaN coefficients at the user's first call."""
    from sklearn.exceptions import NotFittedError  # noqa: PLC0415
    from sklearn.utils.validation import check_is_fitted  # noqa: PLC0415

    try:
        check_is_fitted(est)
    except NotFittedError:
        raise ModelFormatError(f"{path!r} holds no fitted {type(est).__name__}") from None
    n = getattr(est, "n_features_in_", None)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ModelFormatError(f"{path!r}: invalid n_features_in_ {n!r}")
    for k, v in vars(est).items():
        v = v.data if is_sparse(v) else v  # (a sparse matrix: its stored values)
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            raise ModelFormatError(f"{path!r}: the fitted attribute {k!r} holds NaN or infinity")
    _check_model_count(est, path)
    _check_shapes(est, path)
    probe = np.zeros((1, int(n)))
    try:
        out = est.decision_function(probe) if hasattr(est, "decision_function") else \
            est.predict(probe)
    except Exception as exc:  # noqa: BLE001 - any failure means inconsistent arrays
        raise ModelFormatError(
            f"{path!r}: the fitted arrays are inconsistent (a probe prediction failed: "
            f"{type(exc).__name__}: {str(exc)[:200]})") from None
    if out.shape[0] != 1:
        raise ModelFormatError(f"{path!r}: the model predicts {out.shape[0]} values for 1 row")


#: The shape of every fitted array, by dimension names shared within a model file (issue 26,
#: item 4: an array padded by a row loaded, and some predicted other values). ``d`` is
#: ``n_features_in_``, ``c`` the number of classes (1 for a regressor), ``k`` the number of
#: binary models, ``i`` 1 when the model fits an intercept (``fit_intercept``) else 0; any
#: other name is bound by the first array that has it and must agree everywhere else, and a
#: name starting with ``m.`` is bound per model (``models_[j]``). A path's entry lists the
#: allowed shapes, one per number of dimensions. Arrays not listed are not checked.
_SHAPES = {
    "classes_": [("c",)], "n_support_": [("c",)],
    "intercept_": [("k",)], "n_iter_": [("k",)], "converged_": [("k",)],
    "implicit_margin_": [("k",)], "best_lambda_": [("k",)], "best_C_": [("k",)],
    "support_": [("s",)], "support_vectors_": [("s", "d")], "pair_coef_": [("s", "k")],
    "factor_.landmarks": [("r",)], "factor_.landmark_X": [("r", "d")],
    "factor_.L_inv": [("r", "r")], "factor_._center": [("d",)], "X_fit_": [("r", "d")],
    "models_[*].rows": [("m.q",)],
    "models_[*].path.lambdas": [("m.p",)], "models_[*].path.loo_error": [("m.p",)],
    "models_[*].path.n_active": [("m.p",)], "models_[*].path.intercepts": [("m.p",)],
    "models_[*].support": [("m.q",)], "models_[*].X_support": [("m.q", "d")],
    "models_[*].dual_coef": [("m.q",)], "models_[*].sample_weights": [("n",)],
    "libsvm_scale_": [("2", "d")],
    "region_centers_": [("g", "d")], "region_starts_": [("g+1",)],
    "region_intercept_": [("g", "k")],
}
#: Per estimator: the shapes that differ from :data:`_SHAPES` (and :func:`_fit_shapes`).
_ESTIMATOR_SHAPES = {
    "SVC": {"dual_coef_": [("c-1", "s")]},
    "SVR": {"dual_coef_": [("1", "s")]},
    "GreedySVC": {"dual_coef_": [("k", "s")]},
    "UniSVC": {"coef_": [("r",), ("k", "r")], "support_": [("v",)]},
    "UniSVR": {"coef_": [("r",), ("k", "r")], "support_": [("v",)]},
    "ReducedSVC": {"coef_": [("k", "s")], "models_[*].coef": [("s+i",)]},
    "LSSVC": {"coef_": [("k", "s")], "models_[*].coef": [("s+i",)]},
}


def _fit_shapes(est):
    """The shapes that depend on the fit: UniSVM's coefficients are β over the factor's rank,
    or α over a model's rows (the full kernel of a pair); the proximal SVMs' ``[w, b]`` are
    over the features (linear) or the reduced set."""
    name = type(est).__name__
    if name in ("UniSVC", "UniSVR"):
        rows = any(isinstance(m, dict) and m.get("rows") is not None
                   and getattr(est, "factor_", None) is None
                   for m in getattr(est, "models_", []))
        return {"models_[*].coef": [("m.q",)] if rows else [("r",)]}
    if name in ("PSVC", "WPSVC"):
        w = "d" if getattr(est, "support_vectors_", None) is None else "s"
        return {"models_[*].coef": [(f"{w}+1",)], "coef_": [("k", w)]}
    return {}


def _check_shapes(est, path):
    """Every fitted array has the shape its dimensions give (:data:`_SHAPES`)."""
    from sklearn.base import is_classifier  # noqa: PLC0415

    classes = getattr(est, "classes_", None)
    models = getattr(est, "models_", None)
    fixed = {"d": int(est.n_features_in_), "i": int(bool(getattr(est, "fit_intercept", False))),
             "c": len(classes) if is_classifier(est) and classes is not None else 1}
    fixed["k"] = len(models) if isinstance(models, list) else \
        _n_binary_models(fixed["c"], getattr(est, "pairs_", None))
    spec = {**_SHAPES, **_ESTIMATOR_SHAPES.get(type(est).__name__, {}), **_fit_shapes(est)}
    bound = dict(fixed)

    def size(expr, scope):
        total, sign = 0, 1
        for tok in expr.replace("-", " - ").replace("+", " + ").split():
            if tok in "+-":
                sign = 1 if tok == "+" else -1
                continue
            if tok.isdigit():
                total += sign * int(tok)
                continue
            name = f"{scope}{tok}" if tok.startswith("m.") else tok
            if name not in bound:
                return None  # unbound (a free name, bound by this array)
            total += sign * bound[name]
        return total

    def check(where, value, shapes, scope=""):
        shape = getattr(value, "shape", None)
        if shape is None:
            return
        for dims in shapes:
            if len(dims) != len(shape):
                continue
            for dim, n in zip(dims, shape):
                want = size(dim, scope)
                if want is None:  # bind the free name
                    bound[f"{scope}{dim}" if dim.startswith("m.") else dim] = int(n)
                elif want != int(n):
                    raise ModelFormatError(
                        f"{path!r}: the fitted array {where} has shape {tuple(shape)}, which "
                        f"disagrees with the model's other arrays (its dimension {dim!r} is "
                        f"{want})")
            return
        raise ModelFormatError(f"{path!r}: the fitted array {where} has {len(shape)} "
                               f"dimensions (expected {' or '.join(str(len(d)) for d in shapes)})")

    for key, shapes in spec.items():
        if key.startswith("models_[*]."):
            fields = key.split(".")[1:]
            for j, model in enumerate(models if isinstance(models, list) else []):
                value = model
                for f in fields:
                    value = value.get(f) if isinstance(value, dict) else None
                if value is not None:
                    where = f"models_[{j}]" + "".join(f"[{f!r}]" for f in fields)
                    check(where, value, shapes, scope=f"{j}:")
            continue
        value = est
        for f in key.split("."):
            value = getattr(value, f, None)
        if value is not None:
            check(key, value, shapes)
    rows = [np.asarray(m["rows"]) for m in (models if isinstance(models, list) else [])
            if isinstance(m, dict) and m.get("rows") is not None]
    X_fit = getattr(est, "X_fit_", None)
    if rows and X_fit is not None and not np.array_equal(
            np.unique(np.concatenate(rows)), np.arange(X_fit.shape[0])):
        raise ModelFormatError(f"{path!r}: the binary models' rows do not index the "
                               f"{X_fit.shape[0]} rows of X_fit_ (each pair's rows, together "
                               "all of them)")
    n_sv, support = getattr(est, "n_support_", None), getattr(est, "support_", None)
    if n_sv is not None and support is not None and getattr(support, "ndim", 0) == 1 \
            and int(np.sum(np.asarray(n_sv))) != support.shape[0]:
        raise ModelFormatError(f"{path!r}: n_support_ counts {int(np.sum(np.asarray(n_sv)))} "
                               f"support vectors, support_ lists {support.shape[0]}")


def _n_binary_models(n_classes, pairs):
    """Binary models of ``n_classes`` classes: one for two (or a regressor's one), one per
    pair (one-vs-one, ``pairs``), else one per class."""
    return 1 if n_classes <= 2 else len(pairs) if pairs is not None else n_classes


def _check_model_count(est, path):
    """A classifier's ``classes_`` and its binary models agree: one model for two classes,
    one per class (one-vs-rest) or one per pair (one-vs-one, ``pairs_``); a file without
    ``classes_`` (or with classes the models do not cover) would predict the wrong labels."""
    from sklearn.base import is_classifier  # noqa: PLC0415

    if not is_classifier(est):
        return
    classes = getattr(est, "classes_", None)
    if classes is None or getattr(classes, "ndim", 0) != 1 or len(classes) < 2:
        raise ModelFormatError(f"{path!r}: a classifier without a valid classes_ (at least two "
                               "labels)")
    k = len(classes)
    pairs = getattr(est, "pairs_", None)
    models = getattr(est, "models_", None)
    if pairs is not None and (len(pairs) != k * (k - 1) // 2
                              or any(not (0 <= i < j < k) for i, j in pairs)):
        raise ModelFormatError(f"{path!r}: pairs_ does not list the {k * (k - 1) // 2} pairs of "
                               f"its {k} classes")
    if isinstance(models, list):
        want = _n_binary_models(k, pairs)
        if len(models) != want:
            raise ModelFormatError(f"{path!r}: {len(models)} binary models for {k} classes "
                                   f"(expected {want})")


def _build(npz, meta):
    """The estimator described by a model file's metadata and arrays."""
    cls = _estimator_class(meta.get("class"))
    dec = _Decoder(npz, meta.get("arrays", {}))
    params = {k: dec.decode(v) for k, v in meta["params"].items()}
    valid = set(cls().get_params(deep=False))
    unknown = sorted(set(params) - valid)
    if unknown:
        raise ModelFormatError(
            f"the model's {cls.__name__} parameters {unknown} are unknown to this svmgpu "
            f"version; it was saved by svmgpu {meta.get('svmgpu_version')}"
        )
    est = cls(**params)
    try:  # the estimator's own constraints: a file cannot carry C=-1 or gamma='evil'
        est._validate_params()
    except ValueError as exc:
        raise ModelFormatError(f"the model's parameters are invalid: {exc}") from None
    for k, v in meta["attributes"].items():
        if not (isinstance(k, str) and k.isidentifier()) or k.startswith("__") \
                or callable(getattr(cls, k, None)):
            raise ModelFormatError(f"refusing attribute name {k!r} in the model metadata")
        setattr(est, k, dec.decode(v))
    return est
