"""Moving nested containers of arrays (fitted models) between devices."""

from __future__ import annotations

import dataclasses

import array_api_compat

from svmgpu.backend._device import asarray, get_device, is_foreign_array, to_device, to_host
from svmgpu.backend._sparse import is_sparse


def tree_to_device(obj, device):
    """Return ``obj`` with every array (NumPy, CuPy, other array-API namespaces; a sparse
    matrix stays sparse: SciPy's on the CPU, CuPy's on a GPU) inside dicts, lists, tuples and
    dataclass instances moved to ``device``; other leaves are returned unchanged. Moving to
    ``"cpu"`` is a deliberate host copy (saving, pickling, ``to_device``)."""
    if is_sparse(obj):  # (a sparse fit's support vectors)
        return asarray(obj, device=device)
    if array_api_compat.is_numpy_array(obj) or array_api_compat.is_cupy_array(obj) or \
            is_foreign_array(obj):
        if get_device(device).kind == "cpu":
            return to_host(obj, why="fitted arrays saved, pickled or moved to the host")
        return to_device(obj, device)
    if isinstance(obj, dict):
        return {k: tree_to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [tree_to_device(v, device) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(tree_to_device(v, device) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: tree_to_device(getattr(obj, f.name), device)
                   for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **changes)
    return obj
