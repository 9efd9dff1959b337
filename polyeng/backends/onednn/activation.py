"""relu, gelu, sigmoid, tanh, sqrt, hardswish, silu, leaky_relu, log and reciprocal on oneDNN's
eltwise primitive (f32 and bf16 storage; relu also s8 and u8).

An elementwise op needs no shape: every call is a flat run of ``x.size`` elements (a view is
copied to one first), so a primitive serves every shape of that size. The algorithms and their
constants: sigmoid is LOGISTIC, silu SWISH with alpha 1, hardswish HARDSWISH with PyTorch's
``x/6 + 0.5`` (alpha 1/6, beta 1/2), leaky_relu RELU with alpha the slope, reciprocal POW with
alpha 1 and beta -1 (a division, correctly rounded).

Where oneDNN's special values are not polyeng's, the kernel mends them or turns the call down:
- relu on floats: oneDNN takes ``max(x, 0)`` with the instruction that drops a NaN ``x``; when
  ``x`` holds a NaN, those elements are set back to NaN afterwards (relu on integers has no NaN).
- leaky_relu with slope 0 takes the same path, and gives 0 at -inf where polyeng gives NaN
  (``-inf * 0``): turned down.
- gelu: the exact form gives NaN at +inf, and both forms overflow to inf near the f32 maximum
  (``0.5 * x`` is not taken first); the few non-finite results are recomputed with BASIC's formula.
- exp maps NaN to inf and hardsigmoid NaN to 1 (clamped inputs): not provided.
- log: oneDNN's f32 log is within about 30 ulps, polyeng's within 4: bf16 only.
erf has no eltwise algorithm. 16-bit floats (f16) are turned down where this CPU has no kernel.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

FLOATS = (np.dtype(np.float32), np.dtype(dt.bfloat16), np.dtype(np.float16))
INTEGERS = (np.dtype(np.int8), np.dtype(np.uint8))   # int32 is computed in f32: inexact past 2**24
F32_MAX = float(np.finfo(np.float32).max)


def _eltwise(alg: int, alpha: float, beta: float, size: int, dtype) -> Primitive:
    """The primitive applying ``alg`` to ``size`` contiguous elements of ``dtype`` (cached)."""
    dtype = np.dtype(dtype)
    key = ("eltwise", alg, float(alpha), float(beta), size, dtype.str)

    def build():
        md = desc((size,), dtype)
        return Primitive("dnnl_eltwise_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg, md.handle,
                         md.handle, float(alpha), float(beta), None, keep=(md,))
    return cached(key, build)


def eltwise(alg: int, x: np.ndarray, alpha: float = 0.0, beta: float = 0.0) -> np.ndarray:
    """``alg`` applied to every element of ``x``: a new C-contiguous array of ``x``'s shape and dtype."""
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    x = np.ascontiguousarray(x)
    prim = _eltwise(alg, alpha, beta, x.size, x.dtype)
    prim.run({C.ARG_SRC: x, C.ARG_DST: out}, threads_for(x.size))
    return out


def _kinds(op: str, kinds=FLOATS, probe=None):
    """The rule of an eltwise kernel: ``x``'s dtype among ``kinds`` (else the reason), then the
    primitive built for it (``probe(call) -> (alg, alpha, beta)``): the reason when oneDNN has none."""
    def rule(call):
        x = call.args["x"]
        if x.dtype not in kinds:
            names = ", ".join(str(k) for k in kinds)
            return f"oneDNN's eltwise {op} takes {names} here, not {x.dtype}"
        if x.size == 0:
            return None   # no primitive needed
        alg, alpha, beta = probe(call)
        try:
            _eltwise(alg, alpha, beta, x.size, x.dtype)
        except Exception as exc:
            return f"oneDNN has no {op} for this call: {exc}"
        return None
    return rule


def _fixed(alg):
    return lambda call: (alg, 0.0, 0.0)


# -- relu ----------------------------------------------------------------------------------------

def _relu_rule(call):
    if call.args["x"].dtype == np.int32:
        return "oneDNN's integer relu computes in f32, inexact for int32 values past 2**24"
    return _kinds("relu", FLOATS + INTEGERS, _fixed(C.ELTWISE_RELU))(call)


@limit(_relu_rule)
def relu(p, x):
    out = eltwise(C.ELTWISE_RELU, x)
    if x.dtype in FLOATS and x.size and _may_hold(x):
        nans = np.isnan(x)
        if nans.any():   # oneDNN's max(x, 0) gave 0
            out[nans] = x[nans]
    return out


def _may_hold(a) -> bool:
    """Whether ``a`` may hold a NaN or an infinity: its f32 sum of squares (``finite_hint``) is not
    finite, or it is 16-bit (numpy sums those slowly); the exact scan follows only then."""
    return a.dtype != np.float32 or not finite_hint(a)


def finite_hint(a) -> bool:
    """True when every element of the f32 array ``a`` is surely finite: its dot product with itself
    (BLAS: 2.5-4x numpy's sum, no temporary) or, for a view that is not contiguous, its sum, is
    finite. False says only "maybe not" (a large finite array may overflow the sum)."""
    if a.flags.c_contiguous:
        flat = a.reshape(-1)
        return math.isfinite(np.dot(flat, flat))
    return math.isfinite(np.add.reduce(a, axis=None))


# -- gelu ----------------------------------------------------------------------------------------

_GELU = {"none": C.ELTWISE_GELU_ERF, "tanh": C.ELTWISE_GELU_TANH}


def _gelu_formula(x, approximate):
    """BASIC's gelu of a few elements (f32, the compute type of every storage dtype here)."""
    from ..basic.activation import gelu as basic_gelu
    return basic_gelu(None, x.astype(np.float32), approximate)


@limit(_kinds("gelu", probe=lambda call: (_GELU[call.args["approximate"]], 0.0, 0.0)))
def gelu(p, x, approximate):
    out = eltwise(_GELU[approximate], x)
    if out.size and _may_hold(out):
        flat = out.reshape(-1)
        bad = ~np.isfinite(flat)
        if bad.any():   # NaN at +inf (erf form), inf near the f32 maximum: BASIC's formula there
            where = np.flatnonzero(bad)
            flat[where] = _gelu_formula(np.ascontiguousarray(x).reshape(-1)[where], approximate).astype(x.dtype)
    return out


# -- the others ----------------------------------------------------------------------------------

@limit(_kinds("sigmoid", probe=_fixed(C.ELTWISE_LOGISTIC)))
def sigmoid(p, x):
    return eltwise(C.ELTWISE_LOGISTIC, x)


@limit(_kinds("tanh", probe=_fixed(C.ELTWISE_TANH)))
def tanh(p, x):
    return eltwise(C.ELTWISE_TANH, x)


@limit(_kinds("sqrt", probe=_fixed(C.ELTWISE_SQRT)))
def sqrt(p, x):
    return eltwise(C.ELTWISE_SQRT, x)


_HARD = (1.0 / 6.0, 0.5)   # PyTorch's x/6 + 1/2 inside the clamp to [0, 1]


@limit(_kinds("hardswish", probe=lambda call: (C.ELTWISE_HARDSWISH,) + _HARD))
def hardswish(p, x):
    out = eltwise(C.ELTWISE_HARDSWISH, x, *_HARD)
    if x.size and _may_hold(x):   # |x| past about 1.8e19, or a special value: BASIC's formula where it
        flat, source = out.reshape(-1), np.ascontiguousarray(x).reshape(-1)   # overflows (from 5.7e37)
        where = np.flatnonzero(~(np.abs(source.astype(np.float32)) < F32_MAX / 8))
        if where.size:
            from ..basic.activation import hardswish as basic_hardswish
            flat[where] = basic_hardswish(None, source[where].astype(np.float32)).astype(x.dtype)
    return out


@limit(_kinds("silu", probe=lambda call: (C.ELTWISE_SWISH, 1.0, 0.0)))
def silu(p, x):
    return eltwise(C.ELTWISE_SWISH, x, 1.0)


def _leaky_rule(call):
    slope = call.args["negative_slope"]
    if call.args["x"].dtype not in FLOATS:
        return _kinds("leaky_relu", probe=None)(call)
    if np.float32(slope) == 0:   # also a slope that rounds to 0 in f32, oneDNN's slope type
        return ("oneDNN's relu with a zero slope is max(x, 0): NaN and -inf give 0 where leaky_relu gives "
                "NaN (x * 0)")
    if not math.isfinite(float(np.float32(slope))):
        return f"negative_slope={slope} is past float32's range, oneDNN's slope type"
    return _kinds("leaky_relu", probe=lambda c: (C.ELTWISE_RELU, _slope(c.args["negative_slope"]), 0.0))(call)


@limit(_leaky_rule)
def leaky_relu(p, x, negative_slope):
    return eltwise(C.ELTWISE_RELU, x, _slope(negative_slope))


def _slope(negative_slope) -> float:
    return float(np.float32(negative_slope))   # the compute type's slope, as BASIC takes it


def _log_rule(call):
    if call.args["x"].dtype == np.float32:
        return "oneDNN's f32 log is within about 30 ulps; polyeng's is within 4"
    return _kinds("log", (np.dtype(dt.bfloat16), np.dtype(np.float16)), _fixed(C.ELTWISE_LOG))(call)


@limit(_log_rule)
def log(p, x):
    return eltwise(C.ELTWISE_LOG, x)


@limit(_kinds("reciprocal", probe=lambda call: (C.ELTWISE_POW, 1.0, -1.0)))
def reciprocal(p, x):
    return eltwise(C.ELTWISE_POW, x, 1.0, -1.0)
