"""avg_pool2d/3d and max_pool2d/3d on OPENCL (pooling.cl).

The window geometry, divisors, in-bounds tap ranges and first-tap indices are the prepared
call's (``polyeng.ops.pooling``); 2-D pooling runs the 3-D kernels with a depth of 1. Float
pooling (avg, max) runs 16 adjacent output columns per work item on vectors, with the geometry
as scalar arguments and the average divisor table uploaded. Max pooling accepts every dtype:
ints and bool run one output per work item on the tap-range table, comparing as themselves;
the winning element is copied unchanged for every dtype.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue

# integer comparison key per dtype (pooling.cl's INT_KEY); bool compares as uchar
_INT_KEY = {dt.int8: 1, dt.uint8: 2, dt.bool_: 2, dt.int32: 3, dt.int64: 4}


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
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if out.size:
        g = p.geometry
        _launch16("avg_pool16", g, out.size // math.prod(g.out), enqueue.float_options(tx.dtype),
                  (tx.buffer, out.buffer), _three(g.kernel, 1), (enqueue.upload(p.divisor),))
    return enqueue.result(out, stay)


def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    index = enqueue.empty(p.shape, np.int64, not stay) if return_indices else None
    if out.size:
        g = p.geometry
        dtype = np.dtype(tx.dtype)
        options = enqueue.word_options(dtype)
        options += (f"-DINT_KEY={_INT_KEY[dtype]}",) if dtype in _INT_KEY else enqueue.float_options(dtype)
        buffers = (tx.buffer, out.buffer)
        if return_indices:
            options += ("-DWITH_INDEX=1",)
            buffers += (index.buffer, enqueue.upload(p.first_index))
        if dtype in _INT_KEY:
            dims = np.array(_three(g.spatial, 1) + _three(g.out, 1) + _three(g.dilation, 1), np.int64)
            enqueue.run("pooling.cl", "max_pool", options, out.size, *buffers, np.uint64(out.size),
                       enqueue.upload(dims), enqueue.upload(p.tap_ranges))
        else:
            _launch16("max_pool16", g, out.size // math.prod(g.out), options, buffers,
                      _three(g.dilation, 1) + _three(g.kernel, 1))
    values = enqueue.result(out, stay)
    return (values, enqueue.result(index, stay)) if return_indices else values


# 2-D and 3-D take the same keyword arguments: one function serves both ranks.
avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
