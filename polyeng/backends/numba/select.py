"""select as a NUMBA kernel: ``cond ? then : else_`` over broadcast strides.

``then`` and ``else_`` are promoted to the output dtype with numpy (the BASIC rule). Each
operand is then described by its own contiguous data plus element strides against the output
shape (0 along broadcast axes); axes along which all three operands stay contiguous are merged,
so the common cases run as one flat loop over rows of the last (merged) axis. Values are chosen
as unsigned integers of their width: both branches are loaded and one is kept bit for bit, so
the unselected branch can never leak a NaN and every dtype is exact.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._broadcast import element_strides, merged_layout
from ._runtime import jit, launch
from ._storage import read_only

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_TASK_ELEMENTS = 32 * 1024


@jit(parallel=True)
def _select(cond, then, other, out, shape, strides, rows_per_task):
    """``strides[0:3]`` are cond's, then's and other's element strides over ``shape`` (the output's
    merged shape, last axis innermost); the innermost strides are 0 or 1. A branch broadcast along
    the inner axis (one value: an attention mask's fill) has its own loop, which still vectorizes
    (the general one gathers: 2-9x slower)."""
    rank = shape.size
    length = shape[rank - 1]
    rows = out.size // length
    sc, st, so = strides[0, rank - 1], strides[1, rank - 1], strides[2, rank - 1]
    contiguous = sc == 1 and st == 1 and so == 1
    for task in prange((rows + rows_per_task - 1) // rows_per_task):
        row = task * rows_per_task
        stop = min(row + rows_per_task, rows)
        index = np.zeros(rank, np.int64)
        rest = row
        for d in range(rank - 2, -1, -1):
            q = rest // shape[d]
            index[d] = rest - q * shape[d]
            rest = q
        c0 = t0 = o0 = 0
        for d in range(rank - 1):
            c0 += index[d] * strides[0, d]
            t0 += index[d] * strides[1, d]
            o0 += index[d] * strides[2, d]
        while row < stop:
            dst = out[row * length:(row + 1) * length]
            c = cond[c0:c0 + length]
            t = then[t0:t0 + length]
            e = other[o0:o0 + length]
            if contiguous:   # slice views and unit steps: the loop becomes vector blends
                for k in range(length):
                    a, b = t[k], e[k]   # both loaded unconditionally: a blend, not a branch
                    dst[k] = a if c[k] else b
            elif sc == 1 and st == 0 and so == 1:   # a value for ``then`` (a mask's fill): still blends
                a = t[0]
                for k in range(length):
                    b = e[k]
                    dst[k] = a if c[k] else b
            elif sc == 1 and st == 1 and so == 0:   # a value for ``else_``
                b = e[0]
                for k in range(length):
                    a = t[k]
                    dst[k] = a if c[k] else b
            else:            # some operand is broadcast along the inner axis (step 0)
                for k in range(length):
                    dst[k] = t[k * st] if c[k * sc] else e[k * so]
            row += 1
            d = rank - 2
            while d >= 0:
                index[d] += 1
                c0 += strides[0, d]
                t0 += strides[1, d]
                o0 += strides[2, d]
                if index[d] < shape[d]:
                    break
                c0 -= shape[d] * strides[0, d]
                t0 -= shape[d] * strides[1, d]
                o0 -= shape[d] * strides[2, d]
                index[d] = 0
                d -= 1


def select(p, cond, then, else_, auto_broadcast):
    dtype, shape = p.dtype, p.shape
    out = np.empty(shape, dtype)
    if out.size == 0:
        return out
    bits = _BITS[dtype.itemsize]
    operands = [np.ascontiguousarray(cond).view(np.uint8),
                np.ascontiguousarray(then.astype(dtype, copy=False)).view(bits),
                np.ascontiguousarray(else_.astype(dtype, copy=False)).view(bits)]
    merged_shape, strides = merged_layout(shape, [element_strides(a, shape) for a in operands])
    length = merged_shape[-1]
    launch(_select, out.nbytes, *(read_only(a.reshape(-1)) for a in operands),
           out.view(bits).reshape(-1), np.array(merged_shape, np.int64), np.array(strides, np.int64),
           max(1, _TASK_ELEMENTS // length))
    return out
