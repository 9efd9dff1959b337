"""conv1d/conv2d in numpy and BLAS, per the algorithm ``polyeng.ops.conv`` chose: BASIC's kernels,
and what NUMBA shares of them: the pointwise products and im2col whole; Winograd's passes and
products (``_conv_winograd.py``, NUMBA with its own tile transforms). NUMBA has its own depthwise
kernels. Inputs arrive in their compute dtype (f32 or f64)."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import _conv_scratch as scratch, _conv_winograd as winograd
from ._blas_threads import blas_threads

# im2col gathers as many images at once as have columns of at most this size, so that small images
# cost a few numpy calls for the whole batch rather than a few per image (a 3x3 layer of 16
# channels at 16x16, batch 8: 0.38 ms to 0.22 ms; the ResNet stem, 7x7 stride 2 of 3 channels at
# 64x64: 1.75 ms to 0.9 ms); 1, 4 and 16 MB measured, 4 the best or near it on every layer tried.
PASS_BYTES = 4 << 20
# Depthwise taps are summed over blocks of planes of about this many output elements, which stay in
# cache from one tap to the next (96 channels at 56x56, batch 8: 24 ms to 14 ms); small calls are
# one block.
_DEPTHWISE_BLOCK = 1 << 18


def conv(p, x, weight, bias):
    g = p.geometry
    x = x.reshape((g.batch, g.channels) + g.size)
    weight = weight.astype(x.dtype, copy=False).reshape((g.out_channels, g.group_in) + g.kernel)
    bias = None if bias is None else bias.astype(x.dtype, copy=False)
    if g.algorithm == "winograd":
        out = winograd.conv(g, x, weight, bias, winograd.NUMPY)
    elif g.algorithm == "im2col":
        out = im2col_conv(g, x, weight, bias)
    else:
        out = pointwise(g, x, weight) if g.algorithm == "pointwise" else _depthwise(g, x, weight)
        if bias is not None:
            out += bias[:, None, None]
    return out.reshape(p.shape)


def pointwise(g, x, weight) -> np.ndarray:
    """A 1x1, stride-1, unpadded convolution: (G, Og, Cg) @ (N, G, Cg, H*W) per group."""
    n, hw = g.batch, g.size[0] * g.size[1]
    w = weight.reshape(g.groups, g.group_out, g.group_in)
    with blas_threads(n * g.out_channels * g.group_in * hw):
        out = np.matmul(w, x.reshape(n, g.groups, g.group_in, hw))
    return out.reshape((n, g.out_channels) + g.out)


def im2col_conv(g, x, weight, bias) -> np.ndarray:
    """The windows of each image as columns (per group: Cg * KH * KW rows) times the weights, one
    product per pass of images, each pass's columns up to ``PASS_BYTES``, in the thread's scratch.

    The columns run over the output rows at the pitch of the input's phase planes, so that each
    (channel, tap) row of them is one contiguous copy: with stride s the padded input splits into
    s x s phase planes (rows a mod s, columns b mod s; one plane for stride 1), and tap (i, j) of
    every window is a phase plane read from (i * dh // sh, j * dw // sw) on. The columns past OW of
    each output row are spare, dropped from the product. The bias is a row of ones in the columns
    and a column of the weights, so the product adds it."""
    (kh, kw), (sh, sw), dh, (oh, ow) = g.kernel, g.stride, g.dilation[0], g.out
    k, ones = g.group_in * kh * kw, bias is not None
    out = np.empty((g.batch, g.out_channels) + g.out, x.dtype)
    if not out.size:
        return out
    w = weight.reshape(g.groups, g.group_out, k)
    if ones:
        w = np.concatenate((w, bias.reshape(g.groups, g.group_out, 1)), axis=2)
    top, bottom, left, right = g.padding
    pitch = -(-(g.size[1] + left + right) // sw)
    # a spare row below the planes keeps the copy of the lowest tap's last row inside them
    rows = max(-(-(g.size[0] + top + bottom) // sh), oh + (kh - 1) * dh // sh + 1)
    width = oh * pitch
    images = max(1, min(g.batch, PASS_BYTES // (max(1, k + ones) * g.groups * width * x.itemsize)))
    shapes = [(images, g.channels, sh * sw, rows * pitch), (images, g.groups, k + ones, width)]
    if pitch != ow:
        shapes.append((images, g.groups, g.group_out, width))
    phases, cols, *spare = scratch.arrays(x.dtype, *shapes)
    if ones:
        cols[:, :, k] = 1
    groups = _tap_groups(g, pitch)
    used = sorted(group[0] for group in groups)
    flat = out.reshape(g.batch, g.groups, g.group_out, oh * ow)
    with blas_threads(images * g.out_channels * (k + ones) * width):
        for first in range(0, g.batch, images):
            last = min(g.batch, first + images)
            n = last - first
            planes = phases[:n]
            _phase_planes(g, x[first:last], planes.reshape((n, g.channels, sh, sw, rows, pitch)), used)
            part = cols[:n]
            view = part[:, :, :k].reshape(n, g.groups, g.group_in, kh, kw, width)
            source = planes.reshape(n, g.groups, g.group_in, sh * sw, rows * pitch)
            for plane, i, j, ni, nj, step_i, step_j, down, across, offset in groups:
                start = source[:, :, :, plane, offset:]
                s0, s1, s2, s3 = start.strides
                view[:, :, :, i::step_i, j::step_j] = as_strided(
                    start, (n, g.groups, g.group_in, ni, nj, width), (s0, s1, s2, down * pitch * s3, across * s3, s3))
            if spare:
                product = spare[0][:n]
                np.matmul(w, part, out=product)
                out[first:last] = product.reshape(n, g.out_channels, oh, pitch)[..., :ow]
            else:
                np.matmul(w, part, out=flat[first:last])
    return out


def _tap_groups(g, pitch) -> list:
    """The kernel's taps by the phase plane they read, one strided copy each: (plane, i, j, ni, nj,
    step_i, step_j, down, across, offset) says that taps (i + u * step_i, j + v * step_j), u < ni,
    v < nj, read plane ``plane`` from ``offset + u * down * pitch + v * across`` on."""
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    step_i, step_j = sh // math.gcd(dh, sh), sw // math.gcd(dw, sw)   # taps this far apart share a plane
    groups = []
    for i in range(min(step_i, kh)):
        for j in range(min(step_j, kw)):
            groups.append(((i * dh % sh) * sw + j * dw % sw, i, j, len(range(i, kh, step_i)),
                           len(range(j, kw, step_j)), step_i, step_j, step_i * dh // sh, step_j * dw // sw,
                           i * dh // sh * pitch + j * dw // sw))
    return groups


def _phase_planes(g, x, planes, used) -> None:
    """The padded images x as phase planes (n, C, sh, sw, rows, pitch): plane (a, b) holds padded
    row a + sh * r, column b + sw * c at (r, c), zeros around; only the planes in ``used``
    (a * sw + b) are written."""
    (sh, sw), (top, _, left, _) = g.stride, g.padding
    height, width = g.size
    n, channels, _, _, rows, pitch = planes.shape
    planes.reshape(n, channels, sh * sw, rows * pitch)[:, :, used] = 0
    for plane in used:
        a, b = divmod(plane, sw)
        first_row = max(0, -(-(top - a) // sh))          # the first plane row inside x
        first_col = max(0, -(-(left - b) // sw))
        row, col = a + first_row * sh - top, b + first_col * sw - left   # ... and where it is in x
        if row < height and col < width:
            source = x[:, :, row::sh, col::sw]
            planes[:, :, a, b, first_row:first_row + source.shape[2], first_col:first_col + source.shape[3]] = source


def padded_input(g, x) -> np.ndarray:
    top, bottom, left, right = g.padding
    if not any(g.padding):
        return x
    padded = np.zeros(x.shape[:2] + (x.shape[2] + top + bottom, x.shape[3] + left + right), x.dtype)
    padded[:, :, top:top + x.shape[2], left:left + x.shape[3]] = x   # np.pad: the same, 15x slower on small inputs
    return padded


def _tap(g, padded, i: int, j: int) -> np.ndarray:
    """Tap (i, j) of every window: a strided view of the padded input, (..., OH, OW)."""
    (sh, sw), (dh, dw), (oh, ow) = g.stride, g.dilation, g.out
    return padded[..., i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]


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
