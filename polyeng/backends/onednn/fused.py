"""fused_conv on oneDNN: one convolution primitive with post-ops, the residual added (written into
the destination first, in its layout, and summed: the sum post-op) and then the activation (an
eltwise post-op), as each block of the result is made.

The post-op activations are oneDNN's eltwise algorithms with the constants the standalone kernels
use (``activation.py``). Post-ops do not keep polyeng's special values: measured with a NaN and
infinities in the input, relu, hardsigmoid and clip gave numbers for NaN, sigmoid did after a
residual, relu after a residual gave NaN for numbers, and hardswish differed on infinities. So
the fused primitive runs only when every operand is finite (then the convolution has no NaN), and
its result is checked where an overflow could reach an activation that maps it otherwise than
polyeng (hardswish, silu, leaky_relu). Otherwise, and for gelu (whose post-op overflows near the
f32 maximum), and where oneDNN has no fast code for the post-ops (the gemm pointwise convolution
applies an eltwise post-op in a slower pass of its own), the convolution runs alone on oneDNN, the
residual is added by numpy and the activation runs on its own kernel (oneDNN's eltwise, which
keeps the special values itself, or BASIC's numpy for hardsigmoid and clip). The path is decided
on a call signature's first call. A constant's finiteness is read once; the others cost one read
of each operand.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .. import _fused
from ..basic import activation as basic_activation, arithmetic as basic_arithmetic, clip as basic_clip
from .._address import address
from .._loader import limit
from . import _constants as C
from . import conv
from ._packed import constant, note_for
from . import activation as onednn_activation
from .activation import finite_hint

F32 = np.dtype(np.float32)

# activation -> (alg, alpha, beta) of oneDNN's eltwise post-op from fused_conv's alpha and beta
POST_OPS = {
    "relu": lambda a, b: (C.ELTWISE_RELU, 0.0, 0.0),
    "leaky_relu": lambda a, b: (C.ELTWISE_RELU, a, 0.0),
    "sigmoid": lambda a, b: (C.ELTWISE_LOGISTIC, 0.0, 0.0),
    "tanh": lambda a, b: (C.ELTWISE_TANH, 0.0, 0.0),
    "hardswish": lambda a, b: (C.ELTWISE_HARDSWISH, 1.0 / 6.0, 0.5),
    "hardsigmoid": lambda a, b: (C.ELTWISE_HARDSIGMOID, 1.0 / 6.0, 0.5),
    "silu": lambda a, b: (C.ELTWISE_SWISH, 1.0, 0.0),
    "clip": lambda a, b: (C.ELTWISE_CLIP_V2, a, b),
}
# activations whose result needs no check after the fused primitive: bounded ones (an overflow in
# the convolution cannot show), those that map an infinity as polyeng does (relu, clip) and none
# (the residual's sum is the add's own rounding); hardswish, silu and leaky_relu are checked
# (``_below_overflow``)
NO_CHECK_AFTER = {"sigmoid", "tanh", "hardsigmoid", "relu", "clip", "none"}
# bit masks of the exponent of the 16-bit floats (all ones: an infinity or a NaN)
EXPONENT = {np.dtype(dt.bfloat16): 0x7F80, np.dtype(np.float16): 0x7C00}


def _eltwise(activation: str, alpha: float, beta: float):
    make = POST_OPS.get(activation)
    return None if make is None else make(alpha, beta)


def _rule(call):
    args = call.args
    arrays = [args[n] for n in ("x", "weight", "bias", "residual") if args.get(n) is not None]
    odd = sorted({str(a.dtype) for a in arrays if a.dtype not in conv.FLOATS})
    if odd:
        return f"oneDNN's convolution takes f32, bf16 and f16 data, not {', '.join(odd)}"
    p = call.prepared
    if conv._empty(p):
        return None
    try:   # the convolution (the post-ops are tried when the call runs: without them it is composed)
        conv._plan(p, args["x"], args["weight"], args["bias"] is not None)
    except Exception as exc:
        return f"oneDNN has no convolution for this call: {exc}"
    return None


# (pointer, shape, strides, dtype) of a constant weight or bias -> (the array, finite): the array
# is held, so that its memory cannot become another constant's while the answer is kept
_finite_constants: dict = {}


def _finite(a) -> bool:
    """Whether every element of ``a`` is finite (f32: ``finite_hint`` first, one pass with no
    temporary; a constant's answer is kept)."""
    if a is None or a.size == 0:
        return True
    key = None
    if constant(a):
        key = (address(a), a.shape, a.strides, a.dtype.str)
        found = _finite_constants.get(key)
        if found is not None and found[0] is a:
            return found[1]
    if a.dtype == F32:
        finite = finite_hint(a) or bool(np.isfinite(a).all())
    else:
        mask = EXPONENT[a.dtype]
        finite = not bool((np.bitwise_and(a.view(np.uint16), mask) == mask).any())
    if key is not None:
        if len(_finite_constants) > 4096:
            _finite_constants.clear()
        _finite_constants[key] = (a, finite)
    return finite


def _below_overflow(y) -> bool:
    """Whether the fused result surely equals the separate calls': no element large enough for
    polyeng's formula to overflow where oneDNN's does not (hardswish's ``x * relu6(x + 3)`` passes
    f32's maximum from about 5.7e37, oneDNN's ``x * clip(x / 6 + 1/2)`` does not), nor infinite.
    f32: its sum of squares is finite (every |y| below about 1.8e19); else the exponent scan."""
    if y.dtype == F32:
        return finite_hint(y)
    return _finite(y)


@limit(_rule)
def fused_conv(p, x, weight, bias, stride, padding, dilation, groups, residual, activation, alpha, beta):
    fused, separate = _path(p, x, weight, bias, residual, activation, alpha, beta)
    if fused and all(_finite(a) for a in (x, weight, bias, residual)):
        y = conv._conv(p, x, weight, bias, residual, _eltwise(activation, alpha, beta))
        if activation in NO_CHECK_AFTER or _below_overflow(y):
            return y
    if separate:   # the kernels one after another: each keeps polyeng's special values itself
        y = conv._conv(p, x, weight, bias)
        if residual is not None:
            y = np.add(y, residual.reshape(y.shape), dtype=y.dtype)
        return SEPARATE[activation](y, alpha, beta)
    y = conv.empty_result(p, weight, bias) if conv._empty(p) else conv._conv(p, x, weight, bias)
    if residual is None and p.activation_call is None:
        return y
    wide = y.dtype != F32   # BASIC computes 16-bit storage in f32
    y = _fused.finish(p, y.astype(F32) if wide else y,
                      residual.astype(F32) if wide and residual is not None else residual,
                      basic_arithmetic, basic_activation, basic_clip)
    return y.astype(p.dtype) if wide else y


def _path(p, x, weight, bias, residual, activation, alpha, beta) -> tuple:
    """(fused, separate) for a call of this signature, decided on its first call (kept on its
    prepared facts, per fp math compute type): whether one primitive with post-ops serves it (on
    finite operands), and whether, otherwise, oneDNN's convolution, numpy's add and the activation's
    own kernel do; where neither, BASIC's add and activation follow the convolution, in f32 (empty
    calls, and the activations SEPARATE cannot run as BASIC does)."""
    key = "onednn fused path " + conv._compute(p)
    found = p.__dict__.get(key)
    if found is None:
        fused = separate = False
        if not conv._empty(p):
            eltwise = _eltwise(activation, alpha, beta)
            wide = np.dtype(p.dtype) != F32
            # a slope that is 0 in f32 (also 1e-50) is oneDNN's max(x, 0): NaN and -inf give 0, not NaN
            zero_slope = activation == "leaky_relu" and np.float32(alpha) == 0
            separate = activation in SEPARATE and not zero_slope and not (wide and activation in ("hardsigmoid", "clip"))
            fused = (eltwise is not None or activation == "none") and not zero_slope \
                and _has_plan(p, x, weight, bias, residual, eltwise)
        found = p.__dict__[key] = (fused, separate)
    return found


def _has_plan(p, x, weight, bias, residual, eltwise) -> bool:
    """Whether oneDNN has a fast primitive for the convolution with these post-ops."""
    try:
        conv._plan(p, x, weight, bias is not None, residual is not None, eltwise)
    except RuntimeError:
        return False
    return True


fused_conv.note = note_for("weight")

# the activations run after the convolution as BASIC computes them, special values included: oneDNN's
# eltwise kernels (activation.py; leaky_relu with slope 0 excepted), and BASIC's own numpy for
# hardsigmoid and clip on f32 (16-bit results go the "compose" way, through f32); "none" is the identity
SEPARATE = {"none": lambda y, a, b: y,
            "relu": lambda y, a, b: onednn_activation.relu(None, y),
            "sigmoid": lambda y, a, b: onednn_activation.sigmoid(None, y),
            "tanh": lambda y, a, b: onednn_activation.tanh(None, y),
            "hardswish": lambda y, a, b: onednn_activation.hardswish(None, y),
            "silu": lambda y, a, b: onednn_activation.silu(None, y),
            "leaky_relu": lambda y, a, b: onednn_activation.leaky_relu(None, y, a),
            "gelu": lambda y, a, b: onednn_activation.gelu(None, y, "none"),
            "gelu_tanh": lambda y, a, b: onednn_activation.gelu(None, y, "tanh"),
            "hardsigmoid": lambda y, a, b: basic_activation.hardsigmoid(None, y),
            "clip": lambda y, a, b: basic_clip.clip(None, y, np.float32(a), np.float32(b))}
