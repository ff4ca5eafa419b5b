"""Test helpers shared by the test suite (and usable by downstream projects)."""

from __future__ import annotations

# NumPy: the comparisons of a test run on the host (after the namespace/device/dtype checks).
import numpy as np

from svmgpu.backend import (
    Device,
    array_device,
    get_device,
    get_namespace,
    numpy_dtype,
    to_host,
)

#: The backends every test matrix runs: NumPy; array-api-strict arrays on its second device
#: ``Device("device1")``, the CPU stand-in for a GPU (mixing devices and converting to NumPy
#: raise there); CuPy under the ``gpu`` marker. Names for :func:`backend_device`.
BACKEND_NAMES = ("numpy", "strict-device1", "cupy")


def backend_device(name: str) -> Device:
    """The :class:`~svmgpu.backend.Device` of a backend of :data:`BACKEND_NAMES`."""
    if name == "numpy":
        return get_device("cpu")
    if name == "cupy":
        return get_device("cuda")
    if name == "strict-device1":
        import array_api_strict  # noqa: PLC0415 - a test dependency

        return Device("array_api", namespace=array_api_strict,
                      native=array_api_strict.Device("device1"))
    raise ValueError(f"unknown backend {name!r}; valid: {list(BACKEND_NAMES)}")


def backend_params():
    """``pytest.param`` objects for :data:`BACKEND_NAMES` (CuPy marked ``gpu``)."""
    import pytest  # noqa: PLC0415 - a test dependency

    return [pytest.param(n, id=n, marks=(pytest.mark.gpu,) if n == "cupy" else ())
            for n in BACKEND_NAMES]


def namespace_name(device) -> str:
    """The namespace name a backend's results have ("numpy", "cupy", "array_api_strict"), for
    :func:`assert_allclose`'s ``namespace``."""
    if device.kind == "cpu":
        return "numpy"
    if device.kind == "cuda":
        return "cupy"
    return device.xp.__name__


def host(x):
    """A NumPy copy of a result of any backend, for a test's comparisons."""
    return to_host(x, why="a test compares results on the host")

#: Default (rtol, atol) per dtype name for comparisons with a float64 reference.
TOLERANCES = {"float64": (1e-10, 1e-12), "float32": (2e-5, 2e-6)}


def _check_array(actual, *, namespace, device, dtype, shape) -> str:
    """Check namespace, device, dtype and shape of ``actual``; return its dtype name (Python
    scalars and lists, e.g. objective histories and counts, as NumPy sees them)."""
    if namespace is not None:
        name = get_namespace(actual).__name__
        assert namespace in name, f"expected a {namespace} array, got namespace {name}"
    if device is not None:
        assert array_device(actual) == get_device(device), (
            f"expected device {device}, got {array_device(actual)}"
        )
    dt_name = numpy_dtype(actual.dtype).name if hasattr(actual, "dtype") else \
        np.asarray(actual).dtype.name
    if dtype is not None:
        want = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        assert dt_name == want, f"expected dtype {want}, got {dt_name}"
    if shape is not None:
        assert tuple(actual.shape) == tuple(shape), f"expected shape {shape}, got {actual.shape}"
    return dt_name


def assert_allclose(actual, expected, *, namespace=None, device=None, dtype=None, shape=None,
                    rtol=None, atol=None, err_msg=""):
    """Check namespace, device, dtype and shape of ``actual``, then its values.

    Parameters
    ----------
    actual : array
    expected : array-like
        The reference (converted to NumPy float64).
    namespace : {"numpy", "cupy", "array_api_strict"}, optional
        Expected kind of ``actual`` (values of every kind, array-api-strict on any of its
        devices included, are compared after :func:`host`).
    device : str or Device, optional
    dtype : str or dtype, optional
        Expected dtype of ``actual``; also picks the default tolerances.
    shape : tuple, optional
    rtol, atol : float, optional
        Override the dtype-aware tolerances of :data:`TOLERANCES`.
    """
    dt_name = _check_array(actual, namespace=namespace, device=device, dtype=dtype, shape=shape)
    r0, a0 = TOLERANCES.get(dt_name, (1e-7, 1e-9))
    a = np.asarray(host(actual), dtype=np.float64)
    np.testing.assert_allclose(a, np.asarray(host(expected), dtype=np.float64),
                               rtol=r0 if rtol is None else rtol, atol=a0 if atol is None else atol,
                               err_msg=err_msg)


def assert_array_equal(actual, expected, *, namespace=None, device=None, dtype=None, shape=None,
                       err_msg=""):
    """Check namespace, device, dtype and shape of ``actual`` as :func:`assert_allclose` does,
    then that its values equal ``expected`` exactly (labels, indices, counts, masks)."""
    _check_array(actual, namespace=namespace, device=device, dtype=dtype, shape=shape)
    np.testing.assert_array_equal(np.asarray(host(actual)), np.asarray(host(expected)),
                                  err_msg=err_msg)
