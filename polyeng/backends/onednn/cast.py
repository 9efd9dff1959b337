"""cast on oneDNN's reorder, for the pairs whose results equal BASIC's bit for bit (each pair
checked on every 16-bit pattern, rounding ties, subnormals, NaN and integer edges):
bf16 -> f32, int8 -> f32/bf16/f16, uint8 -> f32/bf16 and int32 -> f32. The others are
turned down: oneDNN's f32 -> bf16 flushes subnormals to zero, f32 -> f16 turns -0.0 into
+0.0, f16 -> f32 differs too, and it has no reorder for bf16 <-> f16, uint8 -> f16,
int32 -> bf16/f16 or any 64-bit type. A cast to the input's own dtype is a numpy copy."""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import cached, desc, reorder
from ._threads import threads_for
from .concat import describable

EXACT = {(dt.bfloat16, dt.float32), (dt.int8, dt.float32), (dt.int8, dt.bfloat16), (dt.int8, dt.float16),
         (dt.uint8, dt.float32), (dt.uint8, dt.bfloat16), (dt.int32, dt.float32)}
EXACT = {(np.dtype(s), np.dtype(t)) for s, t in EXACT}


def _rule(call):
    source, target = np.dtype(call.args["x"].dtype), np.dtype(call.args["dtype"])
    if source == target or (source, target) in EXACT:
        return None
    return (f"oneDNN's reorder from {source.name} to {target.name} is not bit for bit BASIC's "
            f"rounding (or does not exist)")


@limit(_rule)
def cast(p, x, dtype):
    if x.dtype == p.dtype or x.size == 0 or x.ndim == 0:
        return np.array(x, dtype=p.dtype, copy=True, order="C")
    strides = tuple(s // x.itemsize for s in x.strides)
    if not describable(x):
        x = np.ascontiguousarray(x)
        strides = tuple(s // x.itemsize for s in x.strides)
    key = ("cast", x.shape, strides, x.dtype.str, p.dtype.str)
    step = cached(key, lambda: reorder(desc(x.shape, x.dtype, strides), desc(x.shape, p.dtype)))
    out = np.empty(x.shape, p.dtype)
    step.run({C.ARG_FROM: x, C.ARG_TO: out}, threads_for(x.size * 4))
    return out
