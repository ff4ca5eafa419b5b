"""Backends for the test suite: NumPy always, CuPy under the ``gpu`` marker."""

import pytest

from svmgpu.backend import cupy_available, get_device

BACKENDS = [
    pytest.param("cpu", id="numpy"),
    pytest.param("cuda", id="cupy", marks=pytest.mark.gpu),
]


def pytest_collection_modifyitems(config, items):
    if cupy_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU (run `pytest -m gpu` on a GPU machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def device(request):
    """A :class:`svmgpu.backend.Device` for each available backend."""
    return get_device(request.param)


@pytest.fixture
def xp(device):
    return device.xp
