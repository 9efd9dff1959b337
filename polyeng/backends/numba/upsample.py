"""upsample_bilinear2d and upsample_nearest as NUMBA kernels: gathers driven by the source
positions and weights that ``polyeng.ops.upsample`` prepares once per call signature.

nearest copies stored elements, so every dtype runs as the unsigned integer of its width (one
compile per element size; bit-exact for ints, bools and 16-bit floats), and computes the
source positions from the rules of ``NearestAxis`` as it writes: it keeps no table whose size
grows with the output. bilinear reads its storage natively (``widen``/``narrow``) and
computes in the tables' dtype (f32, f64 for f64).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._runtime import inline, jit, launch
from ._storage import kernel_view, narrow, widen

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MIN_TASKS = 32   # split planes into row blocks until there is this much independent work
# nearest gathers along W through a table (8 bytes a column, 24 while it is built) where that
# costs at most 1/_TABLE_SHARE of the output's bytes, else computes the positions
_TABLE_SHARE = 8 * 64
_NO_TABLE = np.zeros(0, np.uintp)


@inline
def _source(i, step, shift, last):
    """The input position output ``i`` copies along a dim: ops.upsample.NearestAxis's rule,
    ``i >> shift`` for ``shift >= 0``, else ``min(floor(i * step), last)`` in f32 (unsigned,
    so indexing needs no negative-index test)."""
    if shift >= 0:
        return np.uint64(i) >> np.uint64(shift)
    return min(np.uint64(np.floor(np.float32(i) * step)), last)


@jit(parallel=True)
def _nearest(x, steps, shifts, lasts, index_w, spread, rows_per_task, out):
    """``out[p, d, h, w] = x[p, source_d(d), source_h(h), source_w(w)]``, the sources given per
    dim by ``steps``, ``shifts`` and ``lasts`` (see ``_source``); along W by the table
    ``index_w`` instead where it is not empty (a lookup is cheaper than the arithmetic).

    Each task writes a block of ``rows_per_task`` rows of one output depth slice; a row whose
    source row is the previous row's copies that row. With ``spread`` > 0 the rows of ``out``
    are words of ``r`` elements, each word one input element times ``spread`` (r copies of its
    bits side by side), which vectorizes where a gather does not."""
    planes, out_d, out_h, out_w = out.shape
    blocks = (out_h + rows_per_task - 1) // rows_per_task
    step_w, shift_w, last_w = steps[2], shifts[2], lasts[2]
    for task in prange(planes * out_d * blocks):
        slab = task // blocks
        lo = (task - slab * blocks) * rows_per_task
        hi = min(lo + rows_per_task, out_h)
        p = slab // out_d
        od = slab - p * out_d
        plane = x[p, _source(od, steps[0], shifts[0], lasts[0])]
        previous = -1
        for oh in range(lo, hi):
            ih = np.int64(_source(oh, steps[1], shifts[1], lasts[1]))
            row = out[p, od, oh]
            if ih == previous:
                above = out[p, od, oh - 1]
                for j in range(out_w):
                    row[j] = above[j]
                continue
            previous = ih
            src = plane[ih]
            if spread:
                for j in range(out_w):
                    row[j] = src[j] * spread
            elif index_w.size:
                for j in range(out_w):
                    row[j] = src[index_w[j]]
            else:
                for j in range(out_w):
                    row[j] = src[_source(j, step_w, shift_w, last_w)]


def upsample_nearest(p, x, size, scale_factor):
    n, c = x.shape[:2]
    out = np.empty(p.shape, x.dtype)
    if out.size == 0:
        return out
    # canonical rank: (planes, D, H, W), missing leading spatial dims of size 1 (identity rules)
    pad = 3 - len(p.axes)
    axis_w = p.axes[-1]
    steps = np.array([1] * pad + [a.step for a in p.axes], np.float32)
    shifts = np.array([0] * pad + [a.shift for a in p.axes], np.int64)
    lasts = np.array([0] * pad + [a.in_size - 1 for a in p.axes], np.uint64)
    size = x.dtype.itemsize
    bits = word = _BITS[size]
    out_w, spread = axis_w.out_size, 0
    repeat = axis_w.repeat if axis_w.out_size > axis_w.in_size else 0
    index_w = _NO_TABLE
    if repeat * size in _BITS:   # each input element repeated: one word of `repeat` copies
        word, out_w = _BITS[repeat * size], axis_w.in_size
        spread = sum(1 << (8 * size * k) for k in range(repeat))
    elif out_w * _TABLE_SHARE <= out.nbytes:   # unsigned: the gather needs no negative-index test
        index_w = axis_w.table().astype(np.uintp)
    in_dhw = (1,) * pad + tuple(x.shape[2:])
    source = np.ascontiguousarray(x).view(bits).reshape((n * c,) + in_dhw)
    out_dh = (1,) * pad + tuple(a.out_size for a in p.axes[:-1])
    target = out.view(word).reshape((n * c,) + out_dh + (out_w,))
    planes = n * c * out_dh[0]
    rows_per_task = max(1, -(-out_dh[1] // -(-_MIN_TASKS // planes)))
    launch(_nearest, out.nbytes, source, steps, shifts, lasts, index_w, word(spread), rows_per_task, target)
    return out


@jit(parallel=True)
def _bilinear(x, lh0, lh1, w0, w1, lw0, lw1, pairs, used, slot0, slot1, rows_per_task, out):
    """Along W into a scratch block of input rows, then along H into ``out`` (torch's order).

    Each task is one plane's block of ``rows_per_task`` output rows. It interpolates along W
    the input rows its block reads (``used`` lists the rows read at all, ascending; output row
    ``oh`` reads ``used[slot0[oh]]`` and ``used[slot1[oh]]``). ``pairs = (lo, hi, c0, c1)``:
    for ``lo <= w < hi`` output columns ``2w`` and ``2w + 1`` read input columns ``w + c0,
    w + c0 + 1`` and ``w + c1, w + c1 + 1`` (any x2 resize): there the loop reads contiguous
    inputs and vectorizes; the other columns gather through ``w0``/``w1``."""
    planes = x.shape[0]
    out_h, out_w = out.shape[1], out.shape[2]
    lo_w, hi_w, c0, c1 = pairs[0], pairs[1], pairs[2], pairs[3]
    blocks = (out_h + rows_per_task - 1) // rows_per_task
    for task in prange(planes * blocks):
        p = task // blocks
        lo = (task - p * blocks) * rows_per_task
        hi = min(lo + rows_per_task, out_h)
        first, stop = slot0[lo], slot1[hi - 1] + 1
        rows = np.empty((stop - first, out_w), lw0.dtype)
        for k in range(first, stop):
            src, row = x[p, used[k]], rows[k - first]
            for j in range(2 * lo_w):
                row[j] = widen(src[w0[j]]) * lw0[j] + widen(src[w1[j]]) * lw1[j]
            # views starting at the pair range keep every index non-negative (no wraparound test)
            even, odd = src[lo_w + c0:], src[lo_w + c1:]
            l0, l1, dst = lw0[2 * lo_w:], lw1[2 * lo_w:], row[2 * lo_w:]
            for q in range(hi_w - lo_w):
                dst[2 * q] = widen(even[q]) * l0[2 * q] + widen(even[q + 1]) * l1[2 * q]
                dst[2 * q + 1] = widen(odd[q]) * l0[2 * q + 1] + widen(odd[q + 1]) * l1[2 * q + 1]
            for j in range(2 * hi_w, out_w):
                row[j] = widen(src[w0[j]]) * lw0[j] + widen(src[w1[j]]) * lw1[j]
        for oh in range(lo, hi):
            top, bottom = rows[slot0[oh] - first], rows[slot1[oh] - first]
            a, b = lh0[oh], lh1[oh]
            dst = out[p, oh]
            for j in range(out_w):
                dst[j] = narrow(top[j] * a + bottom[j] * b, dst)


def _pair_range(w0, w1, in_w):
    """``(lo, hi, c0, c1)`` for ``_bilinear``: the widest range of input columns around the middle
    whose two outputs read fixed offsets, or an empty range when the output is not 2x wide."""
    if len(w0) != 2 * in_w or in_w < 4:
        return np.zeros(4, np.int64)
    w = np.arange(in_w)
    c0, c1 = w0[0::2] - w, w0[1::2] - w
    mid = in_w // 2
    good = (c0 == c0[mid]) & (c1 == c1[mid]) & (w1[0::2] == w0[0::2] + 1) & (w1[1::2] == w0[1::2] + 1)
    if not good[mid]:
        return np.zeros(4, np.int64)
    bad = np.flatnonzero(~good)
    lo = int(bad[bad < mid].max()) + 1 if (bad < mid).any() else 0
    hi = int(bad[bad > mid].min()) if (bad > mid).any() else in_w
    return np.array([lo, hi, c0[mid], c1[mid]], np.int64)


def upsample_bilinear2d(p, x, size, scale_factor, align_corners):
    (h0, h1, lh0, lh1), (w0, w1, lw0, lw1) = p.coordinates
    n, c, in_h, in_w = x.shape
    out = np.empty(p.shape, x.dtype)
    if out.size == 0:
        return out
    planes = n * c
    blocks = -(-_MIN_TASKS // planes)
    rows_per_task = max(1, -(-len(h0) // blocks))
    source = kernel_view(np.ascontiguousarray(x)).reshape(planes, in_h, in_w)
    # unsigned column indices: the gathers need no negative-index test
    launch(_bilinear, out.nbytes, source, lh0, lh1, w0.astype(np.uintp), w1.astype(np.uintp), lw0, lw1,
           _pair_range(w0, w1, in_w), p.rows_read[0], *p.rows_read[1], rows_per_task,
           kernel_view(out).reshape(planes, len(h0), len(w0)))
    return out
