"""maximum and minimum as NUMBA kernels over broadcast strides.

The operands take arithmetic's path to the kernel (``arithmetic._run``): both converted to the
output dtype as BASIC converts them, laid out as flat memory plus element strides against the
merged output shape, the output cut into equal flat ranges, one per task. A task walks its range
as rows of the innermost merged axis, along which each operand steps by 1 (a slice: the loop
vectorizes) or by 0 (one value for the row). Each element is chosen, not computed: the values
are compared widened (16-bit floats in f32, exactly) and the chosen operand's stored bits are
written, so a NaN keeps its payload and every dtype is exact.
"""
from __future__ import annotations

import math

from numba import prange, types
from numba.extending import overload

from ._runtime import inline, jit
from ._storage import widen
from .arithmetic import _run


def _stored(v, k):
    """Element ``k`` of a row: of an array, as stored; of a broadcast row, its one value."""


@overload(_stored, inline="always")
def _stored_impl(v, k):
    if isinstance(v, types.Array):
        return lambda v, k: v[k]
    return lambda v, k: v


@inline
def _larger(u, v):
    """The stored ``u`` or ``v`` that IEEE 754-2019's maximum picks: a NaN (``u`` first), else
    the larger value, +0.0 of two zeros."""
    x, y = widen(u), widen(v)
    if x != x or x > y:
        return u
    if y != y or y > x:
        return v
    return v if math.copysign(1.0, x) < 0 else u   # equal: only two zeros can differ (in sign)


@inline
def _smaller(u, v):
    x, y = widen(u), widen(v)
    if x != x or x < y:
        return u
    if y != y or y < x:
        return v
    return u if math.copysign(1.0, x) < 0 else v


@inline
def _max_row(x, y, dst):
    """One row of maximum (a row function per op: a kernel compiles only its own loop, which
    ``_task`` inlines four times, once per operand form)."""
    for k in range(dst.size):
        dst[k] = _larger(_stored(x, k), _stored(y, k))


@inline
def _min_row(x, y, dst):
    for k in range(dst.size):
        dst[k] = _smaller(_stored(x, k), _stored(y, k))


@inline
def _task(row_fn, t, tasks, a, b, out, shape, strides, starts):
    """Task ``t`` of ``tasks``: its share of ``out`` (flat, C order over the merged ``shape``).
    Each row's operand offsets are found from its index (a few divisions per row)."""
    rank = shape.size
    length = shape[rank - 1]
    sa, sb = strides[0, rank - 1], strides[1, rank - 1]
    pos, stop = t * out.size // tasks, (t + 1) * out.size // tasks
    while pos < stop:
        row = pos // length
        k = pos - row * length
        n = min(length - k, stop - pos)
        ao, bo = starts[0] + k * sa, starts[1] + k * sb
        rest = row
        for d in range(rank - 2, -1, -1):
            q = rest // shape[d]
            i = rest - q * shape[d]
            ao += i * strides[0, d]
            bo += i * strides[1, d]
            rest = q
        dst = out[pos:pos + n]
        if sa == 1 and sb == 1:
            row_fn(a[ao:ao + n], b[bo:bo + n], dst)
        elif sa == 1:
            row_fn(a[ao:ao + n], b[bo], dst)
        elif sb == 1:
            row_fn(a[ao], b[bo:bo + n], dst)
        else:
            row_fn(a[ao], b[bo], dst)
        pos += n


@jit(parallel=True)
def _maximum(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        _task(_max_row, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _minimum(a, b, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        _task(_min_row, t, tasks, a, b, out, shape, strides, starts)


def maximum(p, a, b):
    return _run(_maximum, p, a, b)


def minimum(p, a, b):
    return _run(_minimum, p, a, b)
