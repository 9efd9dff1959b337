"""avg_pool2d/3d and max_pool2d/3d on oneDNN's pooling primitive.

The window geometry is the prepared call's (``polyeng.ops.pooling``): oneDNN's dilation is
PyTorch's minus one, and the right padding is what makes oneDNN's floor rule give the
prepared output size (more than ``padding`` in ceil mode). oneDNN divides an
``avg_include_padding`` window by its whole kernel, and an ``avg_exclude_padding`` one by its
in-bounds taps (PyTorch's ``count_include_pad=False``). Where PyTorch's divisor differs from
the one oneDNN used (windows clipped at the padded input's end in ceil mode, or a
``divisor_override``) the f32 means are scaled by the ratio; 16-bit data is then pooled in
f32 and rounded once. Max pooling reads bool as uint8 (logical or is the maximum of 0 and 1).

Turned down: f64 and 64-bit integers (oneDNN has neither), ``return_indices`` (oneDNN's
workspace holds a tap offset with its own tie and NaN rules, not PyTorch's flat index), and
what the probe says oneDNN has no implementation for (f16 on CPUs without AVX512-FP16).
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._convert import converted
from ._lib import dims
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

AVG_TYPES = (dt.float32, dt.bfloat16, dt.float16)
WINDOW_LIMIT = 16   # taps per input position beyond which a window is mostly padding (see the rule)
MAX_TYPES = AVG_TYPES + (dt.int8, dt.uint8)   # not int32: oneDNN compares it in f32 (2**31 - 1 -> 2**31 - 128)


def _rule(types):
    def rule(call):
        p, x = call.prepared, call.args["x"]
        dtype = np.dtype(x.dtype)
        if dtype == dt.bool_ and call.op.startswith("max"):
            dtype = np.dtype(np.uint8)
        if dtype not in types:
            return f"oneDNN's {call.op} takes {', '.join(np.dtype(t).name for t in types)}, not {x.dtype}"
        if call.args.get("return_indices"):
            return ("oneDNN's max pooling gives no PyTorch indices (its workspace holds a tap "
                    "offset chosen by its own tie and NaN rules)")
        if 0 in p.shape:
            return None
        g = p.geometry
        if math.prod(g.kernel) > WINDOW_LIMIT * max(1, math.prod(g.spatial)):
            return (f"{call.op}'s window of {math.prod(g.kernel)} taps is far larger than the input's "
                    f"{math.prod(g.spatial)} positions; oneDNN visits every padded tap (engines that clip "
                    f"windows to the input run it)")
        if dtype in dt.SIXTEEN_BIT_FLOATS and call.op.startswith("avg") and _kind(call.op, p, call.args)[1] is not None:
            return (f"oneDNN divides {call.op}'s windows by the kernel or its in-bounds taps; another divisor "
                    f"(divisor_override, or windows clipped by ceil mode) on {dtype.name} would round twice")
        try:
            _plan(call.op, p, tuple(x.shape), dtype, call.args)
        except Exception as exc:
            return f"oneDNN has no {call.op} for this call: {exc}"
        return None
    return rule


def _padding_right(g) -> tuple:
    """Per dim, a right padding with which oneDNN's floor rule gives the prepared output size."""
    right = []
    for size, out, k, s, p, d in zip(g.spatial, g.out, g.kernel, g.stride, g.padding, g.dilation):
        span = (k - 1) * d + 1
        least = (out - 1) * s + span - size - p       # the last window just fits
        right.append(least if least >= 0 or least + s - 1 < 0 else 0)
    return tuple(right)


def _kind(op, p, args):
    """(algorithm, scale): scale None, a number or an f32 array of ``g.out`` the means are multiplied by."""
    if op.startswith("max"):
        return C.POOLING_MAX, None
    g = p.geometry
    whole = math.prod(g.kernel)
    if args["divisor_override"] is not None:
        return C.POOLING_AVG_INCLUDE_PADDING, whole / args["divisor_override"]
    if not args["count_include_pad"]:
        return C.POOLING_AVG_EXCLUDE_PADDING, None
    divisor = p.divisor
    if (divisor == whole).all():
        return C.POOLING_AVG_INCLUDE_PADDING, None
    return C.POOLING_AVG_INCLUDE_PADDING, (whole / divisor.astype(np.float64)).astype(np.float32)


def _plan(op, p, shape, dtype, args):
    """The primitive of a C-contiguous batched input of ``shape`` and ``dtype``, its scale."""
    g = p.geometry
    alg, scale = _kind(op, p, args)
    if scale is not None:
        dtype = np.dtype(np.float32)   # scaled in f32, rounded once
    src = shape if len(shape) == len(g.spatial) + 2 else (1,) + tuple(shape)
    dst = src[:2] + g.out
    right = _padding_right(g)
    key = ("pooling", alg, src, dtype.str, g.kernel, g.stride, g.padding, right, g.dilation)

    def build():
        src_md, dst_md = desc(src, dtype), desc(dst, dtype)
        return Primitive("dnnl_pooling_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg,
                         src_md.handle, dst_md.handle, dims(g.stride), dims(g.kernel),
                         dims(tuple(d - 1 for d in g.dilation)), dims(g.padding), dims(right), None,
                         keep=(src_md, dst_md))
    return cached(key, build), scale, dtype, src, dst


def _pool(op, p, x, args):
    if 0 in p.shape:
        return np.zeros(p.shape, p.dtype)
    work = x.view(np.uint8) if x.dtype == dt.bool_ else x
    prim, scale, dtype, src, dst = _plan(op, p, work.shape, work.dtype, args)
    work = converted(work, dtype)   # C-contiguous in the primitive's type
    out = np.empty(dst, dtype)
    prim.run({C.ARG_SRC: work.reshape(src), C.ARG_DST: out}, threads_for(out.size * math.prod(p.geometry.kernel)))
    out = out.reshape(p.shape)
    if scale is not None:
        out *= scale
        return dt.round_to(out, p.dtype) if p.dtype != out.dtype else out
    return out.view(p.dtype) if out.dtype != p.dtype else out


@limit(_rule(AVG_TYPES))
def avg_pool2d(p, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _pool("avg_pool2d", p, x, {"count_include_pad": count_include_pad, "divisor_override": divisor_override})


# a 16-bit float's bits: +inf (a larger magnitude is NaN) and the lowest finite value (-max)
_INF_BITS = {dt.bfloat16: 0x7F80, dt.float16: 0x7C00}
_LOWEST_BITS = {dt.bfloat16: 0xFF7F, dt.float16: 0xFBFF}


def _has_nan(x) -> bool:
    """Whether f32, bf16 or f16 ``x`` holds a NaN (reductions without temporaries)."""
    if x.dtype == dt.float32:
        return bool(np.isnan(np.max(x)))
    bits, inf = x.view(np.uint16), _INF_BITS[x.dtype]
    return int(bits.view(np.int16).max()) > inf or int(bits.max()) > 0x8000 | inf


def _has_lowest(out) -> bool:
    """Whether a max lies at the lowest finite value, where oneDNN's windows start (not -inf)."""
    if out.dtype == dt.float32:
        return float(np.min(out)) <= float(np.finfo(np.float32).min)
    return int(out.view(np.uint16).max()) >= _LOWEST_BITS[out.dtype]


@limit(_rule(MAX_TYPES))
def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    # oneDNN's max skips NaN and starts from the lowest finite value, where PyTorch's takes the
    # last NaN of a window and gives -inf for windows of -inf or with no tap inside: such
    # inputs (rare) are pooled by BASIC's kernel
    floats = x.dtype in (dt.float32, dt.bfloat16, dt.float16) and x.size > 0
    if floats and _has_nan(x):
        return _basic(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    out = _pool("max_pool2d", p, x, {})
    if floats and out.size and _has_lowest(out):
        return _basic(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    return out


def _basic(p, *args):
    from ..basic import pooling
    return pooling.max_pool2d(p, *args)


avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
