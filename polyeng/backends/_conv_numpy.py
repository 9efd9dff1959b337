"""conv1d/conv2d in numpy and BLAS, per the algorithm ``polyeng.ops.conv`` chose: BASIC's kernels,
and the products of NUMBA's (which gather the columns and run depthwise convolutions in
parallel JIT loops instead); Winograd's passes and products are ``_conv_winograd.py``'s, shared
too. Inputs arrive in their compute dtype (f32 or f64)."""
from __future__ import annotations

import numpy as np

from . import _conv_winograd as winograd
from ._blas_threads import blas_threads

# Depthwise taps are summed over blocks of planes of about this many output elements, which stay in
# cache from one tap to the next (96 channels at 56x56, batch 8: 24 ms to 14 ms); small calls are
# one block.
_DEPTHWISE_BLOCK = 1 << 18


def conv(p, x, weight, bias):
    g = p.geometry
    x = x.reshape((g.batch, g.channels) + g.size)
    weight = weight.astype(x.dtype, copy=False).reshape((g.out_channels, g.group_in) + g.kernel)
    if g.algorithm == "winograd":   # the bias added by the output transform
        bias = None if bias is None else bias.astype(x.dtype, copy=False)
        return winograd.conv(g, x, weight, bias, winograd.NUMPY).reshape(p.shape)
    if g.algorithm == "pointwise":
        out = pointwise(g, x, weight)
    elif g.algorithm == "depthwise":
        out = _depthwise(g, x, weight)
    else:
        out = np.empty((g.batch, g.out_channels) + g.out, x.dtype)
        if out.size:
            cols = np.empty((g.channels * g.kernel[0] * g.kernel[1], g.out[0] * g.out[1]), x.dtype)
            padded = padded_input(g, x)
            for n in range(g.batch):
                im2col(g, padded[n], cols)
                grouped_product(g, weight, cols, out[n])
    if bias is not None:
        out += bias.astype(x.dtype, copy=False)[:, None, None]
    return out.reshape(p.shape)


def pointwise(g, x, weight) -> np.ndarray:
    """A 1x1, stride-1, unpadded convolution: (G, Og, Cg) @ (N, G, Cg, H*W) per group."""
    n, hw = g.batch, g.size[0] * g.size[1]
    w = weight.reshape(g.groups, g.group_out, g.group_in)
    with blas_threads(n * g.out_channels * g.group_in * hw):
        out = np.matmul(w, x.reshape(n, g.groups, g.group_in, hw))
    return out.reshape((n, g.out_channels) + g.out)


def grouped_product(g, weight, cols, out) -> None:
    """``out`` (O, OH, OW) of one image from its columns (C * KH * KW, OH * OW), group by group."""
    k = g.group_in * g.kernel[0] * g.kernel[1]
    w = weight.reshape(g.groups, g.group_out, k)
    flat = out.reshape(g.groups, g.group_out, -1)
    with blas_threads(g.out_channels * k * cols.shape[1]):
        for group in range(g.groups):
            np.matmul(w[group], cols[group * k:(group + 1) * k], out=flat[group])


def padded_input(g, x) -> np.ndarray:
    top, bottom, left, right = g.padding
    if not any(g.padding):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))


def _tap(g, padded, i: int, j: int) -> np.ndarray:
    """Tap (i, j) of every window: a strided view of the padded input, (..., OH, OW)."""
    (sh, sw), (dh, dw), (oh, ow) = g.stride, g.dilation, g.out
    return padded[..., i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]


def im2col(g, image, cols) -> None:
    """The windows of one padded image (C, Hp, Wp) as columns: row (c, i, j), column (oy, ox)."""
    kh, kw = g.kernel
    view = cols.reshape((g.channels, kh, kw) + g.out)
    for i in range(kh):
        for j in range(kw):
            view[:, i, j] = _tap(g, image, i, j)


def _depthwise(g, x, weight) -> np.ndarray:
    """One input channel per group: output channel (c, m) (channel c's m-th) sums c's taps times its
    weights, over blocks of planes that stay in cache from tap to tap."""
    padded = padded_input(g, x)
    planes, multiple = g.batch * g.channels, g.group_out
    padded = padded.reshape((planes,) + padded.shape[2:])
    out = np.empty((g.batch, g.out_channels) + g.out, x.dtype)
    flat = out.reshape((planes, multiple) + g.out)
    w = np.broadcast_to(weight.reshape(g.channels, multiple, *g.kernel),
                        (g.batch, g.channels, multiple) + g.kernel).reshape((planes, multiple) + g.kernel)
    block = max(1, _DEPTHWISE_BLOCK // (multiple * g.out[0] * g.out[1]))
    for first in range(0, planes, block):
        last = min(planes, first + block)
        target, term = flat[first:last], np.empty_like(flat[first:last])
        for i in range(g.kernel[0]):
            for j in range(g.kernel[1]):
                tap = _tap(g, padded[first:last], i, j)[:, None]
                wij = w[first:last, :, i, j][:, :, None, None]
                if i == 0 and j == 0:
                    np.multiply(tap, wij, out=target)
                else:
                    np.multiply(tap, wij, out=term)
                    target += term
    return out
