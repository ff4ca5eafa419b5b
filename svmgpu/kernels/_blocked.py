"""Row-blocked kernel products that never hold more than a byte budget."""

from __future__ import annotations

from svmgpu.backend import array_device, block_rows, get_namespace, resolve_budget

#: Buffers of one block row alive at once while a block is evaluated (the block, the
#: exponent/temporary and a product); used to turn a byte budget into block rows.
_BLOCK_BUFFERS = 3


def iter_kernel_blocks(kernel, X, Z, *, memory_budget=None, max_rows=None):
    """Yield ``(start, stop, K[start:stop])`` for row blocks of ``K(X, Z)``.

    Parameters
    ----------
    kernel : Kernel
    X : array of shape (n_x, n_features)
    Z : array of shape (n_z, n_features)
    memory_budget : int or str, optional
        Bytes the blocks may use (default: half the free memory of X's device).
    max_rows : int, optional
        Upper bound on the rows of a block.

    Raises
    ------
    MemoryError
        When the budget cannot hold a single row of the block.
    """
    xp = get_namespace(X, Z)
    budget = resolve_budget(memory_budget, array_device(X))
    n_z = Z.shape[0]
    itemsize = X.dtype.itemsize if hasattr(X.dtype, "itemsize") else 8
    # The prepared Z (n_z × (d + 2)) lives for the whole iteration: charge it to the budget.
    fixed = n_z * (Z.shape[1] + 2) * itemsize * 2
    rows = block_rows(n_z + X.shape[1] + 2, itemsize, budget - fixed if budget > fixed else 0,
                      n_buffers=_BLOCK_BUFFERS, max_rows=max_rows)
    c = kernel.center_of(Z, xp=xp)
    column_block = kernel.against(kernel.prepare(Z, c, xp=xp), xp=xp)  # Z's side once
    n = X.shape[0]
    for s in range(0, n, rows):
        e = min(s + rows, n)
        yield s, e, column_block(kernel.prepare(X[s:e, ...], c, xp=xp))


def kernel_matvec(kernel, X, Z, v, *, memory_budget=None):
    """``K(X, Z) @ v`` computed block by block.

    Parameters
    ----------
    kernel : Kernel
    X : array of shape (n_x, n_features)
    Z : array of shape (n_z, n_features)
    v : array of shape (n_z,) or (n_z, k)
    memory_budget : int or str, optional

    Returns
    -------
    array of shape (n_x,) or (n_x, k)
    """
    xp = get_namespace(X, Z, v)
    if v.shape[0] != Z.shape[0]:
        raise ValueError(f"v has {v.shape[0]} rows but Z has {Z.shape[0]}")
    out_shape = (X.shape[0],) + tuple(v.shape[1:])
    out = xp.empty(out_shape, dtype=v.dtype, device=getattr(v, "device", None))
    for s, e, K in iter_kernel_blocks(kernel, X, Z, memory_budget=memory_budget):
        out[s:e, ...] = xp.matmul(K, v)
    return out
