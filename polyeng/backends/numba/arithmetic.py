"""add, sub, mul, div and pow as one NUMBA walk over broadcast strides.

An operand whose dtype differs from the result's is converted on the host first (the other
one, usually the large one, is read in place). Each operand is then its own memory plus
element strides against the output (``_broadcast``); axes every operand walks as one are
merged, and the output is cut into equal flat ranges, one per task, walked as rows of the
innermost merged axis. Along a row each operand steps by 1 (read as a slice: the loop
vectorizes) or by 0 (one value for the whole row); an operand with any other inner step is
copied contiguous first. 16-bit floats are read as stored, computed in f32 and rounded once
(f32 has more than twice their precision plus two bits, so + - * / round as correctly as
numpy's own float16 loops); integers wrap around as in numpy. pow on 16-bit values runs the f32
kernel between two casts (the same roundings, one compile). pow on f32 values
takes ``_mathfn.pow_fast`` (vectorized, correctly rounded but for near-ties) where the base is
finite and positive and the exponent finite, and libm's powf for the rest (zeros, negative
bases, inf, NaN) in a second pass over rows that hold any; f64 pow is libm's.
"""
from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from ...engine import dtypes as dt
from . import _mathfn as mathfn
from ._broadcast import merged_layout, operand_view
from ._cast import converted
from ._runtime import inline, jit, launch, threads_for
from ._storage import kernel_view, narrow, widen

_ADD, _SUB, _MUL, _DIV, _POW = range(5)
_TASK_ELEMENTS = 32 * 1024   # at least this much output per parallel task


def _element(v, k):
    """Element ``k`` of a row: of an array, widened; of a broadcast row, its one (widened) value."""


@overload(_element, inline="always")
def _element_impl(v, k):
    if isinstance(v, types.Array):
        return lambda v, k: widen(v[k])
    return lambda v, k: v


@inline
def _add_row(op, x, y, dst):
    """dst = x + y over one row (``op`` unused: one row function per op, so that a kernel compiles
    only its own loops; ``walk`` inlines its row four times, once per operand form)."""
    for k in range(dst.size):
        dst[k] = narrow(_element(x, k) + _element(y, k), dst)


@inline
def _sub_row(op, x, y, dst):
    for k in range(dst.size):
        dst[k] = narrow(_element(x, k) - _element(y, k), dst)


@inline
def _mul_row(op, x, y, dst):
    for k in range(dst.size):
        dst[k] = narrow(_element(x, k) * _element(y, k), dst)


@inline
def _div_row(op, x, y, dst):
    for k in range(dst.size):
        dst[k] = narrow(_element(x, k) / _element(y, k), dst)


@inline
def _pow_row(op, x, y, dst):
    """A vectorized pass for finite positive bases, then libm's IEEE rules for the rest."""
    n = dst.size
    usual = 0
    for k in range(n):
        u, v = _element(x, k), _element(y, k)
        dst[k] = narrow(mathfn.pow_fast(u, v), dst)
        usual += mathfn.pow_ordinary(u, v)
    if usual < n:
        for k in range(n):
            u, v = _element(x, k), _element(y, k)
            if not mathfn.pow_ordinary(u, v):
                dst[k] = narrow(u ** v, dst)


@inline
def walk(row, op, t, tasks, a, b, out, shape, strides, starts):
    """Task ``t`` of ``tasks``: its share of out (flat, C order over ``shape``) = a op b, each row by
    ``row(op, x, y, dst)`` (an op's ``_*_row`` here, the comparisons' row in ``compare.py``).
    ``strides[i]`` are operand i's element strides over the merged ``shape`` (innermost last, 0 or
    1 there), ``starts[i]`` the place of its first element."""
    rank = shape.size
    length = shape[rank - 1]
    total = out.size
    sa, sb = strides[0, rank - 1], strides[1, rank - 1]
    pos, stop = t * total // tasks, (t + 1) * total // tasks
    index = np.zeros(rank, np.int64)
    rest = pos // length
    k = pos - rest * length   # where the task starts inside its first row
    ao, bo = starts[0], starts[1]
    for d in range(rank - 2, -1, -1):
        q = rest // shape[d]
        index[d] = rest - q * shape[d]
        rest = q
        ao += index[d] * strides[0, d]
        bo += index[d] * strides[1, d]
    while pos < stop:
        n = min(length - k, stop - pos)
        dst = out[pos:pos + n]
        if sa == 1 and sb == 1:
            row(op, a[ao + k:ao + k + n], b[bo + k:bo + k + n], dst)
        elif sa == 1:
            row(op, a[ao + k:ao + k + n], widen(b[bo]), dst)
        elif sb == 1:
            row(op, widen(a[ao]), b[bo + k:bo + k + n], dst)
        else:
            row(op, widen(a[ao]), widen(b[bo]), dst)
        pos += n
        k = 0
        d = rank - 2
        while d >= 0:
            index[d] += 1
            ao += strides[0, d]
            bo += strides[1, d]
            if index[d] < shape[d]:
                break
            ao -= shape[d] * strides[0, d]
            bo -= shape[d] * strides[1, d]
            index[d] = 0
            d -= 1


# One kernel per op, each with its own row function: numba types and lowers only that op's loops
# (four times: ``walk`` inlines its row once per operand form). A row of every op, chosen by a
# constant, was still typed whole: add, sub, mul and div each compiled pow's loops too.
@jit(parallel=True)
def _add(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        walk(_add_row, _ADD, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _sub(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        walk(_sub_row, _SUB, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _mul(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        walk(_mul_row, _MUL, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _div(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        walk(_div_row, _DIV, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _pow(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        walk(_pow_row, _POW, t, tasks, a, b, out, shape, strides, starts)


def _in_dtype(a, dtype):
    if a.dtype == dtype:
        return a
    return converted(a, dtype) if dtype in dt.FLOAT_DTYPES else a.astype(dtype)


def _flat(a):
    flat = a.reshape(-1)
    flat.flags.writeable = False   # as operand_view: one compiled type per dtype
    return flat


def _layout(operands, shape):
    """(flat views, merged shape, strides, starts) of the operands for ``walk``."""
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


def _run(kernel, p, first, second, dtype=None):
    """``first op second`` by ``kernel`` in the result's dtype, or (given) in ``dtype``."""
    dtype = p.dtype if dtype is None else dtype
    out = np.empty(p.shape, dtype)
    if out.size == 0:
        return out
    a, b = kernel_view(_in_dtype(first, dtype)), kernel_view(_in_dtype(second, dtype))
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
    launch(kernel, out.nbytes, flats[0], flats[1], kernel_view(out).reshape(-1), *layout, tasks)
    return out


def add(p, a, b):
    return _run(_add, p, a, b)


def sub(p, a, b):
    return _run(_sub, p, a, b)


def mul(p, a, b):
    return _run(_mul, p, a, b)


def div(p, a, b):
    return _run(_div, p, a, b)


def pow(p, x, exponent):   # noqa: A001 (the op's name)
    if p.dtype in dt.SIXTEEN_BIT_FLOATS:
        # The kernel computes 16-bit powers in f32 and rounds them once; so do the f32 kernel and
        # the cast kernel (widening is exact, the cast rounds as the kernel's store does): pow's
        # compile, the costliest of these kernels, is made for f32 alone and not per storage type.
        wide = [converted(_in_dtype(v, p.dtype), dt.float32) for v in (x, exponent)]
        return converted(_run(_pow, p, *wide, dtype=dt.float32), p.dtype)
    return _run(_pow, p, x, exponent)
