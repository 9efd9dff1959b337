"""mean and sum of floats, amax and amin of 8-bit integers, on oneDNN's reduction primitive.

The input is read as (kept elements, reduced elements): in place when it is C-contiguous with
the reduced axes last, else copied so by a reorder (numpy for negative strides), as BASIC does.
oneDNN's reduction keeps the rank, the reduced dimension of size 1; the result is then reshaped
to the op's shape (``keepdims`` or not).

Sums: oneDNN accumulates a row in f32 vector lanes, within 1.5 f32 ulps for rows up to 4096
values but some 1700 ulps for 2**20 of them, where polyeng sums pairwise (the error must not
grow with the length). So a longer row is summed in blocks of ``BLOCK`` values, into f32
partial sums that are summed the same way again (a row of one block: one primitive). A single
row's blocks are read in place, its last partial block by a primitive of its own; several long
rows whose length is not a multiple of ``BLOCK`` are copied into blocks padded with -0.0, which
changes no sum. 16-bit storage is summed into f32 and rounded once at the end; the mean is the
f32 sum divided by the count, as BASIC divides. f32 and bf16 (f16 only where the CPU has the
units; the primitive is built in the rule), not f64; integer sums are int64, which oneDNN lacks.

amax and amin: oneDNN's max and min of floats neither propagate NaN (a NaN is dropped or kept
depending on its lane) nor order -0.0 below +0.0, where polyeng follows IEEE 754-2019's maximum
and minimum, and s32 data is compared in f32 (inexact past 2**24), so only s8 and u8 run here
(exact).
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._convert import converted
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

BLOCK = 4096   # values per block of a long row's sum
SUM_TYPES = (dt.float32, dt.bfloat16, dt.float16)
EXTREME_TYPES = (dt.int8, dt.uint8)
ALGORITHMS = {"sum": C.REDUCTION_SUM, "max": C.REDUCTION_MAX, "min": C.REDUCTION_MIN}


def _primitive(alg: str, rows: int, n: int, src_dtype, dst_dtype) -> Primitive:
    """The reduction of a C-contiguous (rows, n) array to (rows, 1)."""
    key = ("reduction", alg, rows, n, np.dtype(src_dtype).str, np.dtype(dst_dtype).str)

    def build():
        src_md = desc((rows, n), src_dtype)
        dst_md = desc((rows, 1), dst_dtype)
        return Primitive("dnnl_reduction_primitive_desc_create", ALGORITHMS[alg], src_md.handle, dst_md.handle,
                         0.0, 0.0, None, keep=(src_md, dst_md))
    return cached(key, build)


def _reduce(alg: str, a: np.ndarray, dst_dtype) -> np.ndarray:
    """(rows, n) C-contiguous -> (rows,) of ``dst_dtype``."""
    rows, n = a.shape
    if n == 1:   # nothing to reduce (oneDNN refuses a dst the size of its src)
        return a.reshape(rows).astype(dst_dtype)
    out = np.empty((rows, 1), dst_dtype)
    _primitive(alg, rows, n, a.dtype, dst_dtype).run({C.ARG_SRC: a, C.ARG_DST: out}, threads_for(a.size))
    return out.reshape(rows)


def _sum_rows(a: np.ndarray) -> np.ndarray:
    """The f32 sums of the rows of (rows, n) C-contiguous ``a``, in blocks of BLOCK values."""
    rows, n = a.shape
    while n > BLOCK:
        blocks, tail = divmod(n, BLOCK)
        if tail == 0:
            partial = _reduce("sum", a.reshape(rows * blocks, BLOCK), dt.float32).reshape(rows, blocks)
        elif rows == 1:
            flat = a.reshape(n)
            partial = np.empty((1, blocks + 1), dt.float32)
            partial[0, :blocks] = _reduce("sum", flat[:blocks * BLOCK].reshape(blocks, BLOCK), dt.float32)
            partial[0, blocks] = _reduce("sum", flat[blocks * BLOCK:].reshape(1, tail), dt.float32)[0]
        else:   # several rows: each padded to whole blocks with -0.0 (x + -0.0 is x, -0.0 too)
            padded = np.empty((rows, (blocks + 1) * BLOCK), a.dtype)
            padded[:, :n] = a
            padded[:, n:] = -0.0
            partial = _reduce("sum", padded.reshape(rows * (blocks + 1), BLOCK), dt.float32)
            partial = partial.reshape(rows, blocks + 1)
        a, n = partial, partial.shape[1]
    return _reduce("sum", a, dt.float32)


def _as_rows(p, x, axis) -> np.ndarray:
    """``x`` as a C-contiguous (kept elements, reduced elements) array."""
    kept = [d for d in range(x.ndim) if d not in axis]
    rows = math.prod(x.shape[d] for d in kept)
    order = kept + list(axis)
    if order == sorted(order) and x.flags.c_contiguous:
        return x.reshape(rows, p.count)
    return converted(np.transpose(x, order), x.dtype).reshape(rows, p.count)


def _sum_rule(call):
    x = call.args["x"]
    if x.dtype not in SUM_TYPES:
        if x.dtype.kind in "iu":
            return f"oneDNN's reduction has no int64 result (polyeng sums {x.dtype} to int64)"
        return f"oneDNN's reduction sums f32, bf16 and f16 data, not {x.dtype}"
    if x.size == 0:
        return None   # no primitive needed
    count = call.prepared.count
    if count == 1:
        return None   # no primitive needed
    try:
        _primitive("sum", x.size // count, min(count, BLOCK), x.dtype, dt.float32)
    except Exception as exc:
        return f"oneDNN has no {call.op} for this call: {exc}"
    return None


def _extreme_rule(call):
    x = call.args["x"]
    if x.dtype in EXTREME_TYPES:
        return None
    if x.dtype in dt.FLOAT_DTYPES:
        return (f"oneDNN's {'max' if call.op == 'amax' else 'min'} reduction of floats does not propagate NaN "
                f"nor order -0.0 below +0.0 (IEEE 754-2019's {'maximum' if call.op == 'amax' else 'minimum'})")
    if x.dtype == dt.int32:
        return "oneDNN's reduction computes s32 data in f32: values past 2**24 lose their low bits"
    return f"oneDNN's reduction takes s8 and u8 integers, not {x.dtype}"


def _total(p, x, axis) -> np.ndarray:
    """The f32 sums over ``axis``, in p.shape."""
    if p.count == 0:
        return np.zeros(p.shape, dt.float32)
    return _sum_rows(_as_rows(p, x, axis)).reshape(p.shape)


@limit(_sum_rule)
def mean(p, x, axis, keepdims):
    if 0 in p.shape:
        return np.empty(p.shape, p.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):   # 0 / 0: NaN for an empty mean
        return (_total(p, x, axis) / np.float32(p.count)).astype(p.dtype)


@limit(_sum_rule)
def sum(p, x, axis, keepdims):   # noqa: A001 - kernels are named after their op
    if 0 in p.shape:
        return np.empty(p.shape, p.dtype)
    return _total(p, x, axis).astype(p.dtype)


def _extreme(alg, p, x, axis):
    if 0 in p.shape:
        return np.empty(p.shape, p.dtype)
    return _reduce(alg, _as_rows(p, x, axis), x.dtype).reshape(p.shape)


@limit(_extreme_rule)
def amax(p, x, axis, keepdims):
    return _extreme("max", p, x, axis)


@limit(_extreme_rule)
def amin(p, x, axis, keepdims):
    return _extreme("min", p, x, axis)
