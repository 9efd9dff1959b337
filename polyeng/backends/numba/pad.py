"""pad as a NUMBA kernel: one parallel launch over the output's rows, bit for bit for every dtype.

The op's ``movement_plan`` reduces the call to its padded dims: dims not padded merge with their
neighbours, and those after the last padded dim become blocks of contiguous words (elements move
as unsigned integers as wide as a block allows, up to 8 bytes). The output is then rows along the
last padded dim. A task takes a run of rows (or, for rows longer than a task, a stretch of one):
each row finds its source row through the outer dims (constant mode: none, the row is the fill
value), copies the part of the row that reads the source in order as one contiguous run, and
maps the padded positions at its ends one by one (reflect, replicate) or fills them.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._runtime import inline, jit, launch

_TASK_WORDS = 16 * 1024   # output words per parallel task
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
CONSTANT, REFLECT, REPLICATE = 0, 1, 2
_MODES = {"constant": CONSTANT, "reflect": REFLECT, "replicate": REPLICATE}


@inline
def _source(p, n, mode):
    """The input position output position ``p`` (relative to the input's start) reads."""
    if p < 0:
        return -p if mode == REFLECT else 0
    if p >= n:
        return 2 * (n - 1) - p if mode == REFLECT else n - 1
    return p


@inline
def _plane(plane, in_shape, out_shape, left, in_strides, mode):
    """Where the source of output plane ``plane`` (its index over every reduced dim but the last
    two) starts in x, or -1 where constant padding leaves it outside x."""
    base = 0
    rest = plane
    for d in range(in_shape.size - 3, -1, -1):
        q = rest // out_shape[d]
        p = rest - q * out_shape[d] - left[d]
        rest = q
        if p < 0 or p >= in_shape[d]:
            if mode == CONSTANT:
                return -1
            p = _source(p, in_shape[d], mode)
        base += p * in_strides[d]
    return base


@inline
def _row(x, out, target, base, c0, c1, lo, hi, shift, n_in, inner, mode, fill):
    """Positions ``c0:c1`` of the output row at ``target``, whose source row is at ``base`` (-1:
    none, the fill value). Positions ``lo:hi`` read the source in order."""
    if base < 0:
        for w in range(target + c0 * inner, target + c1 * inner):
            out[w] = fill
        return
    a = max(c0, lo)
    b = max(min(c1, hi), a)
    # slices indexed from 0 vectorize; made whether or not they are empty (a slice made only
    # under a condition kept numba from eliding its reference counting: 2x slower on short rows)
    dst = out[target + a * inner:target + b * inner]
    src = x[base + (a - shift) * inner:base + (b - shift) * inner]
    for w in range(dst.size):
        dst[w] = src[w]
    if mode == CONSTANT:
        for w in range(target + c0 * inner, target + min(c1, lo) * inner):
            out[w] = fill
        for w in range(target + max(c0, hi) * inner, target + c1 * inner):
            out[w] = fill
        return
    for o in range(c0, min(c1, lo)):
        at = base + _source(o - shift, n_in, mode) * inner
        for w in range(inner):
            out[target + o * inner + w] = x[at + w]
    for o in range(max(c0, hi), c1):
        at = base + _source(o - shift, n_in, mode) * inner
        for w in range(inner):
            out[target + o * inner + w] = x[at + w]


@jit(parallel=True)
def _pad_rows(x, out, in_shape, out_shape, left, in_strides, mode, fill, inner, rows, rows_per_task):
    """``out`` as ``rows`` rows of ``out_shape[-1]`` positions of ``inner`` words, a task taking
    ``rows_per_task`` of them; rows walk the planes of the last two reduced dims. The row is
    written out here rather than through ``_row``: on rows of 32 words that took twice as long."""
    last = in_shape.size - 1
    n_in, n_out, shift = in_shape[last], out_shape[last], left[last]
    lo = min(max(shift, 0), n_out)              # positions [lo, hi) read the source in order
    hi = min(max(shift + n_in, lo), n_out)
    h_in, h_out, h_shift, h_stride = 1, 1, 0, 0
    if last > 0:
        h_in, h_out, h_shift, h_stride = in_shape[last - 1], out_shape[last - 1], left[last - 1], in_strides[last - 1]
    row_words = n_out * inner
    for task in prange(-(-rows // rows_per_task)):
        row = task * rows_per_task
        stop = min(row + rows_per_task, rows)
        plane = row // h_out
        h = row - plane * h_out
        plane_base = _plane(plane, in_shape, out_shape, left, in_strides, mode)
        while row < stop:
            target = row * row_words
            p = h - h_shift
            if p < 0 or p >= h_in:
                p = -1 if mode == CONSTANT else _source(p, h_in, mode)
            if plane_base < 0 or p < 0:
                for w in range(target, target + row_words):
                    out[w] = fill
            else:
                base = plane_base + p * h_stride
                dst = out[target + lo * inner:target + hi * inner]
                src = x[base + (lo - shift) * inner:base + (hi - shift) * inner]
                for w in range(dst.size):
                    dst[w] = src[w]
                if mode == CONSTANT:
                    for w in range(target, target + lo * inner):
                        out[w] = fill
                    for w in range(target + hi * inner, target + row_words):
                        out[w] = fill
                else:
                    for o in range(lo):
                        at = base + _source(o - shift, n_in, mode) * inner
                        for w in range(inner):
                            out[target + o * inner + w] = x[at + w]
                    for o in range(hi, n_out):
                        at = base + _source(o - shift, n_in, mode) * inner
                        for w in range(inner):
                            out[target + o * inner + w] = x[at + w]
            row += 1
            h += 1
            if h == h_out and row < stop:
                h = 0
                plane += 1
                plane_base = _plane(plane, in_shape, out_shape, left, in_strides, mode)


@jit(parallel=True)
def _pad_long_rows(x, out, in_shape, out_shape, left, in_strides, mode, fill, inner, rows, blocks, block):
    """The same for rows longer than a task: task ``t`` writes positions ``(t % blocks) * block``
    onwards of row ``t // blocks``."""
    last = in_shape.size - 1
    n_in, n_out, shift = in_shape[last], out_shape[last], left[last]
    lo = min(max(shift, 0), n_out)
    hi = min(max(shift + n_in, lo), n_out)
    h_in, h_out, h_shift, h_stride = 1, 1, 0, 0
    if last > 0:
        h_in, h_out, h_shift, h_stride = in_shape[last - 1], out_shape[last - 1], left[last - 1], in_strides[last - 1]
    for task in prange(rows * blocks):
        row = task // blocks
        c0 = (task - row * blocks) * block
        plane = row // h_out
        plane_base = _plane(plane, in_shape, out_shape, left, in_strides, mode)
        p = row - plane * h_out - h_shift
        if p < 0 or p >= h_in:
            p = -1 if mode == CONSTANT else _source(p, h_in, mode)
        base = -1 if plane_base < 0 or p < 0 else plane_base + p * h_stride
        _row(x, out, row * n_out * inner, base, c0, min(c0 + block, n_out), lo, hi, shift, n_in, inner, mode, fill)


def pad(p, x, pads, mode, value):
    out = np.empty(p.shape, p.dtype)
    if out.size == 0:
        return out
    if x.size == 0:   # constant padding of an empty dim: nothing but the value
        out[...] = p.fill
        return out
    plan = p.plan
    x = np.ascontiguousarray(x)
    if plan.copy:
        np.copyto(out, x)
        return out
    word = _UINT[plan.word]
    fill = np.full(plan.word // p.dtype.itemsize, p.fill, p.dtype).view(word)[0]
    source = x.reshape(-1).view(word)
    source.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    arrays = (source, out.reshape(-1).view(word), plan.in_shape, plan.out_shape, plan.left, plan.in_strides)
    positions = int(plan.out_shape[-1])
    row_words = positions * plan.inner
    if row_words <= _TASK_WORDS:
        launch(_pad_rows, out.nbytes, *arrays, _MODES[mode], fill, plan.inner, plan.rows, _TASK_WORDS // row_words)
    else:
        blocks = -(-row_words // _TASK_WORDS)
        launch(_pad_long_rows, out.nbytes, *arrays, _MODES[mode], fill, plan.inner, plan.rows, blocks,
               -(-positions // blocks))
    return out
