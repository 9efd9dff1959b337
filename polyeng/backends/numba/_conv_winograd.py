"""NUMBA's tile transforms of Winograd's F(2x2, 3x3) (``backends/_conv_winograd.py`` runs the
passes and the products), as loops over the channel planes of a pass's images: on the calling
thread for a small pass, else split over numba's workers (``by_planes``, which the depthwise
kernels of ``conv.py`` use too).

numba indexes ``a[2 * t + 1]`` through a gather (the index might be negative and wrap), so the
transforms never index with arithmetic: a pair of neighbouring columns is read and written as one
complex number (a complex view of the row), and each loop runs flat over a plane, reading rows
below through views that start a row later. Flat loops over a plane's tiles read the tile after
the last of a row from the next row: V and M hold that spare tile per row (``spare=1``), 1/tw more
product columns than tiles, and the output transform skips it.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .._conv_winograd import Transforms
from ._runtime import jit, launch, threads_for

_PAIR = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}
# These loops stream memory with a few adds per element: below this much output, waking numba's
# pool costs more than the second thread saves (the workqueue pool, numba's layer when another
# library loaded libgomp first, as torch does: 30-50 us per launch and more on a busy machine; a
# 3x3 Winograd layer of 64 channels at 56x56 in f32 took 1.31 ms with parallel transforms, 1.23 ms
# with serial ones, median 3.1 and 1.6 ms; a 96-channel depthwise 56x56 layer 0.28 against 0.25 ms)
PARALLEL_FROM = 4 << 20


def by_planes(serial, parallel, out_nbytes: int, planes: int, *args) -> None:
    """``serial(*args, first, last)`` over planes [0, planes) on the calling thread for an output
    under ``PARALLEL_FROM`` (or when ``threads_for`` gives one thread), else ``parallel(*args,
    tasks)`` splitting them into one task per thread."""
    threads = min(threads_for(out_nbytes), planes) if out_nbytes >= PARALLEL_FROM else 1
    if threads <= 1:
        serial(*args, 0, planes)
    else:
        launch(parallel, out_nbytes, *args, threads)


@jit
def _input(x, v, top, left, row0, th, tw, pair, first, last):
    """V[4i + k, c, n * tiles + ty * (tw + 1) + tx] = (B^T d B)[i, k] of tile (row0 + ty, tx) of
    plane (n, c), for the th tile rows from ``row0`` of the planes n * C + c from ``first`` to ``last``."""
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    per_row = tw + 1
    tiles = th * per_row
    pitch = 2 * per_row   # columns of the padded plane (at least W + left)
    # the padded plane: its even rows, then its odd rows; the zeros around x are never written
    padded = np.zeros((2, (th + 1) * pitch + 2), v.dtype)
    pairs = padded.view(pair)              # columns (2t, 2t + 1) of each row as one element
    down = np.empty((4, tiles + 1), pair)  # B^T down each tile, for both columns of a pair
    for plane in range(first, last):
        n, c = plane // channels, plane % channels
        for iy in range(max(0, 2 * row0 - top), min(height, 2 * (row0 + th) + 2 - top)):
            y = iy + top - 2 * row0   # padded rows from the block's first on
            row = padded[y % 2, (y // 2) * pitch + left:]
            src = x[n, c, iy]
            for t in range(width):
                row[t] = src[t]
        # rows r0..r3 of tile row ty are even[ty], odd[ty], even[ty + 1], odd[ty + 1]
        e0, o0, e1, o1 = pairs[0], pairs[1], pairs[0, per_row:], pairs[1, per_row:]
        d0, d1, d2, d3 = down[0], down[1], down[2], down[3]
        for f in range(tiles + 1):
            d0[f] = e0[f] - e1[f]   # r0 - r2
        for f in range(tiles + 1):
            d1[f] = o0[f] + e1[f]   # r1 + r2
        for f in range(tiles + 1):
            d2[f] = e1[f] - o0[f]   # r2 - r1
        for f in range(tiles + 1):
            d3[f] = o0[f] - o1[f]   # r1 - r3
        base = n * tiles
        for i in range(4):
            left_pair, right_pair = down[i], down[i, 1:]   # columns (2t, 2t + 1), (2t + 2, 2t + 3)
            v0, v1 = v[4 * i, c, base:base + tiles], v[4 * i + 1, c, base:base + tiles]
            v2, v3 = v[4 * i + 2, c, base:base + tiles], v[4 * i + 3, c, base:base + tiles]
            for f in range(tiles):   # B^T across: c0 - c2, c1 + c2, c2 - c1, c1 - c3
                a, b = left_pair[f], right_pair[f]
                v0[f] = a.real - b.real
                v1[f] = a.imag + b.real
                v2[f] = b.real - a.imag
                v3[f] = a.imag - b.imag


@jit(parallel=True)
def _input_parallel(x, v, top, left, row0, th, tw, pair, tasks):
    planes = x.shape[0] * x.shape[1]
    per_task = (planes + tasks - 1) // tasks
    for task in prange(tasks):
        _input(x, v, top, left, row0, th, tw, pair, task * per_task, min(planes, (task + 1) * per_task))


@jit
def _output(m, out, bias, has_bias, row0, th, tw, pair, first, last):
    """out[n, o, 2 (row0 + ty) + a, 2tx + b] = (A^T M A)[a, b] (+ bias[o]) of tile (ty, tx) of M, for
    its th tile rows of the planes n * O + o from ``first`` to ``last``."""
    outs, height, ow = out.shape[1], out.shape[2], out.shape[3]
    per_row = tw + 1
    tiles = th * per_row
    half = ow // 2
    down = np.empty((8, tiles), m.dtype)   # A^T down each tile: row a of tile column j at 4a + j
    rows = np.empty((2, tiles), pair)      # then across: output row a of each tile, its two columns a pair
    for plane in range(first, last):
        n, o = plane // outs, plane % outs
        b = bias[o] if has_bias else m.dtype.type(0)
        base = n * tiles
        for j in range(4):
            m0, m1 = m[j, o, base:base + tiles], m[4 + j, o, base:base + tiles]
            m2, m3 = m[8 + j, o, base:base + tiles], m[12 + j, o, base:base + tiles]
            s0, s1 = down[j], down[4 + j]
            for f in range(tiles):
                s0[f] = m0[f] + m1[f] + m2[f]
            for f in range(tiles):
                s1[f] = m1[f] - m2[f] - m3[f]
        for a in range(2):   # A^T across: q0 + q1 + q2, q1 - q2 - q3
            q0, q1, q2, q3, row = down[4 * a], down[4 * a + 1], down[4 * a + 2], down[4 * a + 3], rows[a]
            for f in range(tiles):
                row[f] = complex(q0[f] + q1[f] + q2[f] + b, q1[f] - q2[f] - q3[f] + b)
        # each output row is its tiles' pairs, the spare tile left out
        stop = min(height, 2 * (row0 + th))
        if ow % 2 == 0:
            target = out[n, o].view(pair)
            for y in range(2 * row0, stop):
                src, dst = rows[y % 2, (y // 2 - row0) * per_row:], target[y]
                for t in range(half):
                    dst[t] = src[t]
        else:
            for y in range(2 * row0, stop):
                src, row = rows[y % 2, (y // 2 - row0) * per_row:], out[n, o, y]
                dst = row[:2 * half].view(pair)
                for t in range(half):
                    dst[t] = src[t]
                row[ow - 1] = src[half].real


@jit(parallel=True)
def _output_parallel(m, out, bias, has_bias, row0, th, tw, pair, tasks):
    planes = out.shape[0] * out.shape[1]
    per_task = (planes + tasks - 1) // tasks
    for task in prange(tasks):
        _output(m, out, bias, has_bias, row0, th, tw, pair, task * per_task, min(planes, (task + 1) * per_task))


def _transform_input(g, x, v, block, tw) -> None:
    by_planes(_input, _input_parallel, v.nbytes, x.shape[0] * g.channels,
              x, v, g.padding[0], g.padding[2], block[0], block[1] - block[0], tw, _PAIR[v.dtype])


def _transform_output(g, m, out, bias, block, tw) -> None:
    has_bias = bias is not None
    by_planes(_output, _output_parallel, m.nbytes // 4, out.shape[0] * g.out_channels,
              m, out, bias if has_bias else np.zeros(1, m.dtype), has_bias, block[0], block[1] - block[0], tw,
              _PAIR[m.dtype])


TRANSFORMS = Transforms(_transform_input, _transform_output, 1)
