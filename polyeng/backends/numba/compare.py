"""The comparisons as one NUMBA walk over broadcast strides (also run by ``logical.py``'s and, or, xor).

An operand whose dtype differs from the one both compare in (``p.common``) is converted on the
host first (the other one, usually the large one, is read in place; every such conversion is
exact but int64 to f64, which rounds as numpy's comparison loops do). Each operand is then its
own memory plus element strides against the output (``_broadcast``); axes every operand walks as
one are merged, and the output is cut into equal flat ranges, one per task, walked as rows of the
innermost merged axis. Along a row each operand steps by 1 (read as a slice: the loop vectorizes)
or by 0 (one value for the whole row); an operand with any other inner step is copied contiguous
first. 16-bit floats are read as stored and widened to f32, which orders them exactly; floats
compare as IEEE says (NaN unordered, -0.0 == 0.0). Bools are read as uint8.

greater and greater_equal are less and less_equal with the operands swapped, so one kernel of
four comparisons (the op an argument, chosen once per row) serves all six: one compile per dtype.
"""
from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from ...engine import dtypes as dt
from ._broadcast import merged_layout, operand_view
from .arithmetic import walk
from ._cast import converted
from ._runtime import inline, jit, launch, threads_for
from ._storage import kernel_view, widen

EQ, NE, LT, LE = range(4)
_TASK_ELEMENTS = 32 * 1024   # at least this much output per parallel task


def element(v, k):
    """Element ``k`` of a row: of an array, widened; of a broadcast row, its one (widened) value."""


@overload(element, inline="always")
def _element_impl(v, k):
    if isinstance(v, types.Array):
        return lambda v, k: widen(v[k])
    return lambda v, k: v


@inline
def _compare_row(op, x, y, dst):
    """dst = x op y over one row; the op is chosen once per row, each loop is branch-free."""
    n = dst.size
    if op == EQ:
        for k in range(n):
            dst[k] = element(x, k) == element(y, k)
    elif op == NE:
        for k in range(n):
            dst[k] = element(x, k) != element(y, k)
    elif op == LT:
        for k in range(n):
            dst[k] = element(x, k) < element(y, k)
    else:   # LE
        for k in range(n):
            dst[k] = element(x, k) <= element(y, k)


@jit(parallel=True)
def _compare(a, b, out, shape, strides, starts, tasks, op):
    for t in prange(tasks):
        walk(_compare_row, op, t, tasks, a, b, out, shape, strides, starts)


def _operand(a, dtype):
    """``a`` in ``dtype`` as the kernel reads it: 16-bit floats as 16-bit integers, bools as uint8."""
    if a.dtype != dtype:
        a = converted(a, dtype) if dtype in dt.FLOAT_DTYPES else a.astype(dtype)
    return a.view(np.uint8) if a.dtype == dt.bool_ else kernel_view(a)


def _flat(a):
    flat = a.reshape(-1)
    flat.flags.writeable = False   # as operand_view: one compiled type per dtype
    return flat


def _layout(operands, shape):
    """(flat views, merged shape, strides, starts) of the operands for ``task``."""
    views = [operand_view(a, shape) for a in operands]
    merged, strides = merged_layout(shape, [s for _, _, s in views])
    if any(s[-1] not in (0, 1) for s in strides):   # strided along the row: copy that operand
        views = [operand_view(np.ascontiguousarray(a), shape) if s[-1] not in (0, 1) else v
                 for a, v, s in zip(operands, views, strides)]
        merged, strides = merged_layout(shape, [s for _, _, s in views])
    return ([v[0] for v in views], np.array(merged, np.int64), np.array(strides, np.int64),
            np.array([v[1] for v in views], np.int64))


# The layout of C-contiguous operands depends on their shapes alone: kept per shapes, since a
# model calls the same shapes again and again (building it costs more than a small kernel).
_contiguous_layouts: dict = {}


def run_binary(kernel, op: int, p, first, second, common):
    """The bool array ``first op second`` of ``p.shape`` by ``kernel`` (a ``walk`` of arithmetic's), both
    operands read in ``common``."""
    out = np.empty(p.shape, dt.bool_)
    if out.size == 0:
        return out
    a, b = _operand(first, common), _operand(second, common)
    if a.flags.c_contiguous and b.flags.c_contiguous:
        key = (p.shape, a.shape, b.shape)
        layout = _contiguous_layouts.get(key)
        if layout is None:
            if len(_contiguous_layouts) > 1024:
                _contiguous_layouts.clear()
            layout = _contiguous_layouts[key] = _layout((a, b), p.shape)[1:]
        flats = (_flat(a), _flat(b))
    else:
        flats, *layout = _layout((a, b), p.shape)
    tasks = max(1, min(-(-out.size // _TASK_ELEMENTS), 4 * threads_for(out.nbytes)))
    launch(kernel, out.nbytes, flats[0], flats[1], out.reshape(-1), *layout, tasks, op)
    return out


def equal(p, a, b):
    return run_binary(_compare, EQ, p, a, b, p.common)


def not_equal(p, a, b):
    return run_binary(_compare, NE, p, a, b, p.common)


def greater(p, a, b):
    return run_binary(_compare, LT, p, b, a, p.common)


def greater_equal(p, a, b):
    return run_binary(_compare, LE, p, b, a, p.common)


def less(p, a, b):
    return run_binary(_compare, LT, p, a, b, p.common)


def less_equal(p, a, b):
    return run_binary(_compare, LE, p, a, b, p.common)
