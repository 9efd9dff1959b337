"""The comparisons on OPENCL (compare.cl), with numpy broadcasting, giving bools.

Both operands are first brought to the dtype they compare in (``p.common``, numpy's ``astype``,
as BASIC converts them). The kernel then compares integer keys: integers and bools as they are,
floats by sign and magnitude with NaN unordered (compare.cl), so every dtype is exact and f64
needs no cl_khr_fp64. Each operand keeps its own contiguous buffer and is read through element
strides against the output shape, 0 along the axes it is broadcast over, in the layout of
``_strided.py``; along the innermost merged axis every operand steps by 0 or 1, so one kernel
reads 16 lanes at a time for every broadcast (operands of one shape skip the layout: a flat run).
greater and greater_equal run less and less_equal with the operands swapped.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue, _strided as strided

# storage dtype -> (ELEM, KEY, MASK): how elements are loaded, compared, and what 16 comparisons give
_TYPES = {dt.int8: ("char", "char", "char"), dt.uint8: ("uchar", "uchar", "char"), dt.bool_: ("uchar", "uchar", "char"),
          dt.int32: ("int", "int", "int"), dt.int64: ("long", "long", "long"),
          dt.float16: ("ushort", "short", "short"), dt.bfloat16: ("ushort", "short", "short"),
          dt.float32: ("uint", "int", "int"), dt.float64: ("ulong", "long", "long")}
# float storage -> the bit pattern of +inf (a larger magnitude is NaN)
_INF_BITS = {dt.float16: 0x7C00, dt.bfloat16: 0x7F80, dt.float32: 0x7F800000, dt.float64: 0x7FF0000000000000}


def _options(op: str, dtype) -> tuple:
    dtype = np.dtype(dtype)
    elem, key, mask = _TYPES[dtype]
    options = (f"-DELEM={elem}", f"-DKEY={key}", f"-DMASK={mask}", f"-DOP_{op}=1")
    if dtype in dt.FLOAT_DTYPES:
        bits = 8 * dtype.itemsize
        suffix = "UL" if bits == 64 else "U"
        options += ("-DFLOAT_KEY=1", f"-DSIGN_SHIFT={bits - 1}", f"-DMAGNITUDE_BITS={(1 << bits - 1) - 1:#x}{suffix}",
                    f"-DINF_BITS={_INF_BITS[dtype]:#x}{suffix}")
    return options


def run_binary(file: str, options: tuple, p, first, second, common):
    """The bool result of ``file``'s ``<file stem>_flat`` or ``_strided`` kernel (built with
    ``options``) on ``first`` and ``second``, both in ``common``, broadcast to ``p.shape``."""
    ta, a_stays = enqueue.promoted(first, common)
    tb, b_stays = enqueue.promoted(second, common)
    stay = a_stays or b_stays
    out = enqueue.empty(p.shape, dt.bool_, not stay)
    stem = file[:-len(".cl")]
    if out.size and ta.shape == tb.shape:   # no broadcast: one flat run without row tables
        per = enqueue.runs_per_item(-(-out.size // 16))
        enqueue.run(file, f"{stem}_flat", options, -(-out.size // (16 * per)), ta.buffer, tb.buffer, out.buffer,
                    np.uint64(out.size), np.uint64(per), local=enqueue.group_items(per))
    elif out.size:
        operands = [strided.broadcast_strides(t.shape, p.shape) for t in (ta, tb)]
        lay = strided.layout(p.shape, operands + [strided.contiguous_strides(p.shape)])
        runs = -(-lay.width // 16)
        per = enqueue.runs_per_item(runs, runs * lay.height * lay.rows)
        blocks, wide = -(-runs // per), enqueue.group_items(per)
        local = enqueue.group(blocks, lay.height, widest=wide, items=wide) + (1,)
        args = lay.args()
        enqueue.run(file, f"{stem}_strided", options, (blocks, lay.height, lay.rows),
                    ta.buffer, tb.buffer, out.buffer, *args[:3], np.uint64(per), *args[3:], local=local)
    return enqueue.result(out, stay)


def _compare(op: str, p, first, second):
    return run_binary("compare.cl", _options(op, p.common), p, first, second, p.common)


def equal(p, a, b):
    return _compare("EQ", p, a, b)


def not_equal(p, a, b):
    return _compare("NE", p, a, b)


def greater(p, a, b):
    return _compare("LT", p, b, a)


def greater_equal(p, a, b):
    return _compare("LE", p, b, a)


def less(p, a, b):
    return _compare("LT", p, a, b)


def less_equal(p, a, b):
    return _compare("LE", p, a, b)
