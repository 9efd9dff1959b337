"""add, sub, mul, div and pow on OPENCL (arithmetic.cl), with numpy broadcasting.

Both operands are first promoted to the output dtype (numpy's ``astype``, as BASIC's ufuncs
promote: int / int is float64 here too). Each then keeps its own contiguous buffer and is read
through element strides against the output shape, 0 along the axes it is broadcast over, in
the layout of ``_strided.py``; along the innermost merged axis every operand steps by 0 or 1,
so one kernel reads 16 lanes at a time for every broadcast (operands of one shape skip the
layout: a flat run). Integers (add, sub, mul) compute in the unsigned type of their width,
which wraps around as numpy does.
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue, _strided as strided

_UNSIGNED = {1: "uchar", 4: "uint", 8: "ulong"}


def _options(op: str, dtype) -> tuple:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return (f"-DITYPE={_UNSIGNED[dtype.itemsize]}", f"-DOP_{op.upper()}=1")
    return enqueue.float_options(dtype) + (f"-DOP_{op.upper()}=1",) + enqueue.exact_divide_sqrt()


def _run(op: str, p, first, second):
    ta, a_stays = enqueue.promoted(first, p.dtype)
    tb, b_stays = enqueue.promoted(second, p.dtype)
    stay = a_stays or b_stays
    out = enqueue.empty(p.shape, p.dtype, not stay)
    if out.size and ta.shape == tb.shape:   # no broadcast: one flat run without row tables
        per = enqueue.runs_per_item(-(-out.size // 16))
        enqueue.run("arithmetic.cl", "binary_flat", _options(op, p.dtype), -(-out.size // (16 * per)),
                    ta.buffer, tb.buffer, out.buffer, np.uint64(out.size), np.uint64(per), local=enqueue.group_items(per))
    elif out.size:
        lay = strided.layout(p.shape, [strided.broadcast_strides(ta.shape, p.shape), strided.broadcast_strides(tb.shape, p.shape),
                                       strided.contiguous_strides(p.shape)])
        runs = -(-lay.width // 16)
        per = enqueue.runs_per_item(runs, runs * lay.height * lay.rows)
        blocks, wide = -(-runs // per), enqueue.group_items(per)
        local = enqueue.group(blocks, lay.height, widest=wide, items=wide) + (1,)
        args = lay.args()
        enqueue.run("arithmetic.cl", "binary16", _options(op, p.dtype), (blocks, lay.height, lay.rows),
                    ta.buffer, tb.buffer, out.buffer, *args[:3], np.uint64(per), *args[3:], local=local)
    return enqueue.result(out, stay)


def add(p, a, b):
    return _run("add", p, a, b)


def sub(p, a, b):
    return _run("sub", p, a, b)


def mul(p, a, b):
    return _run("mul", p, a, b)


def div(p, a, b):
    return _run("div", p, a, b)


def pow(p, x, exponent):   # noqa: A001 (the op's name)
    return _run("pow", p, x, exponent)
