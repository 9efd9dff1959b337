"""mean on OPENCL (reduction.cl): the reduced axes are summed as the last axis of a contiguous
(rows, n) view, pairwise in blocks (the error grows with log(n)), in f32 for 16-bit storage.

Reduced axes that are not already last (size-1 axes aside) are moved there first by a device
copy (permute.cl's strided copy). Rows too few to keep the device busy are split into chunks
summed by separate work items, whose totals a second kernel combines pairwise. A mean of zero
elements is NaN (0 / 0), as in numpy.
"""
from __future__ import annotations

import math

import numpy as np

from . import _enqueue as enqueue, _strided as strided
from ._tensor import from_numpy

BLOCK = 128            # elements a block of reduction.cl sums before combining pairwise
MIN_CHUNK = 1 << 14    # a chunk of a split row: enough work to outweigh its own launch share
BUSY_ROWS = 2048       # rows enough for one work item each to fill a device


def _reduced_last(x, axis):
    """``x`` (on the device) with the reduced axes last, as ``(rows, n)``: a copy only when a
    reduced axis longer than 1 comes before a kept one longer than 1."""
    axis = [d for d in axis if d < x.ndim]   # a 0-d input reduced over "axis 0" is its one value
    kept = [d for d in range(x.ndim) if d not in axis]
    rows, n = math.prod(x.shape[d] for d in kept), math.prod(x.shape[d] for d in axis)
    order = [d for d in kept + axis if x.shape[d] != 1]
    if order == sorted(order):
        return x, rows, n
    shape = tuple(x.shape[d] for d in kept + axis)
    source = strided.contiguous_strides(x.shape)
    moved = enqueue.empty(shape, x.dtype)
    strided.copy(x, moved, shape, [source[d] for d in kept + axis], strided.contiguous_strides(shape))
    return moved, rows, n


def mean(p, x, axis, keepdims):
    tx, stay = enqueue.on_device(x)
    if p.count == 0:   # nothing to sum: every mean is 0 / 0
        nan = np.full(p.shape, np.nan, dtype=p.dtype)
        return from_numpy(nan) if stay else nan
    out = enqueue.empty(p.shape, p.dtype, not stay)
    if out.size:
        rows_x, rows, n = _reduced_last(tx, axis)
        options = enqueue.float_options(p.dtype) + enqueue.exact_divide_sqrt()   # sum / count as numpy rounds it
        count = enqueue.compute_dtype(p.dtype).type(p.count)
        chunk = _chunk(rows, n)
        if chunk >= n:
            enqueue.run("reduction.cl", "mean_rows", options, rows, rows_x.buffer, out.buffer,
                        np.uint64(rows), np.uint64(n), count, local=64)
        else:
            import pyopencl as cl
            from . import _runtime as runtime
            chunks = -(-n // chunk)
            partial = cl.Buffer(runtime.state().context, cl.mem_flags.READ_WRITE,
                                size=rows * chunks * enqueue.compute_dtype(p.dtype).itemsize)
            enqueue.run("reduction.cl", "partial_sums", options, (chunks, rows), rows_x.buffer, partial,
                        np.uint64(rows), np.uint64(n), np.uint64(chunks), np.uint64(chunk),
                        local=enqueue.group(chunks, rows, widest=64, items=64))
            enqueue.run("reduction.cl", "mean_partials", options, rows, partial, out.buffer,
                        np.uint64(rows), np.uint64(chunks), count, local=64)
    return enqueue.result(out, stay)


def _chunk(rows: int, n: int) -> int:
    """Elements per work item along a row: the whole row when there are rows enough, else a
    power-of-two multiple of BLOCK splitting the rows into about BUSY_ROWS pieces in all."""
    if rows >= BUSY_ROWS or n <= MIN_CHUNK:
        return n
    wanted = -(-rows * n // BUSY_ROWS)
    return max(MIN_CHUNK, 1 << (wanted - 1).bit_length())
