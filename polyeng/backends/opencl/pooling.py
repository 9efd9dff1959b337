"""avg_pool2d/3d and max_pool2d/3d on OPENCL (pooling.cl).

The window geometry comes from ``polyeng.ops.pooling``; 2-D pooling runs the 3-D kernels with a
depth of 1. Float pooling (avg, max) runs 16 adjacent output columns per work item on vectors,
with the geometry as scalar arguments and the average divisor table uploaded. Max pooling
accepts every dtype: ints and bool run one output per work item on host tap-range tables,
comparing as themselves; the winning element is copied unchanged for every dtype.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from ...ops.pooling import avg_divisor, geometry, max_window_bounds
from . import _enqueue as enqueue

# integer comparison key per dtype (pooling.cl's INT_KEY); bool compares as uchar
_INT_KEY = {dt.int8: 1, dt.uint8: 2, dt.bool_: 2, dt.int32: 3, dt.int64: 4}


def _tables(g, bounds, dilation):
    """(dims, lo, hi) for pooling.cl from ``bounds(dim)`` -> (lo, hi) per spatial dim; 2-D gets a depth of 1."""
    spatial, out, dil = list(g.spatial), list(g.out), list(dilation)
    lows, highs = [], []
    for dim in range(len(spatial)):
        low, high = bounds(dim)
        lows.append(low)
        highs.append(high)
    if len(spatial) == 2:
        spatial, out, dil = [1] + spatial, [1] + out, [1] + dil
        lows.insert(0, np.zeros(1, np.int64))
        highs.insert(0, np.ones(1, np.int64))
    dims = np.array(spatial + out + dil, np.int64)
    return dims, np.concatenate(lows).astype(np.int64), np.concatenate(highs).astype(np.int64)


def _three(values, pad) -> list:
    """Per-dimension values for the 3-D kernels: 2-D pooling gets ``pad`` for the depth."""
    return ([pad] if len(values) == 2 else []) + [int(v) for v in values]


def _launch16(name, g, planes, options, buffers, extra, tail=()) -> None:
    """The 16-column float kernels: geometry as scalar arguments, one item per 16 output columns."""
    out_d, out_h, out_w = _three(g.out, 1)
    blocks = -(-out_w // 16)
    lx, ly = enqueue.group(blocks, out_h, widest=16, items=64)
    geometry_args = _three(g.spatial, 1) + [out_d, out_h, out_w, planes] + _three(g.stride, 1) + _three(g.padding, 0)
    enqueue.run("pooling.cl", name, options, (blocks, out_h, planes * out_d), *buffers,
               *[np.int64(v) for v in geometry_args + extra], *tail, local=(lx, ly, 1))


def avg_pool2d(p, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    tx, stay = enqueue.on_device(x)
    g = geometry(tx.shape, kernel_size, stride, padding, None, ceil_mode)
    out = enqueue.empty(tuple(tx.shape[:tx.ndim - len(g.out)]) + g.out, tx.dtype, not stay)
    if out.size:
        divisor = avg_divisor(g, count_include_pad, divisor_override).astype(np.int64).ravel()
        planes = out.size // math.prod(g.out)
        _launch16("avg_pool16", g, planes, enqueue.float_options(tx.dtype), (tx.buffer, out.buffer),
                  _three(g.kernel, 1), (enqueue.upload(divisor),))
    return enqueue.result(out, stay)


def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    tx, stay = enqueue.on_device(x)
    g = geometry(tx.shape, kernel_size, stride, padding, dilation, ceil_mode)
    shape = tuple(tx.shape[:tx.ndim - len(g.out)]) + g.out
    out = enqueue.empty(shape, tx.dtype, not stay)
    index = enqueue.empty(shape, np.int64, not stay) if return_indices else None
    if out.size:
        dtype = np.dtype(tx.dtype)
        options = enqueue.word_options(dtype)
        options += (f"-DINT_KEY={_INT_KEY[dtype]}",) if dtype in _INT_KEY else enqueue.float_options(dtype)
        buffers = (tx.buffer, out.buffer)
        if return_indices:
            options += ("-DWITH_INDEX=1",)
            buffers += (index.buffer,)
        if dtype in _INT_KEY:
            def bounds(dim):
                return max_window_bounds(g.spatial[dim], g.out[dim], g.kernel[dim], g.stride[dim],
                                         g.padding[dim], g.dilation[dim])
            dims, lo, hi = _tables(g, bounds, g.dilation)
            enqueue.run("pooling.cl", "max_pool", options, out.size, *buffers, np.uint64(out.size),
                       enqueue.upload(dims), enqueue.upload(lo), enqueue.upload(hi))
        else:
            _launch16("max_pool16", g, out.size // math.prod(g.out), options, buffers,
                      _three(g.dilation, 1) + _three(g.kernel, 1))
    values = enqueue.result(out, stay)
    return (values, enqueue.result(index, stay)) if return_indices else values


# 2-D and 3-D take the same keyword arguments: one function serves both ranks.
avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
