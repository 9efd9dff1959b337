"""fused_softmax on NUMBA: ``softmax(x + mask)`` with NaNs filled, one pass over each row.

Along the last axis of f32 or f64 data, each row of x is reduced as ``softmax.py``'s ``_rows``
reduces it (maximum ignoring NaN, exps of the shifted values into a scratch row, one reciprocal
of their sum) with its mask row added to each element as it is read (in x's dtype, as ``add``
does), and is written once, with every NaN replaced by the fill. The mask is read through a row index per
row of x, so a mask broadcast over heads or query rows is never expanded. Other axes and 16-bit
storage run NUMBA's add, softmax, isnan and select kernels one after another.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from .. import _fused
from . import arithmetic, logical, select, softmax
from ._runtime import jit, launch, threads_for
from ._storage import read_only
from .softmax import _exp_nonpos, _maxnum

_composed = _fused.composed_softmax(arithmetic, softmax, logical, select)


@jit(parallel=True)
def _masked_rows(x, mask, mask_row, out, scratch, fill, has_mask, has_fill):
    rows, n = x.shape
    chunks = scratch.shape[0]
    for c in prange(chunks):
        buf = scratch[c]
        for r in range(c * rows // chunks, (c + 1) * rows // chunks):
            row, dst = x[r], out[r]
            extra = mask[mask_row[r] if has_mask else 0]
            m = row[0] + extra[0] if has_mask else row[0]
            total = np.float32(0)   # typed f64 for f64 rows by unification with the sum
            # each loop written out for both cases, so that LLVM vectorizes it
            if has_mask:
                for j in range(n):
                    m = _maxnum(m, row[j] + extra[j])
                for j in range(n):
                    e = _exp_nonpos((row[j] + extra[j]) - m)
                    buf[j] = e
                    total += e
            else:
                for j in range(n):
                    m = _maxnum(m, row[j])
                for j in range(n):
                    e = _exp_nonpos(row[j] - m)
                    buf[j] = e
                    total += e
            inv = np.float32(1) / total   # f32 for f32 rows (an int 1 would make it f64)
            if has_fill:
                for j in range(n):
                    v = buf[j] * inv
                    dst[j] = fill if v != v else v
            else:
                for j in range(n):
                    dst[j] = buf[j] * inv


def _mask_rows(p, mask, x_shape):
    """(the mask as a C-contiguous (mask rows, n) array, the mask row of each row of x), the
    index kept on the call's prepared facts (shapes only)."""
    n = x_shape[-1]
    lead = (1,) * (len(x_shape) - len(mask.shape)) + tuple(mask.shape)
    rows_here = lead[:-1]
    dense = np.ascontiguousarray(np.broadcast_to(mask.reshape(lead), rows_here + (n,))).reshape(-1, n)
    index = p.__dict__.get("mask rows")
    if index is None:
        count = math.prod(rows_here)
        index = np.broadcast_to(np.arange(count, dtype=np.int64).reshape(rows_here), x_shape[:-1]).reshape(-1)
        index = p.__dict__["mask rows"] = np.ascontiguousarray(index)
    return dense, index


def fused_softmax(p, x, mask, axis, nan_fill):
    if (x.size == 0 or axis != x.ndim - 1 or x.dtype not in (np.float32, np.float64)
            or tuple(p.shape) != tuple(x.shape)):   # a mask that grows x: add's broadcast first
        return _composed(p, x, mask, axis, nan_fill)
    n = x.shape[-1]
    rows = x.size // n
    src = np.ascontiguousarray(x).reshape(rows, n)
    out = np.empty(x.shape, x.dtype)
    if mask is None:
        dense, index = src[:1], np.zeros(1, np.int64)
    else:
        dense, index = _mask_rows(p, mask, x.shape)
    threads = threads_for(out.nbytes)
    chunks = min(rows, 4 * threads)
    scratch = np.empty((chunks, n), x.dtype)
    fill = x.dtype.type(0 if nan_fill is None else nan_fill)
    launch(_masked_rows, out.nbytes, read_only(src), read_only(dense), read_only(index), out.reshape(rows, n),
           scratch, fill, mask is not None, nan_fill is not None)
    return out
