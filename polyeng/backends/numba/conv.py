"""conv1d and conv2d as NUMBA kernels: the columns of ``im2col`` gathered by a parallel JIT loop
(padding read as zeros, no padded copy) and multiplied by the weights through BLAS, one product
per group and image (``backends/_conv_numpy.py``, shared with BASIC); Winograd's passes and
products shared with BASIC, its tile transforms JIT loops (``_conv_winograd.py``); depthwise
convolutions as one parallel loop over output rows whose inner loop over the in-bounds columns of
each tap vectorizes; 1x1 convolutions as BLAS products on the input as it is. 16-bit storage is
widened to f32 once, computed with f32 accumulation and rounded back once.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...engine import dtypes as dt
from .. import _conv_winograd as winograd
from .._conv_numpy import grouped_product, im2col as numpy_im2col, padded_input, pointwise
from ._conv_winograd import TRANSFORMS
from ._runtime import jit, launch

_JIT_GATHER_BYTES = 4 << 20   # columns at least this large are gathered by the parallel JIT loop


@jit(parallel=True)
def _im2col(image, cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    """cols[(c, i, j), (y, x)] = image[c, y * sh - top + i * dh, x * sw - left + j * dw], 0 outside."""
    height, width = image.shape[1], image.shape[2]
    zero = cols.dtype.type(0)
    for r in prange(cols.shape[0]):
        c, i, j = r // (kh * kw), (r // kw) % kh, r % kw
        row = cols[r]
        for y in range(oh):
            iy = y * sh - top + i * dh
            base = y * ow
            if iy < 0 or iy >= height:
                for x in range(ow):
                    row[base + x] = zero
                continue
            src = image[c, iy]
            offset = j * dw - left
            lo = min(ow, max(0, (-offset + sw - 1) // sw))          # the first x whose tap is >= 0
            hi = max(lo, min(ow, (width - 1 - offset) // sw + 1))   # past the last one < width
            for x in range(lo):
                row[base + x] = zero
            if sw == 1:   # unit stride: a copy LLVM vectorizes
                dst = row[base + lo:base + hi]
                part = src[lo + offset:hi + offset]
                for x in range(hi - lo):
                    dst[x] = part[x]
            else:
                for x in range(lo, hi):
                    row[base + x] = src[x * sw + offset]
            for x in range(hi, ow):
                row[base + x] = zero


@jit(parallel=True)
def _depthwise(x, weight, out, per_channel, kh, kw, sh, sw, dh, dw, top, left):
    """Each output row (n, o, y) sums channel o // per_channel's taps times o's weights."""
    height, width = x.shape[2], x.shape[3]
    outs, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    zero = out.dtype.type(0)
    for t in prange(out.shape[0] * outs * oh):
        n, o, y = t // (outs * oh), (t // oh) % outs, t % oh
        row = out[n, o, y]
        for x_ in range(ow):
            row[x_] = zero
        for i in range(kh):
            iy = y * sh - top + i * dh
            if iy < 0 or iy >= height:
                continue
            src = x[n, o // per_channel, iy]
            for j in range(kw):
                w = weight[o, 0, i, j]
                offset = j * dw - left
                lo = min(ow, max(0, (-offset + sw - 1) // sw))
                hi = max(lo, min(ow, (width - 1 - offset) // sw + 1))
                if sw == 1:   # unit stride: a multiply-add LLVM vectorizes
                    dst = row[lo:hi]
                    part = src[lo + offset:hi + offset]
                    for x_ in range(hi - lo):
                        dst[x_] += w * part[x_]
                else:
                    for x_ in range(lo, hi):
                        row[x_] += w * src[x_ * sw + offset]


def _conv(p, x, weight, bias):
    g = p.geometry
    storage = np.dtype(x.dtype)
    compute = dt.float64 if storage == dt.float64 else dt.float32
    x = np.ascontiguousarray(x, dtype=compute).reshape((g.batch, g.channels) + g.size)
    weight = np.ascontiguousarray(weight, dtype=compute).reshape((g.out_channels, g.group_in) + g.kernel)
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    top, left = g.padding[0], g.padding[2]
    if g.algorithm == "winograd":   # the bias added by the output transform
        bias = None if bias is None else np.ascontiguousarray(bias, dtype=compute)
        out = winograd.conv(g, x, weight, bias, TRANSFORMS).reshape(p.shape)
        return out if storage == compute else dt.round_to(out, storage)
    if g.algorithm == "pointwise":
        out = pointwise(g, x, weight)
    elif g.algorithm == "depthwise":
        out = np.empty((g.batch, g.out_channels) + g.out, compute)
        if out.size:
            launch(_depthwise, out.nbytes, x, weight, out, g.group_out, kh, kw, sh, sw, dh, dw, top, left)
    else:
        out = np.empty((g.batch, g.out_channels) + g.out, compute)
        if out.size:
            cols = np.empty((g.channels * kh * kw, g.out[0] * g.out[1]), compute)
            # small images: numpy's strided tap copies beat a JIT launch per image (ResNet-style
            # 16x16 layers 3x faster); large ones gather in parallel
            padded = padded_input(g, x) if cols.nbytes < _JIT_GATHER_BYTES else None
            for n in range(g.batch):
                if padded is not None:
                    numpy_im2col(g, padded[n], cols)
                else:
                    launch(_im2col, cols.nbytes, x[n], cols, kh, kw, sh, sw, dh, dw, top, left, g.out[0], g.out[1])
                grouped_product(g, weight, cols, out[n])
    if bias is not None:
        out += bias.astype(compute)[:, None, None]
    out = out.reshape(p.shape)
    return out if storage == compute else dt.round_to(out, storage)


def conv2d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


def conv1d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)
