"""mean as NUMBA kernels, summing pairwise so the error does not grow with the reduced length.

The input is seen as (outer, n, inner), the mean taken over n: a C-contiguous input whose
reduced axes are adjacent (size-1 axes aside) is used in place; any other input is copied
once with its reduced axes moved last (inner = 1). 16-bit and f32 storage accumulate in f32,
f64 in f64.

Pairwise summation: values are summed in short blocks, and block sums are combined as in a
binary counter (block sums of equal weight are added together, as numpy's pairwise sum does
by recursion), so a sum of n values carries O(log n) roundings, not O(n).
- inner = 1 (a mean along rows): each row, or each of a few segments of a long row when the
  rows are too few to occupy the threads, is summed in blocks of _BLOCK values (the block
  loop vectorizes into several accumulators); segment sums are added in a second pass. A row
  of one block has a kernel of its own.
- inner > 1 (e.g. the leading axes): lanes of the inner axis are summed side by side, over
  blocks of _ROWS rows at a time, each lane pairwise on its own; the loops vectorize across
  the lanes, so memory is read in its order, with no transposed copy.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._runtime import inline, jit, launch, threads_for
from ._storage import compute_dtype, kernel_view, narrow, widen

_BLOCK = 1024       # values per block of a row (LLVM sums it in 4 x 16 f32 lanes, 16 values each)
_ROWS = 16          # rows per block of the lanes kernel
_LANES = 256        # inner lanes per task of the lanes kernel
_TASK_VALUES = 32 * 1024   # a row segment is at least this long


@inline
def _row_sum(row, partial, zero):
    """Pairwise sum of the 1-D ``row``; ``partial`` (compute dtype, >= log2(blocks) + 1 long) holds
    the pending block sums, partial[l] a sum of 2**l blocks; ``zero`` is 0 in the compute dtype."""
    n = row.size
    count = 0
    for lo in range(0, n, _BLOCK):
        block = row[lo:min(lo + _BLOCK, n)]
        s = zero
        for k in range(block.size):
            s += widen(block[k])
        count += 1
        level, carry = 0, count
        while carry & 1 == 0:   # merge equal-weight sums, as numpy's pairwise recursion does
            s = partial[level] + s
            level += 1
            carry >>= 1
        partial[level] = s
    total = zero
    level = 0
    while count:
        if count & 1:
            total += partial[level]
        count >>= 1
        level += 1
    return total


@jit(parallel=True)
def _mean_short_rows(x, out, chunks, count):
    """_mean_rows for rows of at most _BLOCK values, one block each: the same sums without the
    pairwise bookkeeping, which made the common short rows (a last axis of 768) 15% slower."""
    rows, n = x.shape
    zero = count - count
    for c in prange(chunks):
        for r in range(c * rows // chunks, (c + 1) * rows // chunks):
            row = x[r]
            s = zero
            for k in range(n):
                s += widen(row[k])
            out[r] = narrow(s / count, out)


@jit(parallel=True)
def _mean_rows(x, out, sums, partials, count):
    """out[r] = mean of row x[r]. With ``sums.shape[1]`` > 1 each row is cut in that many segments,
    summed in parallel into ``sums`` and added in a second pass. partials (chunks, levels):
    block-sum scratch per parallel chunk."""
    rows, n = x.shape
    parts = sums.shape[1]
    segment = -(-n // parts)
    segment = -(-segment // _BLOCK) * _BLOCK   # whole blocks
    zero = count - count
    items = rows * parts
    chunks = partials.shape[0]
    for c in prange(chunks):
        partial = partials[c]
        for i in range(c * items // chunks, (c + 1) * items // chunks):
            if parts == 1:
                out[i] = narrow(_row_sum(x[i], partial, zero) / count, out)
            else:
                r = i // parts
                lo = min((i - r * parts) * segment, n)
                sums[r, i - r * parts] = _row_sum(x[r, lo:min(lo + segment, n)], partial, zero)
    if parts > 1:
        for r in prange(rows):
            total = sums[r, 0]
            for s in range(1, parts):
                total += sums[r, s]
            out[r] = narrow(total / count, out)


@jit(parallel=True)
def _mean_lanes(x, out, scratch, count):
    """out[o, k] = mean of x[o, :, k] for x (outer, n, inner); tasks are (o, block of lanes).
    scratch (chunks, levels + 1, lanes): row 0 the running block sum, rows 1.. the pending
    pairwise sums (row 1 + l: a sum of 2**l blocks)."""
    outer, n, inner = x.shape
    lanes = scratch.shape[2]
    blocks = (inner + lanes - 1) // lanes
    tasks = outer * blocks
    chunks = scratch.shape[0]
    for c in prange(chunks):
        buf = scratch[c]
        acc = buf[0]
        for t in range(c * tasks // chunks, (c + 1) * tasks // chunks):
            o = t // blocks
            lo = (t - o * blocks) * lanes
            w = min(lo + lanes, inner) - lo
            count_blocks = 0
            for j0 in range(0, n, _ROWS):
                src = x[o, j0, lo:lo + w]
                for k in range(w):
                    acc[k] = widen(src[k])
                for j in range(j0 + 1, min(j0 + _ROWS, n)):
                    src = x[o, j, lo:lo + w]
                    for k in range(w):
                        acc[k] += widen(src[k])
                count_blocks += 1
                level, carry = 1, count_blocks
                while carry & 1 == 0:
                    pending = buf[level]
                    for k in range(w):
                        acc[k] += pending[k]
                    level += 1
                    carry >>= 1
                target = buf[level]
                for k in range(w):
                    target[k] = acc[k]
            for k in range(w):
                acc[k] = 0
            level = 1
            while count_blocks:
                if count_blocks & 1:
                    pending = buf[level]
                    for k in range(w):
                        acc[k] += pending[k]
                count_blocks >>= 1
                level += 1
            dst = out[o, lo:lo + w]
            for k in range(w):
                dst[k] = narrow(acc[k] / count, dst)


def _as_rows(x, axis):
    """``x`` as (outer, n, inner) with the mean over n, without a copy where the layout allows."""
    reduced = list(axis)
    if not reduced:   # a 0-d input: each value is its own mean
        return x.reshape(-1, 1, 1)
    first, last = reduced[0], reduced[-1]
    between = [d for d in range(first, last + 1) if d not in axis and x.shape[d] != 1]
    if not between:
        x = np.ascontiguousarray(x)
        outer = math.prod(x.shape[:first])
        inner = math.prod(x.shape[last + 1:])
        return x.reshape(outer, -1, inner)
    kept = [d for d in range(x.ndim) if d not in axis]
    moved = np.ascontiguousarray(np.transpose(x, kept + reduced))
    return moved.reshape(math.prod(x.shape[d] for d in kept), -1, 1)


def mean(p, x, axis, keepdims):
    out = np.empty(p.shape, p.dtype)
    if out.size == 0:
        return out
    if p.count == 0:   # 0 / 0, as numpy and PyTorch
        out[...] = np.nan
        return out
    real = compute_dtype(x.dtype)
    src = kernel_view(_as_rows(x, axis))
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    outer, n, inner = src.shape
    dst = kernel_view(out)
    threads = threads_for(x.nbytes)   # the work is reading x: a small result can be a long mean
    count = real.type(p.count)
    if inner == 1:
        parts = 1 if outer >= 2 * threads else min(-(-2 * threads // outer), max(1, n // _TASK_VALUES))
        chunks = min(outer * parts, 4 * threads)
        if parts == 1 and n <= _BLOCK:
            launch(_mean_short_rows, x.nbytes, src.reshape(outer, n), dst.reshape(-1), chunks, count)
            return out
        levels = max(1, -(-n // _BLOCK)).bit_length() + 1
        sums = np.empty((outer if parts > 1 else 0, parts), real)
        launch(_mean_rows, x.nbytes, src.reshape(outer, n), dst.reshape(-1), sums,
               np.empty((chunks, levels), real), count)
        return out
    lanes = min(inner, _LANES)
    chunks = min(outer * -(-inner // lanes), 4 * threads)
    levels = max(1, -(-n // _ROWS)).bit_length() + 1
    launch(_mean_lanes, x.nbytes, src, dst.reshape(outer, inner), np.empty((chunks, levels + 1, lanes), real),
           count)
    return out
