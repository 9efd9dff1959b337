"""upsample_bilinear2d and upsample_nearest as NUMBA kernels: gathers driven by the index and
weight tables that ``polyeng.ops.upsample`` prepares once per call signature.

nearest copies stored elements, so every dtype runs as the unsigned integer of its width (one
compile per element size, 8-byte elements as pairs of 4-byte ones; bit-exact for ints, bools
and 16-bit floats). bilinear reads its
storage natively (``widen``/``narrow``) and computes in the tables' dtype (f32, f64 for f64).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._runtime import jit, launch
from ._storage import kernel_view, narrow, widen

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MIN_TASKS = 32   # split planes into row blocks until there is this much independent work


@jit(parallel=True)
def _nearest(x, index_d, index_h, index_w, spread, run_starts, out):
    """``out[p, d, h, w] = x[p, index_d[d], index_h[h], index_w[w]]``.

    Output rows with the same source row form a run (``run_starts``): a task gathers the run's
    first row and copies it to the rest. With ``spread`` > 0 the rows of ``out`` are words of
    ``r`` elements and ``index_w`` is ``w // r``: each word is one element times ``spread``
    (r copies of its bits side by side), which vectorizes where a gather does not."""
    planes, out_d, _, out_w = out.shape
    runs = run_starts.size - 1
    for task in prange(planes * out_d * runs):
        plane_depth = task // runs
        run = task - plane_depth * runs
        p = plane_depth // out_d
        od = plane_depth - p * out_d
        first, stop = run_starts[run], run_starts[run + 1]
        src = x[p, index_d[od], index_h[first]]
        row = out[p, od, first]
        if spread:
            for j in range(out_w):
                row[j] = src[j] * spread
        else:
            for j in range(out_w):
                row[j] = src[index_w[j]]
        for oh in range(first + 1, stop):
            copy = out[p, od, oh]
            for j in range(out_w):
                copy[j] = row[j]


def upsample_nearest(p, x, size, scale_factor):
    n, c = x.shape[:2]
    out = np.empty(p.shape, x.dtype)
    if out.size == 0:
        return out
    # canonical rank: (planes, D, H, W), missing leading spatial dims of size 1
    index_d, index_h, index_w = [np.zeros(1, np.int64)] * (3 - len(p.indices)) + list(p.indices)
    in_w, out_w, size = x.shape[-1], len(index_w), x.dtype.itemsize
    bits = _BITS[size]
    word, spread = bits, 0
    repeat = out_w // in_w
    if out_w == repeat * in_w and repeat * size in _BITS and repeat > 1 and \
            np.array_equal(index_w, np.arange(out_w) // repeat):
        word, out_w = _BITS[repeat * size], in_w
        spread = sum(1 << (8 * size * k) for k in range(repeat))
        index_w = index_w[:0]
    elif size == 8:   # 8-byte elements gather as pairs of 4-byte ones (one compile fewer)
        bits = word = np.uint32
        index_w = np.stack([2 * index_w, 2 * index_w + 1], axis=1).reshape(-1)
        out_w = 2 * out_w
    in_dhw = (1,) * (5 - x.ndim) + tuple(x.shape[2:-1]) + (in_w * size // np.dtype(bits).itemsize,)
    source = np.ascontiguousarray(x).view(bits).reshape((n * c,) + in_dhw)
    target = out.view(word).reshape((n * c, len(index_d), len(index_h), out_w))
    run_starts = np.flatnonzero(np.diff(index_h, prepend=-1, append=-1))
    # unsigned column indices: the gather needs no negative-index test
    launch(_nearest, out.nbytes, source, index_d, index_h, index_w.astype(np.uintp), word(spread), run_starts, target)
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
