"""add, sub, mul and div on oneDNN's binary primitive, with numpy broadcasting.

Operands of one float type, the result's (f32; f16 where this CPU has a kernel). bf16 is turned
down: oneDNN reads and writes bf16 subnormals as zero (the conversion instruction's rule), so
``bf16(1.18e-38) / 2`` gave 0 where numpy's arithmetic, exact for these ops, gives 5.9e-39. Integer arithmetic (numpy wraps around,
oneDNN saturates) and mixed dtypes stay elsewhere. oneDNN broadcasts src1's dimensions of size 1
only, so src0 is the operand of the result's shape: ``b`` for add and mul when ``a`` broadcasts
(IEEE's + and * commute), else ``a`` made full (a copy) when it broadcasts (eltwise LINEAR's
``-1 * b + a`` would save that copy for a scalar, but gives +0.0 for ``-0.0 - 0.0``). Shapes
are simplified before the primitive is made: dimensions of size 1 dropped and neighbours that
broadcast alike merged, so a bias row over any batch is one (rows, n) + (1, n) primitive.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

FLOATS = (np.dtype(np.float32), np.dtype(dt.bfloat16), np.dtype(np.float16))
ALG = {"add": C.BINARY_ADD, "sub": C.BINARY_SUB, "mul": C.BINARY_MUL, "div": C.BINARY_DIV}
COMMUTE = ("add", "mul")


def _plan(op, shape, a, b):
    """(swap, full_a, src0 dims, src1 dims): which operand is src0, whether ``a`` must be made
    full first, and the simplified dims of both."""
    rank = len(shape)
    sa = (1,) * (rank - a.ndim) + a.shape
    sb = (1,) * (rank - b.ndim) + b.shape
    swap = sa != shape and sb == shape and op in COMMUTE
    first, second = (sb, sa) if swap else (sa, sb)
    full_a = first != shape
    dims0, dims1 = [], []
    for n, m in zip(shape, second):
        if n == 1:
            continue
        if dims0 and (dims1[-1] == 1) == (m == 1):   # broadcast alike: merge
            dims0[-1] *= n
            dims1[-1] *= m
        else:
            dims0.append(n)
            dims1.append(m)
    return swap, full_a, tuple(dims0) or (1,), tuple(dims1) or (1,)


def _binary(op, dims0, dims1, dtype) -> Primitive:
    dtype = np.dtype(dtype)
    key = ("binary", op, dims0, dims1, dtype.str)

    def build():
        m0, m1, md = desc(dims0, dtype), desc(dims1, dtype), desc(dims0, dtype)
        return Primitive("dnnl_binary_primitive_desc_create", ALG[op], m0.handle, m1.handle, md.handle, None,
                         keep=(m0, m1, md))
    return cached(key, build)


def _rule(call):
    a, b, p = call.args["a"], call.args["b"], call.prepared
    kinds = {a.dtype, b.dtype, np.dtype(p.dtype)}
    if not kinds <= set(FLOATS):
        odd = sorted(str(k) for k in kinds - set(FLOATS))
        return f"oneDNN's binary {call.op} here takes float operands (numpy's integer arithmetic wraps, " \
               f"oneDNN's saturates), not {', '.join(odd)}"
    if np.dtype(p.dtype) == dt.bfloat16:
        return f"oneDNN's bf16 {call.op} flushes subnormals to zero (numpy's keeps them)"
    if len(kinds) > 1:
        return f"oneDNN's binary {call.op} here takes operands of the result's dtype; got " \
               f"{a.dtype} and {b.dtype} for {np.dtype(p.dtype)}"
    if len(p.shape) > C.MAX_NDIMS:
        return f"oneDNN takes at most {C.MAX_NDIMS} dimensions, not {len(p.shape)}"
    if 0 in p.shape:
        return None
    try:
        _, _, dims0, dims1 = _plan(call.op, tuple(p.shape), a, b)
        _binary(call.op, dims0, dims1, p.dtype)
    except Exception as exc:
        return f"oneDNN has no {call.op} for this call: {exc}"
    return None


def _run(op, p, a, b):
    shape = tuple(p.shape)
    if 0 in shape:
        return np.empty(shape, p.dtype)
    swap, full_a, dims0, dims1 = _plan(op, shape, a, b)
    src0, src1 = (b, a) if swap else (a, b)
    if full_a:
        src0 = np.broadcast_to(src0, shape)
    src0 = np.ascontiguousarray(src0).reshape(dims0)
    src1 = np.ascontiguousarray(src1).reshape(dims1)
    out = np.empty(dims0, p.dtype)
    _binary(op, dims0, dims1, p.dtype).run({C.ARG_SRC: src0, C.ARG_SRC_1: src1, C.ARG_DST: out},
                                           threads_for(out.size))
    return out.reshape(shape)


@limit(_rule)
def add(p, a, b):
    return _run("add", p, a, b)


@limit(_rule)
def sub(p, a, b):
    return _run("sub", p, a, b)


@limit(_rule)
def mul(p, a, b):
    return _run("mul", p, a, b)


@limit(_rule)
def div(p, a, b):
    return _run("div", p, a, b)
