"""Test helpers shared by the test suite (and usable by downstream projects)."""

from __future__ import annotations

# NumPy: the comparisons of a test run on the host (after the namespace/device/dtype checks).
import numpy as np

from svmgpu.backend import array_device, get_device, get_namespace, numpy_dtype, to_numpy

#: Default (rtol, atol) per dtype name for comparisons with a float64 reference.
TOLERANCES = {"float64": (1e-10, 1e-12), "float32": (2e-5, 2e-6)}


def assert_allclose(actual, expected, *, namespace=None, device=None, dtype=None, shape=None,
                    rtol=None, atol=None, err_msg=""):
    """Check namespace, device, dtype and shape of ``actual``, then its values.

    Parameters
    ----------
    actual : array
    expected : array-like
        The reference (converted to NumPy float64).
    namespace : {"numpy", "cupy", "array_api_strict"}, optional
        Expected kind of ``actual``.
    device : str or Device, optional
    dtype : str or dtype, optional
        Expected dtype of ``actual``; also picks the default tolerances.
    shape : tuple, optional
    rtol, atol : float, optional
        Override the dtype-aware tolerances of :data:`TOLERANCES`.
    """
    if namespace is not None:
        name = get_namespace(actual).__name__
        assert namespace in name, f"expected a {namespace} array, got namespace {name}"
    if device is not None and namespace != "array_api_strict":
        assert array_device(actual) == get_device(device), (
            f"expected device {device}, got {array_device(actual)}"
        )
    dt_name = numpy_dtype(actual.dtype).name
    if dtype is not None:
        want = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        assert dt_name == want, f"expected dtype {want}, got {dt_name}"
    if shape is not None:
        assert tuple(actual.shape) == tuple(shape), f"expected shape {shape}, got {actual.shape}"
    r0, a0 = TOLERANCES.get(dt_name, (1e-7, 1e-9))
    a = np.asarray(to_numpy(actual), dtype=np.float64) if namespace != "array_api_strict" else \
        np.asarray(actual.__array__() if hasattr(actual, "__array__") else actual, dtype=np.float64)
    np.testing.assert_allclose(a, np.asarray(to_numpy(expected), dtype=np.float64),
                               rtol=r0 if rtol is None else rtol, atol=a0 if atol is None else atol,
                               err_msg=err_msg)
