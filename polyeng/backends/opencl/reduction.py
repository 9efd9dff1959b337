"""mean, sum, amax and amin on OPENCL: the reduced axes are reduced as the last axis of a
contiguous (rows, n) view.

Reduced axes that are not already last (size-1 axes aside) are moved there first by a device
copy (permute.cl's strided copy). Rows too few to keep the device busy are split into chunks
reduced by separate work items, whose results a second kernel combines.

- mean and sum of floats (reduction.cl): pairwise in blocks (the error grows with log(n)), in f32
  for 16-bit storage; a sum is a mean with a count of 1 (x / 1 is x). A mean of zero elements is
  NaN (0 / 0), as in numpy, a sum 0.
- sum of integers (reduction.cl): in 64-bit words, wrapping around as numpy's int64 does.
- amax and amin (extrema.cl): the elements' bits compared as integers in the order of
  ``ops/extrema.py``, exact for every dtype.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue, _strided as strided
from ._tensor import from_numpy
from .extrema import order_options

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


def _reduce(p, x, axis, file: str, kernels: tuple, options: tuple, partial_dtype, extra=(), empty=None):
    """Reduce ``x`` over ``axis`` with ``kernels`` = (whole rows, chunks of rows, chunk results) of
    ``file``; ``extra``: arguments after the sizes of the first and last; ``empty``: the value of
    a reduction over zero elements."""
    tx, stay = enqueue.on_device(x)
    if p.count == 0:
        value = np.full(p.shape, empty, dtype=p.dtype)
        return from_numpy(value) if stay else value
    out = enqueue.empty(p.shape, p.dtype, not stay)
    if out.size:
        rows_x, rows, n = _reduced_last(tx, axis)
        chunk = _chunk(rows, n)
        whole, chunked, combine = kernels
        if chunk >= n:
            enqueue.run(file, whole, options, rows, rows_x.buffer, out.buffer, np.uint64(rows), np.uint64(n),
                        *extra, local=64)
        else:
            import pyopencl as cl
            from . import _runtime as runtime
            chunks = -(-n // chunk)
            partial = cl.Buffer(runtime.state().context, cl.mem_flags.READ_WRITE,
                                size=rows * chunks * np.dtype(partial_dtype).itemsize)
            enqueue.run(file, chunked, options, (chunks, rows), rows_x.buffer, partial,
                        np.uint64(rows), np.uint64(n), np.uint64(chunks), np.uint64(chunk),
                        local=enqueue.group(chunks, rows, widest=64, items=64))
            enqueue.run(file, combine, options, rows, partial, out.buffer, np.uint64(rows), np.uint64(chunks),
                        *extra, local=64)
    return enqueue.result(out, stay)


_FLOAT_SUMS = ("mean_rows", "partial_sums", "mean_partials")


def mean(p, x, axis, keepdims):
    options = enqueue.float_options(p.dtype) + enqueue.exact_divide_sqrt()   # sum / count as numpy rounds it
    real = enqueue.compute_dtype(p.dtype)
    return _reduce(p, x, axis, "reduction.cl", _FLOAT_SUMS, options, real, (real.type(p.count),), np.nan)


def sum(p, x, axis, keepdims):   # noqa: A001 - kernels are named after their op
    if p.dtype.kind == "f" or p.dtype == dt.bfloat16:
        real = enqueue.compute_dtype(p.dtype)
        return _reduce(p, x, axis, "reduction.cl", _FLOAT_SUMS, enqueue.float_options(p.dtype), real,
                       (real.type(1),), 0)
    source = np.dtype(x.dtype)
    options = (f"-DITYPE={_INTEGER_TYPES[source]}",)
    return _reduce(p, x, axis, "reduction.cl", ("int_sum_rows", "int_partial_sums", "int_sum_partials"), options,
                   np.int64, empty=0)


_INTEGER_TYPES = {dt.int8: "char", dt.uint8: "uchar", dt.int32: "int", dt.int64: "long"}


def _extreme(p, x, axis, larger: bool):
    return _reduce(p, x, axis, "extrema.cl", ("extreme_rows", "extreme_chunks", "extreme_partials"),
                   order_options(p.order, larger), p.order.word)


def amax(p, x, axis, keepdims):
    return _extreme(p, x, axis, True)


def amin(p, x, axis, keepdims):
    return _extreme(p, x, axis, False)


def _chunk(rows: int, n: int) -> int:
    """Elements per work item along a row: the whole row when there are rows enough, else a
    power-of-two multiple of BLOCK splitting the rows into about BUSY_ROWS pieces in all."""
    if rows >= BUSY_ROWS or n <= MIN_CHUNK:
        return n
    wanted = -(-rows * n // BUSY_ROWS)
    return max(MIN_CHUNK, 1 << (wanted - 1).bit_length())
