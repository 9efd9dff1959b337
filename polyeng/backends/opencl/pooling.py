"""avg_pool2d/3d and max_pool2d/3d on OPENCL (pooling.cl).

The window geometry comes from ``polyeng.ops.pooling``: the host turns it into per-dimension
tap ranges (and the average divisor table) and uploads them; 2-D pooling runs the 3-D
kernels with a depth of 1. Max pooling accepts every dtype: floats compare as ``real``,
ints and bool as themselves, and the winning element is copied unchanged.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from ...ops.pooling import avg_divisor, avg_window_bounds, geometry, max_window_bounds
from . import launch

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


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    tx, stay = launch.on_device(x)
    g = geometry(tx.shape, kernel_size, stride, padding, None, ceil_mode)
    out = launch.empty(tuple(tx.shape[:tx.ndim - len(g.out)]) + g.out, tx.dtype, not stay)
    if out.size:
        def bounds(dim):
            _, _, valid_start, valid_end = avg_window_bounds(g.spatial[dim], g.out[dim], g.kernel[dim],
                                                             g.stride[dim], g.padding[dim])
            return valid_start, valid_end
        dims, lo, hi = _tables(g, bounds, (1,) * len(g.out))
        divisor = avg_divisor(g, count_include_pad, divisor_override).astype(np.int64).ravel()
        launch.run("pooling.cl", "avg_pool", launch.float_options(tx.dtype), out.size,
                   tx.buffer, out.buffer, np.uint64(out.size), launch.upload(dims), launch.upload(lo),
                   launch.upload(hi), launch.upload(divisor))
    return launch.result(out, stay)


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    tx, stay = launch.on_device(x)
    g = geometry(tx.shape, kernel_size, stride, padding, dilation, ceil_mode)
    shape = tuple(tx.shape[:tx.ndim - len(g.out)]) + g.out
    out = launch.empty(shape, tx.dtype, not stay)
    index = launch.empty(shape, np.int64, not stay) if return_indices else None
    if out.size:
        def bounds(dim):
            return max_window_bounds(g.spatial[dim], g.out[dim], g.kernel[dim], g.stride[dim], g.padding[dim],
                                     g.dilation[dim])
        dims, lo, hi = _tables(g, bounds, g.dilation)
        dtype = np.dtype(tx.dtype)
        options = launch.word_options(dtype)
        options += (f"-DINT_KEY={_INT_KEY[dtype]}",) if dtype in _INT_KEY else launch.float_options(dtype)
        buffers = (tx.buffer, out.buffer)
        if return_indices:
            options += ("-DWITH_INDEX=1",)
            buffers += (index.buffer,)
        launch.run("pooling.cl", "max_pool", options, out.size, *buffers, np.uint64(out.size),
                   launch.upload(dims), launch.upload(lo), launch.upload(hi))
    values = launch.result(out, stay)
    return (values, launch.result(index, stay)) if return_indices else values


# 2-D and 3-D take the same keyword arguments: one function serves both ranks.
KERNELS = {"avg_pool2d": _avg_pool, "avg_pool3d": _avg_pool, "max_pool2d": _max_pool, "max_pool3d": _max_pool}
