"""Backends for the test suite: NumPy always, CuPy under the ``gpu`` marker.

On a machine without a usable GPU the ``gpu`` tests are skipped. Where a GPU is expected
(``SVMGPU_EXPECT_GPU=1``, set by ``.ci/gpu``), CuPy that cannot be used is an error instead, so
that a broken CUDA install never passes as "51 skipped".
"""

import os

import pytest

from svmgpu.backend import cupy_available
from svmgpu.backend._device import _import_cupy
from svmgpu.testing import backend_device, backend_params

BACKENDS = backend_params()  # numpy, strict-device1, cupy (gpu)


def pytest_collection_modifyitems(config, items):
    if cupy_available():
        return
    if os.environ.get("SVMGPU_EXPECT_GPU") == "1":
        raise pytest.UsageError(
            f"SVMGPU_EXPECT_GPU=1 but {_import_cupy()[1]}: the gpu tests cannot run here "
            "(install the CUDA extra, or unset SVMGPU_EXPECT_GPU on a machine without a GPU)"
        )
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU (run `pytest -m gpu` on a GPU machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def device(request):
    """A :class:`svmgpu.backend.Device` for each backend of the matrix."""
    return backend_device(request.param)


@pytest.fixture
def xp(device):
    return device.xp
