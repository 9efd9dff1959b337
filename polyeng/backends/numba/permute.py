"""permute_contiguous as NUMBA kernels: a C-contiguous copy of ``x.transpose(dims)``.

The permutation is first reduced: size-1 axes are dropped and input axes that stay adjacent
and in order in the output are merged, so e.g. (32, 128, 12, 64) with dims (0, 2, 1, 3) becomes
a copy of 64-element rows, and an identity permutation becomes one flat copy. What remains is
one of two kernels over any rank (shapes and strides are passed as arrays):

- the input's last axis stays last: copy contiguous rows to their strided sources;
- otherwise: a batched 2-D transpose in square tiles, so reads and writes both stay in cache.

Elements are moved as unsigned integers of their width (bit-exact for every dtype).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import prange

from ._runtime import jit, launch

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_TASK_ELEMENTS = 16 * 1024   # elements per parallel task of the row copy
_TILE = 32                   # tile edge of the transpose (32 x 32 x 8 bytes fits L1 twice)


def reduce_permutation(shape, dims):
    """``(in_shape, perm)`` equivalent to permuting ``shape`` by ``dims``, with size-1 axes
    dropped and runs of input axes that stay adjacent in the output merged into one."""
    kept = [d for d in range(len(shape)) if shape[d] != 1]
    renumber = {d: k for k, d in enumerate(kept)}
    groups = []   # runs of consecutive input axes, in output order
    for d in dims:
        if shape[d] == 1:
            continue
        k = renumber[d]
        if groups and groups[-1][-1] + 1 == k:
            groups[-1].append(k)
        else:
            groups.append([k])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    position = {g: i for i, g in enumerate(order)}
    in_shape = [math.prod(shape[kept[k]] for k in groups[g]) for g in order]
    return in_shape, [position[g] for g in range(len(groups))]


@jit(parallel=True)
def _copy_rows(x, out, shape, strides, length, rows_per_task):
    """Output row ``r`` (``length`` elements, multi-index over ``shape``) copies the input run
    starting at ``sum(index * strides)``. Each task walks its rows with an odometer."""
    rank = shape.size
    rows = out.size // length
    for task in prange((rows + rows_per_task - 1) // rows_per_task):
        row = task * rows_per_task
        stop = min(row + rows_per_task, rows)
        index = np.empty(rank, np.int64)
        rest = row
        source = 0
        for d in range(rank - 1, -1, -1):
            q = rest // shape[d]
            index[d] = rest - q * shape[d]
            source += index[d] * strides[d]
            rest = q
        while row < stop:
            # copying between slice views vectorizes; indexing x[source + k] directly does not
            dst = out[row * length:(row + 1) * length]
            src = x[source:source + length]
            for k in range(length):
                dst[k] = src[k]
            row += 1
            d = rank - 1
            while d >= 0:
                index[d] += 1
                source += strides[d]
                if index[d] < shape[d]:
                    break
                source -= shape[d] * strides[d]
                index[d] = 0
                d -= 1


@jit(parallel=True)
def _transpose(x, out, batch_shape, batch_in, batch_out, rows, cols, row_stride, col_stride, tile):
    """For every batch index: ``out[o + i * row_stride + j] = x[s + j * col_stride + i]`` for
    ``i < rows`` (the input's last axis) and ``j < cols`` (the output's last axis), tile by tile."""
    rank = batch_shape.size
    row_tiles = (rows + tile - 1) // tile
    col_tiles = (cols + tile - 1) // tile
    tiles = row_tiles * col_tiles
    batches = 1
    for d in range(rank):
        batches *= batch_shape[d]
    for task in prange(batches * tiles):
        b = task // tiles
        t = task - b * tiles
        ti = t // col_tiles
        i0 = ti * tile
        j0 = (t - ti * col_tiles) * tile
        source = 0
        target = 0
        rest = b
        for d in range(rank - 1, -1, -1):
            q = rest // batch_shape[d]
            i = rest - q * batch_shape[d]
            source += i * batch_in[d]
            target += i * batch_out[d]
            rest = q
        for i in range(i0, min(i0 + tile, rows)):
            dst = target + i * row_stride
            src = source + i
            for j in range(j0, min(j0 + tile, cols)):
                out[dst + j] = x[src + j * col_stride]


def _contiguous_base(x, dims):
    """A C-contiguous array and dims giving the same result, without copying when ``x`` is a
    transpose of a contiguous array (a Fortran-ordered array, a permuted view)."""
    if x.flags.c_contiguous:
        return x, dims
    order = sorted(range(x.ndim), key=lambda d: -abs(x.strides[d]))
    base = x.transpose(order)
    if base.flags.c_contiguous:
        axis_in_base = {d: k for k, d in enumerate(order)}
        return base, tuple(axis_in_base[d] for d in dims)
    return np.ascontiguousarray(x), dims


@functools.lru_cache(maxsize=256)
def _plan(shape, dims, itemsize):
    """``(kernel, arguments after source and target, element view)`` for one permutation; models
    repeat the same few permutations, so the Python arithmetic runs once per distinct call."""
    in_shape, perm = reduce_permutation(shape, dims)
    bits = _BITS[itemsize]
    if len(perm) <= 1:
        return None, (), bits
    in_strides = np.cumprod([1] + in_shape[:0:-1])[::-1]
    out_shape = [in_shape[p] for p in perm]
    last = len(perm) - 1
    if perm[-1] == last:
        # 8-byte elements move as pairs of 4-byte ones: rows stay contiguous, one compile fewer
        pair = 2 if itemsize == 8 else 1
        length = in_shape[-1] * pair
        strides = np.array([in_strides[p] * pair for p in perm[:-1]], np.int64)
        return _copy_rows, (np.array(out_shape[:-1], np.int64), strides, length,
                            max(1, _TASK_ELEMENTS // length)), np.uint32 if pair == 2 else bits
    out_strides = np.cumprod([1] + out_shape[:0:-1])[::-1]
    row_axis = perm.index(last)   # where the input's last axis lands in the output
    batch = [k for k in range(len(perm) - 1) if k != row_axis]
    return _transpose, (np.array([out_shape[k] for k in batch], np.int64),
                        np.array([in_strides[perm[k]] for k in batch], np.int64),
                        np.array([out_strides[k] for k in batch], np.int64), in_shape[-1], out_shape[-1],
                        int(out_strides[row_axis]), int(in_strides[perm[-1]]), _TILE), bits


def permute_contiguous(p, x, dims):
    out = np.empty(p.shape, x.dtype)
    if out.size == 0:
        return out
    x, dims = _contiguous_base(x, dims)
    kernel, args, view = _plan(x.shape, tuple(dims), x.dtype.itemsize)
    source, target = x.reshape(-1).view(view), out.reshape(-1).view(view)
    if kernel is None:
        np.copyto(target, source)
    else:
        launch(kernel, out.nbytes, source, target, *args)
    return out
