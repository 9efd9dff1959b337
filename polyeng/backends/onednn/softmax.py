"""softmax and log_softmax on oneDNN's softmax primitive (``softmax_accurate``: the maximum
subtracted first; ``softmax_log``).

The input is handed over C-contiguous (a copy of a view first) and the axis is the primitive's
axis as it is (polyeng normalises it). f32 and bf16 storage (bf16 computed in f32); f16 only
where the CPU has the units (the primitive is built in the rule: turned down otherwise). A 0-d
input is one element along a 1-D axis; a zero-size input needs no primitive.

Special values: oneDNN's kernel along the last axis makes NaN only where the input held NaN or
+inf (exp(x - max) is 0 elsewhere), where BASIC and PyTorch give the whole reduction NaN. Such a
row always holds a NaN in the result, so one check of the result (NaN-propagating ``max``,
microseconds) finds them and those rows are set to NaN.

An axis other than the last (with more than one element after it) is turned down: oneDNN runs
its reference implementation there, 80 to 100 times slower than NUMBA (324 ms against 2.8 ms
for (8, 12, 256, 256) over axis 1).

f32 log_softmax is turned down: oneDNN's log of the sum of exps is approximate, off by up to
about 45 f32 epsilons (absolute) next to the row's maximum, where polyeng allows 16 relative to
max(1, |result|) (a result near 0 there). Its error is far below bf16's epsilon, so bf16 runs.
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
ALGORITHMS = {"softmax": C.SOFTMAX_ACCURATE, "log_softmax": C.SOFTMAX_LOG}


def _shape(x) -> tuple:
    return x.shape if x.ndim else (1,)


def _primitive(op: str, shape: tuple, axis: int, dtype) -> Primitive:
    key = (op, shape, axis, np.dtype(dtype).str)

    def build():
        src_md = desc(shape, dtype)
        dst_md = desc(shape, dtype)
        return Primitive("dnnl_softmax_forward_primitive_desc_create", C.FORWARD_INFERENCE, ALGORITHMS[op],
                         src_md.handle, dst_md.handle, axis, None, keep=(src_md, dst_md))
    return cached(key, build)


def _rule(call):
    x = call.args["x"]
    if x.dtype not in FLOATS:
        return f"oneDNN's softmax takes f32, bf16 and f16 data, not {x.dtype}"
    if call.op == "log_softmax" and x.dtype == dt.float32:
        return ("oneDNN's f32 log_softmax is approximate: its log of the sum of exps is off by up to "
                "about 45 epsilons, polyeng allows 16")
    if x.size == 0:
        return None   # no primitive needed
    if math.prod(x.shape[call.args["axis"] + 1:]) > 1:
        return (f"oneDNN's {call.op} over an axis that is not the last runs its reference code: 80 to 100 "
                f"times slower than NUMBA's (benchmarks/crossover.py)")
    try:
        _primitive(call.op, _shape(x), call.args["axis"], x.dtype)
    except Exception as exc:
        return f"oneDNN has no {call.op} for this call: {exc}"
    return None


def _run(op, x, axis):
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    shape = _shape(x)
    src = np.ascontiguousarray(x).reshape(shape)
    out = np.empty(shape, x.dtype)
    _primitive(op, shape, axis, x.dtype).run({C.ARG_SRC: src, C.ARG_DST: out}, threads_for(x.size * 8))
    if _has_nan(out):   # a row with NaN or +inf: NaN throughout, as BASIC gives
        bad = np.broadcast_to(np.isnan(out).any(axis=axis, keepdims=True), shape)
        out[bad] = np.nan
    return out.reshape(x.shape)


def _has_nan(a) -> bool:
    if a.dtype == dt.float32:
        return bool(np.isnan(np.max(a)))   # numpy's max propagates NaN
    words = a.view(np.uint16)
    return bool(np.max(words & np.uint16(0x7FFF)) > (0x7F80 if a.dtype == dt.bfloat16 else 0x7C00))


@limit(_rule)
def softmax(p, x, axis):
    return _run("softmax", x, axis)


@limit(_rule)
def log_softmax(p, x, axis):
    return _run("log_softmax", x, axis)
