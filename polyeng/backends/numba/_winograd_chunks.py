"""NUMBA's Winograd F(2x2, 3x3) chunk by chunk: each thread takes a few tile rows of one image at a
time and runs the whole convolution of them (input transform, the 16 products through numpy's
OpenBLAS on that thread, output transform) while V and M are still in its core's cache.

BASIC's passes (``backends/_conv_winograd.py``) write V and M for many images at once (8 MB), let
OpenBLAS split each of the 16 products over its threads, and read M back: the products of a
3x3 layer of 64 channels at 56x56, batch 8, ran at about 100 GFLOP/s, 8.5 of its 12 ms. Chunks of
about ``CHUNK_BYTES`` of V and M (``winograd.chunk_rows``), one thread each, took the layer to
5.9 ms (PyTorch: 8.8 ms in the same process). The chunks are claimed from a shared counter, so threads that run at unequal
speed (a busy machine) still finish together.

Used where ``gemm_address`` finds numpy's OpenBLAS and an image has enough tiles
(``chunk_rows``); elsewhere the convolution takes BASIC's passes with NUMBA's transforms.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .. import _conv_scratch as scratch
from .. import _conv_winograd as winograd
from .._blas_threads import one_thread
from ._conv_winograd import _PAIR, _input, _output
from ._native_calls import atomic_add, gemm, gemm_address
from ._runtime import jit, launch, threads_for


@jit
def _chunks(x, u, out, bias, has_bias, top, left, rows, tw, pair, v, m, address, wide, claimed):
    """Claim chunks (image n, tile rows [r0, r0 + rows)) from ``claimed[0]`` until none is left, and
    write each one's output rows: V into ``v``, the products into ``m`` (this thread's scratch)."""
    channels, outs = x.shape[1], out.shape[1]
    groups, group_out, group_in = u.shape[1], u.shape[2], u.shape[3]
    tile_rows = (out.shape[2] + 1) // 2
    blocks = (tile_rows + rows - 1) // rows
    total = x.shape[0] * blocks
    per_row = tw + 1
    while True:
        j = atomic_add(claimed, 0, 1)
        if j >= total:
            break
        n, r0 = j // blocks, (j % blocks) * rows
        th = min(rows, tile_rows - r0)
        width = th * per_row
        image, target = x[n:n + 1], out[n:n + 1]
        # np.int64(0), not a literal 0: the transforms' compile for the int64 the host passes them
        # (a literal argument is a type of its own, and another compile of each)
        _input(image, v, top, left, r0, th, tw, pair, np.int64(0), channels)
        for k in range(16):
            for group in range(groups):
                gemm(address, wide, group_out, width, group_in, u[k, group], group_in,
                     v[k, group * group_in:], v.shape[2], 0.0, m[k, group * group_out:], m.shape[2])
        _output(m, target, bias, has_bias, r0, th, tw, pair, np.int64(0), outs)


@jit(parallel=True)
def _chunks_parallel(x, u, out, bias, has_bias, top, left, rows, tw, pair, v, m, address, wide, claimed, tasks):
    for task in prange(tasks):
        _chunks(x, u, out, bias, has_bias, top, left, rows, tw, pair, v[task], m[task], address, wide, claimed)


def available(g, dtype) -> bool:
    """Whether ``conv`` runs this call in ``dtype`` (f32 or f64 with numpy's OpenBLAS found, and
    enough tiles an image)."""
    return winograd.chunk_rows(g, np.dtype(dtype).itemsize) > 0 and gemm_address(dtype) is not None


def conv(g, x, weight, bias) -> np.ndarray:
    """The convolution of x (N, C, H, W) in x's dtype (``available``), its bias added."""
    th, tw = winograd.tiles(g)
    per_row = tw + 1
    out = np.empty((g.batch, g.out_channels) + g.out, x.dtype)
    if not out.size:
        return out
    address, wide = gemm_address(x.dtype)
    u = np.ascontiguousarray(winograd.weights(g, weight))
    rows = winograd.chunk_rows(g, x.itemsize)
    chunks = g.batch * -(-th // rows)
    tasks = min(threads_for(out.nbytes), chunks)
    v, m = scratch.arrays(x.dtype, (tasks, 16, g.channels, rows * per_row), (tasks, 16, g.out_channels, rows * per_row))
    has_bias = bias is not None
    args = (x, u, out, bias if has_bias else np.zeros(1, x.dtype), has_bias, g.padding[0], g.padding[2], rows, tw,
            _PAIR[x.dtype])
    claimed = np.zeros(1, np.int64)
    with one_thread():
        if tasks <= 1:
            _chunks(*args, v[0], m[0], address, wide, claimed)
        else:
            launch(_chunks_parallel, out.nbytes, *args, v, m, address, wide, claimed, tasks)
    return out
