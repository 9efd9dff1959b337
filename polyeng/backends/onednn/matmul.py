"""matmul and linear on oneDNN's matmul primitive.

Operands of one float type (f32, bf16 or f16 where the CPU computes it), of any rank numpy
allows: 1-D operands are promoted as numpy does, batch dimensions broadcast (oneDNN broadcasts
dimensions of size 1). ``linear``'s weight is read transposed in place (strides, no copy) and
its bias is the primitive's bias. f32 work under a bf16 or f16 fp math mode gives oneDNN its
operands in that type (``_convert.py``) with the fpmath attribute set, and keeps an f32 result.
A weight that cannot change (read-only: every constant of a graph) is reordered once into the
layout and type the primitive prefers (``_packed.py``). Zero-size products need no primitive:
an empty result, or zeros (plus the bias) when the inner dimension is empty.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from . import _fpmath
from ._convert import converted, storage_of
from ._packed import constant, note_for, packed_weight
from ._primitive import Attr, Primitive, c_strides, cached, desc, desc_any, elements_strides
from ._threads import threads_for

FLOATS = (dt.float32, dt.bfloat16, dt.float16)


def _floats(*names):
    def rule(call):
        arrays = [call.args[n] for n in names if call.args.get(n) is not None]
        kinds = {a.dtype for a in arrays}
        if not kinds <= set(FLOATS):
            odd = sorted(str(k) for k in kinds - set(FLOATS))
            return f"oneDNN's matmul takes f32, bf16 and f16 operands, not {', '.join(odd)}"
        if len(kinds) > 1:
            return f"oneDNN's matmul takes operands of one type; got {', '.join(sorted(map(str, kinds)))}"
        if 0 in call.prepared.shape or any(0 in a.shape for a in arrays):
            return None   # no primitive needed
        try:   # build the primitive now (it is cached for the call): the reason when oneDNN has none
            (_linear_plan if call.op == "linear" else _matmul_plan)(call.prepared, **call.args)
        except Exception as exc:
            return f"oneDNN has no matmul for this call: {exc}"
        return None
    return rule


def _rows(a):
    """``a`` with a unit stride on its last dimension and no negative strides (a copy otherwise)."""
    if a.strides and (a.strides[-1] != a.itemsize or min(a.strides) < 0):
        return np.ascontiguousarray(a)
    return a


class _Plan:
    """The primitive of one call signature and how its operands are handed over."""
    __slots__ = ("prim", "operands", "pack")

    def __init__(self, src, src_strides, wei, wei_strides, bias_shape, dst, dtype, compute, pack):
        self.operands = operands = storage_of(compute, dtype)
        self.pack = pack
        if operands != dtype:   # converted operands are C-contiguous
            src_strides = c_strides(src)
            wei_strides = c_strides(wei)
        key = ("matmul", src, src_strides, wei, wei_strides, bias_shape, dst, np.dtype(dtype).str, compute, pack)

        def build():
            src_md = desc(src, operands, src_strides)
            wei_md = desc_any(wei, operands) if pack else desc(wei, operands, wei_strides)
            bias_md = desc(bias_shape, dtype) if bias_shape is not None else None
            dst_md = desc(dst, dtype)
            attr = Attr(compute)
            return Primitive("dnnl_matmul_primitive_desc_create", src_md.handle, wei_md.handle,
                             bias_md.handle if bias_md else None, dst_md.handle, attr.handle,
                             keep=(src_md, wei_md, bias_md, dst_md, attr))
        self.prim = cached(key, build)

    def run(self, src, weight, bias, out):
        if src.dtype != self.operands:
            src = converted(src, self.operands)
            if not self.pack:
                weight = converted(weight, self.operands)
        args = {C.ARG_SRC: src, C.ARG_WEIGHTS: packed_weight(self.prim, weight) if self.pack else weight,
                C.ARG_DST: out}
        if bias is not None:
            args[C.ARG_BIAS] = bias
        self.prim.run(args, threads_for(out.size * src.shape[-1]))
        return out


def _compute(p) -> str:
    return _fpmath.compute() if p.dtype == dt.float32 else "f32"


def _linear_plan(p, x, weight, bias):
    rows = math.prod(x.shape[:-1])
    x2 = _rows(x).reshape(rows, x.shape[-1])
    weight = _rows(weight)
    n, k = weight.shape
    wt = weight.T
    plan = _Plan(x2.shape, elements_strides(x2), (k, n), elements_strides(wt), None if bias is None else (1, n),
                 (rows, n), p.dtype, _compute(p), constant(weight))
    return plan, x2, wt


@limit(_floats("x", "weight", "bias"))
def linear(p, x, weight, bias):
    if 0 in p.shape or x.shape[-1] == 0:
        out = np.zeros(p.shape, p.dtype)
        if bias is not None and 0 not in p.shape:
            out += bias
        return out
    plan, x2, wt = _linear_plan(p, x, weight, bias)
    out = np.empty((x2.shape[0], wt.shape[1]), p.dtype)
    b = None if bias is None else np.ascontiguousarray(bias).reshape(1, -1)
    return plan.run(x2, wt, b, out).reshape(p.shape)


def _matmul_plan(p, a, b):
    a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
    b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
    rank = max(a2.ndim, b2.ndim)
    a2 = _rows(a2.reshape((1,) * (rank - a2.ndim) + a2.shape))
    b2 = _rows(b2.reshape((1,) * (rank - b2.ndim) + b2.shape))
    dst = tuple(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])) + (a2.shape[-2], b2.shape[-1])
    plan = _Plan(a2.shape, elements_strides(a2), b2.shape, elements_strides(b2), None, dst, p.dtype, _compute(p),
                 rank == 2 and constant(b2))   # b2, not b: a copy made by _rows is no constant
    return plan, a2, b2, dst


@limit(_floats("a", "b"))
def matmul(p, a, b):
    if 0 in p.shape or a.shape[-1] == 0:
        return np.zeros(p.shape, p.dtype)
    plan, a2, b2, dst = _matmul_plan(p, a, b)
    return plan.run(a2, b2, None, np.empty(dst, p.dtype)).reshape(p.shape)


linear.note = note_for("weight")


def _matmul_note(call):
    a, b = call.args["a"], call.args["b"]
    return note_for("b")(call) if max(a.ndim, b.ndim, 2) == 2 else ""   # batched products read b as it lies


matmul.note = _matmul_note
