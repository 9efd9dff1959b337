"""conv1d and conv2d on OPENCL (conv.cl): a direct kernel, one work item per output element,
reading every operand in its storage type and accumulating in f32 (f64 for f64)."""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue


def _conv(p, x, weight, bias):
    g = p.geometry
    tx, stay_x = enqueue.on_device(x)
    tw, stay_w = enqueue.on_device(weight)
    tb, stay_b = enqueue.on_device(bias) if bias is not None else (tx, False)
    stay = stay_x or stay_w or stay_b
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if out.size:
        options = enqueue.float_options(tx.dtype)
        if np.dtype(tw.dtype) != np.dtype(tx.dtype):   # f32 weights of a 16-bit or f64 input
            options += ("-DWEIGHT_F32=1",)
        if bias is not None and np.dtype(tb.dtype) != np.dtype(tx.dtype):
            options += ("-DBIAS_F32=1",)
        planes = g.batch * g.out_channels
        i32 = np.int32
        oh, ow = g.out
        local = enqueue.group(ow, oh)
        enqueue.run("conv.cl", "conv2d_direct", options, (ow, oh, planes), tx.buffer, tw.buffer, tb.buffer,
                    out.buffer, i32(bias is not None), i32(g.channels), i32(g.size[0]), i32(g.size[1]),
                    i32(g.out_channels), i32(g.kernel[0]), i32(g.kernel[1]), i32(g.stride[0]), i32(g.stride[1]),
                    i32(g.dilation[0]), i32(g.dilation[1]), i32(g.padding[0]), i32(g.padding[2]), i32(oh), i32(ow),
                    i32(g.group_in), i32(g.group_out), i32(planes), local=local + (1,))
    return enqueue.result(out, stay)


def conv2d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


def conv1d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


