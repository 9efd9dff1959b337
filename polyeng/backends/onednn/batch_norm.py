"""batch_norm (inference) as one oneDNN binary primitive: ``x * scale`` per channel with ``+ shift``
per channel as its binary post-op.

The op defines the result as ``x * scale + shift`` with every engine's per-channel ``scale`` and
``shift`` from ``ops.batch_norm.affine`` (f32), and that is what the primitive computes, in f32,
rounded once to the storage type: BASIC's numbers. oneDNN's batch normalization primitive
(global statistics, scale and shift) computes the same, but on a plain NCHW input it takes its
generic ``ncsp_bnorm`` code, 4-5 ms for (8, 64, 56, 56) where the binary's JIT kernel takes
0.13-0.22 ms (f32 and bf16), so it is not used.

The input is read as (N, C, everything else), C-contiguous (a copy of a view first); scale and
shift are (1, C, 1) or (1, C), broadcast. f32 and bf16 storage; f16 only where the CPU has the units (the
primitive is built in the rule: turned down otherwise). The op has no training form, and
weight and bias of None are folded into scale and shift by ``affine``, so nothing else is
turned down. A zero-size input needs no primitive.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from ...ops.batch_norm import affine
from .._loader import limit
from . import _constants as C
from ._primitive import Attr, Primitive, cached, desc
from ._threads import threads_for

FLOATS = (dt.float32, dt.bfloat16, dt.float16)
SHIFT = C.ARG_ATTR_MULTIPLE_POST_OP_BASE * 1 + C.ARG_SRC_1   # DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | SRC_1


def _shape(x) -> tuple:
    """(N, C, the rest), or (N, C) where the rest is one element: oneDNN reads a trailing
    dimension of 1 as a channels-last layout and broadcasts the channels wrong."""
    rest = math.prod(x.shape[2:])
    return (x.shape[0], x.shape[1]) if rest == 1 else (x.shape[0], x.shape[1], rest)


def _primitive(shape: tuple, dtype) -> Primitive:
    key = ("batch_norm", shape, np.dtype(dtype).str)

    def build():
        src_md, dst_md = desc(shape, dtype), desc(shape, dtype)
        channel_md = desc((1, shape[1]) + (1,) * (len(shape) - 2), dt.float32)
        attr = Attr("f32", [("binary", C.BINARY_ADD, channel_md)])
        return Primitive("dnnl_binary_primitive_desc_create", C.BINARY_MUL, src_md.handle, channel_md.handle,
                         dst_md.handle, attr.handle, keep=(src_md, channel_md, dst_md, attr))
    return cached(key, build)


def _rule(call):
    x = call.args["x"]
    if x.dtype not in FLOATS:
        return f"oneDNN's binary primitive takes f32, bf16 and f16 data, not {x.dtype}"
    if x.size == 0:
        return None   # no primitive needed
    try:
        _primitive(_shape(x), x.dtype)
    except Exception as exc:
        return f"oneDNN has no batch_norm for this call: {exc}"
    return None


@limit(_rule)
def batch_norm(p, x, running_mean, running_var, weight, bias, eps):
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    shape = _shape(x)
    scale, shift = affine(running_mean, running_var, weight, bias, eps, dt.float32)
    out = np.empty(x.shape, x.dtype)
    args = {C.ARG_SRC: np.ascontiguousarray(x), C.ARG_SRC_1: scale, SHIFT: shift, C.ARG_DST: out}
    _primitive(shape, x.dtype).run(args, threads_for(x.size * 2))
    return out
