"""conv1d and conv2d as NUMBA kernels, per the algorithm ``polyeng.ops.conv`` chose:

- ``im2col``: BASIC's gathers and products (``backends/_conv_numpy.py``);
- ``winograd``: a few tile rows of an image at a time per thread, transforms and products in cache
  (``_winograd_chunks.py``); for images of few tiles, or where numpy's BLAS is not OpenBLAS,
  BASIC's passes and products with the tile transforms as parallel JIT loops (``_conv_winograd.py``);
- ``depthwise``: a 3x3 unit-stride kernel over wide rows as a loop over the output planes, each
  row inside the image one loop summing its 9 taps; any other channels last, one loop over the
  channels per tap and output pixel (both split over numba's workers when large);
- ``pointwise``: BLAS products on the input as it is.

16-bit storage is widened to f32 once, computed with f32 accumulation and rounded back once.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...engine import dtypes as dt
from .. import _conv_winograd as winograd
from .._conv_numpy import im2col_conv, pointwise
from . import _winograd_chunks
from ._conv_winograd import TRANSFORMS, by_planes
from ._runtime import inline, jit
from ._storage import read_only

# 3x3 unit-stride depthwise convolutions of outputs at least this wide sum each row's 9 taps in
# one loop over the row; others (5x5, strided, narrow) go channels last, a loop over all channels
# per tap and pixel (MobileNetV3's depthwise layers at batch 8, 4x4 to 32x32: 2-12x faster than tap
# by tap over short rows).
_ROWS_FROM = 16
_PIXELS_BLOCK = 64   # output pixels per task of the channels-last kernel (whole rows, at least one)


@inline
def _edge_column(src, w, b, dst, t, y_lo, y_hi, dh, dw, top, left):
    """Column t of output rows [y_lo, y_hi) (each with all three rows of its taps inside the image):
    the bias, then each column of taps inside the image added down the column."""
    width = src.shape[1]
    for y in range(y_lo, y_hi):
        dst[y, t] = b
    for j in range(3):
        ix = t - left + j * dw
        if 0 <= ix < width:
            v0, v1, v2 = w[0, j], w[1, j], w[2, j]
            for y in range(y_lo, y_hi):
                y0 = y - top
                dst[y, t] += v0 * src[y0, ix] + v1 * src[y0 + dh, ix] + v2 * src[y0 + 2 * dh, ix]


@jit
def _depthwise_rows(x, weight, bias, has_bias, out, per_channel, dh, dw, top, left, first, last):
    """A 3x3 unit-stride depthwise convolution, output plane (n, o) summing channel o // per_channel's
    taps times o's weights, for the planes n * O + o from ``first`` to ``last``.

    The rows whose taps are all inside the image: their columns inside, one loop summing all 9 taps
    (as wide as the input, as with 'same' padding: one flat loop over all those rows, the edge
    columns it wraps redone), then the edge columns down the column, tap column by tap column. The
    rows whose taps reach the padding above or below: tap by tap. (Edge pixels one by one, each tap
    checked, took half of a 56x56 plane's time.)"""
    height, width = x.shape[2], x.shape[3]
    outs, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    lo, hi = min(ow, left), max(min(ow, left), min(ow, width - 2 * dw + left))   # columns inside: [lo, hi)
    y_lo, y_hi = min(oh, top), max(min(oh, top), min(oh, height - 2 * dh + top))  # rows inside: [y_lo, y_hi)
    inside = y_hi > y_lo and hi > lo
    flat = ow == width
    for plane in range(first, last):
        n, o = plane // outs, plane % outs
        src, w, dst = x[n, o // per_channel], weight[o, 0], out[n, o]
        b = bias[o] if has_bias else out.dtype.type(0)
        w00, w01, w02, w10, w11, w12 = w[0, 0], w[0, 1], w[0, 2], w[1, 0], w[1, 1], w[1, 2]
        w20, w21, w22 = w[2, 0], w[2, 1], w[2, 2]
        if inside and flat:
            # flat over rows y_lo..y_hi, from column lo of the first to column hi of the last: each
            # tap's reads stay inside the plane; the columns outside [lo, hi) read the next or last row
            flat_src, start = src.ravel(), y_lo * width + lo
            row = dst.ravel()[start:]
            first_tap = start - top * width - left
            a0, a1, a2 = flat_src[first_tap:], flat_src[first_tap + dw:], flat_src[first_tap + 2 * dw:]
            mid = first_tap + dh * width
            b0, b1, b2 = flat_src[mid:], flat_src[mid + dw:], flat_src[mid + 2 * dw:]
            low = first_tap + 2 * dh * width
            c0, c1, c2 = flat_src[low:], flat_src[low + dw:], flat_src[low + 2 * dw:]
            for t in range((y_hi - 1) * width + hi - start):
                row[t] = (b + w00 * a0[t] + w01 * a1[t] + w02 * a2[t] + w10 * b0[t] + w11 * b1[t]
                          + w12 * b2[t] + w20 * c0[t] + w21 * c1[t] + w22 * c2[t])
        elif inside:
            # each row's columns inside in one loop over all 9 taps, each a view shifted by its offset
            x0 = lo - left
            for y in range(y_lo, y_hi):
                y0 = y - top
                a0, a1, a2 = src[y0, x0:], src[y0, x0 + dw:], src[y0, x0 + 2 * dw:]
                b0, b1, b2 = src[y0 + dh, x0:], src[y0 + dh, x0 + dw:], src[y0 + dh, x0 + 2 * dw:]
                c0, c1, c2 = src[y0 + 2 * dh, x0:], src[y0 + 2 * dh, x0 + dw:], src[y0 + 2 * dh, x0 + 2 * dw:]
                row = dst[y, lo:]
                for t in range(hi - lo):
                    row[t] = (b + w00 * a0[t] + w01 * a1[t] + w02 * a2[t] + w10 * b0[t] + w11 * b1[t]
                              + w12 * b2[t] + w20 * c0[t] + w21 * c1[t] + w22 * c2[t])
        if inside:   # the columns whose taps reach the padding on the left or right
            for t in range(lo):
                _edge_column(src, w, b, dst, t, y_lo, y_hi, dh, dw, top, left)
            for t in range(hi, ow):
                _edge_column(src, w, b, dst, t, y_lo, y_hi, dh, dw, top, left)
        for y in range(oh):
            if inside and y_lo <= y < y_hi:
                continue
            row = dst[y]   # a row whose taps reach the padding above or below: tap by tap
            y0 = y - top
            for t in range(ow):
                row[t] = b
            for i in range(3):
                iy = y0 + i * dh
                if iy < 0 or iy >= height:
                    continue
                line = src[iy]
                for j in range(3):
                    wij = w[i, j]
                    offset = j * dw - left
                    begin = min(ow, max(0, -offset))
                    stop = max(begin, min(ow, width - offset))
                    part, into = line[begin + offset:stop + offset], row[begin:stop]
                    for t in range(stop - begin):
                        into[t] += wij * part[t]


@jit(parallel=True)
def _depthwise_rows_parallel(x, weight, bias, has_bias, out, per_channel, dh, dw, top, left, tasks):
    planes = out.shape[0] * out.shape[1]
    per_task = (planes + tasks - 1) // tasks
    for task in prange(tasks):
        _depthwise_rows(x, weight, bias, has_bias, out, per_channel, dh, dw, top, left, task * per_task,
                        min(planes, (task + 1) * per_task))


@jit
def _depthwise_pixels(x, weight, bias, has_bias, out, per_channel, kh, kw, sh, sw, dh, dw, top, left, rows,
                      first, last):
    """Any depthwise convolution, channels last: for the blocks of ``rows`` output rows of each image
    from ``first`` to ``last``, the input rows they read are copied to a zero-padded slab (rows,
    columns, output channels; channel o // per_channel at o), so each output pixel is kh * kw loops
    over all its channels, which vectorize, whatever the stride, kernel or image size."""
    height, width = x.shape[2], x.shape[3]
    outs, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    blocks = (oh + rows - 1) // rows
    span = (rows - 1) * sh + (kh - 1) * dh + 1
    pitch = (ow - 1) * sw + (kw - 1) * dw + 1
    slab = np.zeros((span, pitch, outs), x.dtype)
    taps = np.empty((kh, kw, outs), x.dtype)
    for o in range(outs):
        for i in range(kh):
            for j in range(kw):
                taps[i, j, o] = weight[o, 0, i, j]
    acc = np.empty(outs, x.dtype)
    for task in range(first, last):
        n, y0 = task // blocks, task % blocks * rows
        for r in range(span):
            iy = y0 * sh - top + r
            inside = 0 <= iy < height
            for col in range(pitch):
                cell = slab[r, col]
                ix = col - left
                if inside and 0 <= ix < width:
                    for o in range(outs):
                        cell[o] = x[n, o // per_channel, iy, ix]
                else:
                    for o in range(outs):
                        cell[o] = 0
        for y in range(y0, min(oh, y0 + rows)):
            for col in range(ow):
                for o in range(outs):
                    acc[o] = bias[o] if has_bias else 0
                for i in range(kh):
                    for j in range(kw):
                        src, w = slab[(y - y0) * sh + i * dh, col * sw + j * dw], taps[i, j]
                        for o in range(outs):
                            acc[o] += w[o] * src[o]
                for o in range(outs):
                    out[n, o, y, col] = acc[o]


@jit(parallel=True)
def _depthwise_pixels_parallel(x, weight, bias, has_bias, out, per_channel, kh, kw, sh, sw, dh, dw, top, left,
                               rows, tasks):
    count = out.shape[0] * ((out.shape[2] + rows - 1) // rows)
    per_task = (count + tasks - 1) // tasks
    for task in prange(tasks):
        _depthwise_pixels(x, weight, bias, has_bias, out, per_channel, kh, kw, sh, sw, dh, dw, top, left, rows,
                          task * per_task, min(count, (task + 1) * per_task))


def depthwise_by_rows(g) -> bool:
    """Whether a depthwise convolution runs by rows (else channels last)."""
    return g.kernel == (3, 3) and g.stride == (1, 1) and g.out[1] >= _ROWS_FROM


def _conv(p, x, weight, bias):
    g = p.geometry
    storage = np.dtype(x.dtype)
    compute = dt.float64 if storage == dt.float64 else dt.float32
    x = np.ascontiguousarray(x, dtype=compute).reshape((g.batch, g.channels) + g.size)
    weight = np.ascontiguousarray(weight, dtype=compute).reshape((g.out_channels, g.group_in) + g.kernel)
    bias = None if bias is None else np.ascontiguousarray(bias, dtype=compute)
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    top, left = g.padding[0], g.padding[2]
    if g.algorithm == "winograd" and _winograd_chunks.available(g, compute):
        out = _winograd_chunks.conv(g, x, weight, bias)
    elif g.algorithm == "winograd":
        out = winograd.conv(g, x, weight, bias, TRANSFORMS)
    elif g.algorithm == "im2col":
        out = im2col_conv(g, x, weight, bias)
    elif g.algorithm == "pointwise":
        out = pointwise(g, x, weight)
        if bias is not None:
            out += bias[:, None, None]
    else:
        out = np.empty((g.batch, g.out_channels) + g.out, compute)
        has_bias = bias is not None
        x, weight = read_only(x), read_only(weight)
        b = read_only(bias if has_bias else np.zeros(1, compute))
        if depthwise_by_rows(g):
            by_planes(_depthwise_rows, _depthwise_rows_parallel, out.nbytes, g.batch * g.out_channels,
                      x, weight, b, has_bias, out, g.group_out, dh, dw, top, left)
        else:
            rows = min(g.out[0], max(1, _PIXELS_BLOCK // g.out[1]))
            by_planes(_depthwise_pixels, _depthwise_pixels_parallel, out.nbytes, g.batch * -(-g.out[0] // rows),
                      x, weight, b, has_bias, out, g.group_out, kh, kw, sh, sw, dh, dw, top, left, rows)
    out = out.reshape(p.shape)
    return out if storage == compute else dt.round_to(out, storage)


def conv2d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


def conv1d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)
