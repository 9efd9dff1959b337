"""layer_norm on oneDNN's layer normalization primitive (inference: statistics computed per row,
none kept).

oneDNN normalises over the last dimension only, so the input is read as (rows, features), the
product of ``normalized_shape`` being the features (a C-contiguous copy of a view first). weight
and bias are the primitive's scale and shift, always f32 (16-bit ones are widened exactly, and
flattened with the features). f32 and bf16 storage (bf16 computed in f32); f16 only where the
CPU has the units (the primitive is built in the rule: turned down otherwise). A zero-size input
needs no primitive.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

FLOATS = (dt.float32, dt.bfloat16, dt.float16)


def _primitive(rows: int, features: int, dtype, eps: float, flags: int) -> Primitive:
    key = ("layer_norm", rows, features, np.dtype(dtype).str, float(eps), flags)

    def build():
        src_md = desc((rows, features), dtype)
        dst_md = desc((rows, features), dtype)
        return Primitive("dnnl_layer_normalization_forward_primitive_desc_create", C.FORWARD_INFERENCE,
                         src_md.handle, dst_md.handle, None, float(eps), flags, None, keep=(src_md, dst_md))
    return cached(key, build)


def _geometry(x, normalized_shape) -> tuple:
    features = math.prod(normalized_shape)
    return x.size // features, features


def _flags(weight, bias) -> int:
    return (C.USE_SCALE if weight is not None else 0) | (C.USE_SHIFT if bias is not None else 0)


def _rule(call):
    args = call.args
    x = args["x"]
    if x.dtype not in FLOATS:
        return f"oneDNN's layer normalization takes f32, bf16 and f16 data, not {x.dtype}"
    if x.size == 0:
        return None   # no primitive needed
    rows, features = _geometry(x, args["normalized_shape"])
    try:
        _primitive(rows, features, x.dtype, args["eps"], _flags(args["weight"], args["bias"]))
    except Exception as exc:
        return f"oneDNN has no layer_norm for this call: {exc}"
    return None


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).reshape(-1)


@limit(_rule)
def layer_norm(p, x, normalized_shape, weight, bias, eps):
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    rows, features = _geometry(x, normalized_shape)
    prim = _primitive(rows, features, x.dtype, eps, _flags(weight, bias))
    out = np.empty(x.shape, x.dtype)
    args = {C.ARG_SRC: np.ascontiguousarray(x), C.ARG_DST: out}
    if weight is not None:
        args[C.ARG_SCALE] = _f32(weight)
    if bias is not None:
        args[C.ARG_SHIFT] = _f32(bias)
    prim.run(args, threads_for(x.size * 8))
    return out
