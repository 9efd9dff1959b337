"""layer_norm on oneDNN's layer normalization primitive (statistics computed per row and kept
for the constant-row check below).

oneDNN normalises over the last dimension only, so the input is read as (rows, features), the
product of ``normalized_shape`` being the features (a C-contiguous copy of a view first). weight
and bias are the primitive's scale and shift, always f32 (16-bit ones are widened exactly, and
flattened with the features). f32 and bf16 storage (bf16 computed in f32); f16 only where the
CPU has the units (the primitive is built in the rule: turned down otherwise). A zero-size input
needs no primitive.

A constant row must give exactly the bias, as BASIC's (whose centring is exact): oneDNN's mean of
a row of large equal values is off by rounding, and 1/sqrt(var + eps) turns that offset into
+-1. The primitive also writes each row's mean and variance; a row whose variance is within
rounding of its mean's magnitude is checked for being constant, and a constant one is set to
``0 * weight + bias``. Only such rows are read again.
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
        stat_md = desc((rows,), np.float32)
        # forward training: the same normalisation, with the statistics written out
        return Primitive("dnnl_layer_normalization_forward_primitive_desc_create", C.FORWARD_TRAINING,
                         src_md.handle, dst_md.handle, stat_md.handle, float(eps), flags, None,
                         keep=(src_md, dst_md, stat_md))
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
    x = np.ascontiguousarray(x)
    mean, var = np.empty(rows, np.float32), np.empty(rows, np.float32)
    args = {C.ARG_SRC: x, C.ARG_DST: out, C.ARG_MEAN: mean, C.ARG_VARIANCE: var}
    if weight is not None:
        args[C.ARG_SCALE] = _f32(weight)
    if bias is not None:
        args[C.ARG_SHIFT] = _f32(bias)
    prim.run(args, threads_for(x.size * 8))
    _constant_rows(x.reshape(rows, features), out.reshape(rows, features), mean, var, weight, bias, eps)
    return out


def may_be_constant(mean, var):
    """Which rows' statistics leave them in doubt: a variance within rounding of the mean's
    magnitude (a bool per row)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return var <= np.square(np.abs(mean) * np.float32(2.0 ** -10))


def constant_rows(x, mean, var) -> np.ndarray:
    """The indices of the rows of 2-D ``x`` whose values are all equal, of those its layer norm's
    ``mean`` and ``var`` leave in doubt (only those are read)."""
    candidates = np.flatnonzero(may_be_constant(mean, var))
    if candidates.size == 0:
        return candidates
    rows = x[candidates]
    return candidates[(rows == rows[:, :1]).all(axis=1)]


def _constant_rows(x, out, mean, var, weight, bias, eps) -> None:
    """Rows of ``x`` whose values are all equal get ``0 / sqrt(eps) * weight + bias`` in ``out``
    (see above; NaN when eps is 0, as BASIC's)."""
    constant = constant_rows(x, mean, var)
    if constant.size == 0:
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        row = np.zeros(out.shape[1], np.float32) / np.sqrt(np.float32(eps))
    if weight is not None:
        row = row * _f32(weight)
    if bias is not None:
        row = row + _f32(bias)
    out[constant] = row.astype(out.dtype)
