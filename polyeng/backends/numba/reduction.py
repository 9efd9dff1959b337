"""mean, sum, amax and amin as NUMBA kernels; sums pairwise, so the error does not grow with
the reduced length.

The input is seen as (outer, n, inner), the reduction over n: a C-contiguous input whose
reduced axes are adjacent (size-1 axes aside) is used in place; any other input is copied
once with its reduced axes moved last (inner = 1). 16-bit and f32 storage accumulate in f32,
f64 in f64, integers in int64 (``sum``); one set of kernels sums, and divides by the count for
``mean`` (``_finish``): by 1 for a float ``sum``, which is exact, so both ops run one compile.

Pairwise summation: values are summed in short blocks, and block sums are combined as in a
binary counter (block sums of equal weight are added together, as numpy's pairwise sum does
by recursion), so a sum of n values carries O(log n) roundings, not O(n).
- inner = 1 (along rows): each row, or each of a few segments of a long row when the
  rows are too few to occupy the threads, is summed in blocks of _BLOCK values (the block
  loop vectorizes into several accumulators); segment sums are added in a second pass. A row
  of one block has a kernel of its own.
- inner > 1 (e.g. the leading axes): lanes of the inner axis are summed side by side, over
  blocks of _ROWS rows at a time, each lane pairwise on its own; the loops vectorize across
  the lanes, so memory is read in its order, with no transposed copy.

amax and amin read the elements as integers of their width and keep the best key in the order
of ``ops/extrema.py`` (a NaN's key past every number's): integer maxima vectorize, need no
order of their own, and give BASIC's bits. Rows and lanes are cut as for the sums.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from ._runtime import inline, jit, launch, threads_for
from ._storage import compute_dtype, kernel_view, narrow, widen

_BLOCK = 1024       # values per block of a row (LLVM sums it in 4 x 16 f32 lanes, 16 values each)
_ROWS = 16          # rows per block of the lanes kernel
_LANES = 256        # inner lanes per task of the lanes kernel
_TASK_VALUES = 32 * 1024   # a row segment is at least this long


def _finish(total, count):
    """A sum as the op returns it: divided by ``count`` (mean), or as it is (``count`` None: sum)."""


@overload(_finish, inline="always")
def _finish_impl(total, count):
    if isinstance(count, types.NoneType):
        return lambda total, count: total
    return lambda total, count: total / count


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
def _sum_short_rows(x, out, chunks, zero, count):
    """_sum_rows for rows of at most _BLOCK values, one block each: the same sums without the
    pairwise bookkeeping, which made the common short rows (a last axis of 768) 15% slower."""
    rows, n = x.shape
    for c in prange(chunks):
        for r in range(c * rows // chunks, (c + 1) * rows // chunks):
            row = x[r]
            s = zero
            for k in range(n):
                s += widen(row[k])
            out[r] = narrow(_finish(s, count), out)


@jit(parallel=True)
def _sum_rows(x, out, sums, partials, zero, count):
    """out[r] = sum (or mean) of row x[r]. With ``sums.shape[1]`` > 1 each row is cut in that many
    segments, summed in parallel into ``sums`` and added in a second pass. partials (chunks,
    levels): block-sum scratch per parallel chunk."""
    rows, n = x.shape
    parts = sums.shape[1]
    segment = -(-n // parts)
    segment = -(-segment // _BLOCK) * _BLOCK   # whole blocks
    items = rows * parts
    chunks = partials.shape[0]
    for c in prange(chunks):
        partial = partials[c]
        for i in range(c * items // chunks, (c + 1) * items // chunks):
            if parts == 1:
                out[i] = narrow(_finish(_row_sum(x[i], partial, zero), count), out)
            else:
                r = i // parts
                lo = min((i - r * parts) * segment, n)
                sums[r, i - r * parts] = _row_sum(x[r, lo:min(lo + segment, n)], partial, zero)
    if parts > 1:
        for r in prange(rows):
            total = sums[r, 0]
            for s in range(1, parts):
                total += sums[r, s]
            out[r] = narrow(_finish(total, count), out)


@jit(parallel=True)
def _sum_lanes(x, out, scratch, count):
    """out[o, k] = sum (or mean) of x[o, :, k] for x (outer, n, inner); tasks are (o, block of lanes).
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
                dst[k] = narrow(_finish(acc[k], count), dst)


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


def _parts(outer: int, n: int, threads: int) -> int:
    """Segments each of ``outer`` rows of ``n`` values is cut in: enough rows for every thread, or
    each row in segments of at least _TASK_VALUES."""
    return 1 if outer >= 2 * threads else min(-(-2 * threads // outer), max(1, n // _TASK_VALUES))


def _sum(p, x, axis, count):
    """The sum of ``x`` over ``axis``, divided by ``count`` unless it is None."""
    out = np.empty(p.shape, p.dtype)
    if out.size == 0:
        return out
    real = compute_dtype(x.dtype) if p.dtype.kind != "i" else p.dtype   # integers: int64
    src = kernel_view(_as_rows(x, axis))
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    outer, n, inner = src.shape
    dst = kernel_view(out)
    threads = threads_for(x.nbytes)   # the work is reading x: a small result can be a long sum
    zero = real.type(0)
    if inner == 1:
        parts = _parts(outer, n, threads)
        chunks = min(outer * parts, 4 * threads)
        if parts == 1 and n <= _BLOCK:
            launch(_sum_short_rows, x.nbytes, src.reshape(outer, n), dst.reshape(-1), chunks, zero, count)
            return out
        levels = max(1, -(-n // _BLOCK)).bit_length() + 1
        sums = np.empty((outer if parts > 1 else 0, parts), real)
        launch(_sum_rows, x.nbytes, src.reshape(outer, n), dst.reshape(-1), sums,
               np.empty((chunks, levels), real), zero, count)
        return out
    lanes = min(inner, _LANES)
    chunks = min(outer * -(-inner // lanes), 4 * threads)
    levels = max(1, -(-n // _ROWS)).bit_length() + 1
    launch(_sum_lanes, x.nbytes, src, dst.reshape(outer, inner), np.empty((chunks, levels + 1, lanes), real),
           count)
    return out


def mean(p, x, axis, keepdims):
    if p.count == 0:   # 0 / 0, as numpy and PyTorch
        return np.full(p.shape, np.nan, p.dtype)
    return _sum(p, x, axis, compute_dtype(x.dtype).type(p.count))


def sum(p, x, axis, keepdims):   # noqa: A001 - kernels are named after their op
    if p.count == 0:
        return np.zeros(p.shape, p.dtype)
    # a float sum is divided by 1 (exact: every value, NaN, inf and -0.0 as it was), so that it runs
    # mean's compile of the kernel: one compile per dtype for both ops, not two
    return _sum(p, x, axis, None if p.dtype.kind in "iub" else compute_dtype(x.dtype).type(1))


# -- amax and amin ------------------------------------------------------------------------------

def _word(value, like):
    """``value`` as an integer of ``like``'s type: numba widens narrow integer arithmetic to 64
    bits, which would keep 8 and 16-bit keys from filling the vector lanes."""


@overload(_word, inline="always")
def _word_impl(value, like):
    to = as_dtype(like).type
    return lambda value, like: to(value)


@inline
def _key(v, order):
    """The element ``v`` (a word) in the order's key, a NaN as ``order[3]``; ``order`` holds words:
    (magnitude, infinity, sign shift, NaN key)."""
    magnitude, infinity, shift, nan_key = order
    key = _word(v ^ ((v >> shift) & magnitude), v)
    return nan_key if _word(v & magnitude, v) > infinity else key


@inline
def _best(larger, a, b):
    if larger:
        return max(a, b)
    return min(a, b)


@inline
def _unkey(key, order):
    return _word(key ^ ((key >> order[2]) & order[0]), key)


@inline
def _extreme_rows(larger, x, out, bests, order, start, chunks):
    """out[r] = the best of row x[r] (``start``: the best's identity). With ``bests.shape[1]`` > 1
    each row is cut in that many segments, whose bests are combined in a second pass."""
    rows, n = x.shape
    parts = bests.shape[1]
    segment = -(-n // parts)
    items = rows * parts
    for c in prange(chunks):
        for i in range(c * items // chunks, (c + 1) * items // chunks):
            r = i // parts
            lo = min((i - r * parts) * segment, n)
            row = x[r, lo:min(lo + segment, n)]
            best = start
            for k in range(row.size):
                best = _best(larger, best, _key(row[k], order))
            if parts == 1:
                out[r] = _unkey(best, order)
            else:
                bests[r, i - r * parts] = best
    if parts > 1:
        for r in prange(rows):
            best = bests[r, 0]
            for s in range(1, parts):
                best = _best(larger, best, bests[r, s])
            out[r] = _unkey(best, order)


@inline
def _extreme_lanes(larger, x, out, scratch, order, start):
    """out[o, k] = the best of x[o, :, k] for x (outer, n, inner); tasks are (o, block of lanes),
    scratch (chunks, lanes) the running bests."""
    outer, n, inner = x.shape
    lanes = scratch.shape[1]
    blocks = (inner + lanes - 1) // lanes
    tasks = outer * blocks
    chunks = scratch.shape[0]
    for c in prange(chunks):
        acc = scratch[c]
        for t in range(c * tasks // chunks, (c + 1) * tasks // chunks):
            o = t // blocks
            lo = (t - o * blocks) * lanes
            w = min(lo + lanes, inner) - lo
            for k in range(w):
                acc[k] = start
            for j in range(n):
                src = x[o, j, lo:lo + w]
                for k in range(w):
                    acc[k] = _best(larger, acc[k], _key(src[k], order))
            dst = out[o, lo:lo + w]
            for k in range(w):
                dst[k] = _unkey(acc[k], order)


# one kernel per op and shape of work, the op a constant in it (as arithmetic's kernels)
@jit(parallel=True)
def _amax_rows(x, out, bests, order, start, chunks):
    _extreme_rows(True, x, out, bests, order, start, chunks)


@jit(parallel=True)
def _amin_rows(x, out, bests, order, start, chunks):
    _extreme_rows(False, x, out, bests, order, start, chunks)


@jit(parallel=True)
def _amax_lanes(x, out, scratch, order, start):
    _extreme_lanes(True, x, out, scratch, order, start)


@jit(parallel=True)
def _amin_lanes(x, out, scratch, order, start):
    _extreme_lanes(False, x, out, scratch, order, start)


def _extreme(p, x, axis, larger: bool):
    out = np.empty(p.shape, p.dtype)
    if out.size == 0:
        return out
    order = p.order
    word = order.word.type
    info = np.iinfo(order.word)
    keys = (word(order.magnitude), word(order.infinity), word(order.bits - 1), word(info.max if larger else info.min))
    start = word(info.min if larger else info.max)
    src = _as_rows(x, axis).view(order.word)
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    outer, n, inner = src.shape
    dst = out.view(order.word)
    threads = threads_for(x.nbytes)
    if inner == 1:
        parts = _parts(outer, n, threads)
        bests = np.empty((outer if parts > 1 else 0, parts), order.word)
        launch(_amax_rows if larger else _amin_rows, x.nbytes, src.reshape(outer, n), dst.reshape(-1), bests,
               keys, start, min(outer * parts, 4 * threads))
        return out
    lanes = min(inner, _LANES)
    chunks = min(outer * -(-inner // lanes), 4 * threads)
    launch(_amax_lanes if larger else _amin_lanes, x.nbytes, src, dst.reshape(outer, inner),
           np.empty((chunks, lanes), order.word), keys, start)
    return out


def amax(p, x, axis, keepdims):
    return _extreme(p, x, axis, True)


def amin(p, x, axis, keepdims):
    return _extreme(p, x, axis, False)
