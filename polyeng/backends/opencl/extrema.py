"""maximum and minimum on OPENCL (extrema.cl), with numpy broadcasting.

Both operands are first promoted to the output dtype (numpy's ``astype``, as BASIC promotes).
Each then keeps its own buffer and is read through element strides against the output shape, 0
along the axes it is broadcast over, in the layout of ``_strided.py`` (operands of one shape skip
the layout: a flat run). Elements are compared as integers of their width in the order of
``ops/extrema.py``, so every dtype is exact and f64 needs no cl_khr_fp64.
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue, _strided as strided


def order_options(order, larger: bool) -> tuple:
    """Build options of extrema.cl for elements of ``order`` (an ``ops.extrema.Order``)."""
    signed = ("-DSIGNED_WORDS=1",) if order.word.kind == "i" else ()
    return (f"-DWORD_BYTES={order.word.itemsize}", f"-DORDER_MAG={order.magnitude:#x}",
            f"-DORDER_INF={order.infinity:#x}") + signed + (("-DLARGER=1",) if larger else ())


def _run(larger: bool, p, first, second):
    ta, a_stays = enqueue.promoted(first, p.dtype)
    tb, b_stays = enqueue.promoted(second, p.dtype)
    stay = a_stays or b_stays
    out = enqueue.empty(p.shape, p.dtype, not stay)
    options = order_options(p.order, larger)
    if out.size and ta.shape == tb.shape:   # no broadcast: one flat run without row tables
        per = enqueue.runs_per_item(-(-out.size // 16))
        enqueue.run("extrema.cl", "extreme_flat", options, -(-out.size // (16 * per)), ta.buffer, tb.buffer,
                    out.buffer, np.uint64(out.size), np.uint64(per), local=enqueue.group_items(per))
    elif out.size:
        lay = strided.layout(p.shape, [strided.broadcast_strides(ta.shape, p.shape), strided.broadcast_strides(
            tb.shape, p.shape), strided.contiguous_strides(p.shape)])
        runs = -(-lay.width // 16)
        per = enqueue.runs_per_item(runs, runs * lay.height * lay.rows)
        blocks, wide = -(-runs // per), enqueue.group_items(per)
        local = enqueue.group(blocks, lay.height, widest=wide, items=wide) + (1,)
        args = lay.args()
        enqueue.run("extrema.cl", "extreme16", options, (blocks, lay.height, lay.rows),
                    ta.buffer, tb.buffer, out.buffer, *args[:3], np.uint64(per), *args[3:], local=local)
    return enqueue.result(out, stay)


def maximum(p, a, b):
    return _run(True, p, a, b)


def minimum(p, a, b):
    return _run(False, p, a, b)
