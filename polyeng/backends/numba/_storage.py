"""How NUMBA kernels read and write every storage dtype.

numba has no float16 or bfloat16 type on the CPU, so kernels see 16-bit float arrays as
16-bit integers: bfloat16 as uint16, float16 as int16 (``kernel_view``). Inside a kernel,
``widen(v)`` turns any stored element into its compute value (f32 for 16-bit and f32
storage, f64 for f64, integers and bools unchanged) and ``narrow(v, out)`` turns a compute
value into an element of ``out``'s storage, rounding to nearest even. Both are resolved at
compile time, so one kernel source serves every dtype.

float16 conversions are LLVM ``fpext``/``fptrunc`` on ``half`` (one F16C instruction per
vector on x86); bfloat16 is the upper half of the f32 bit pattern with round-to-nearest-even.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable

from ...engine import dtypes as dt

_VIEWS = {np.dtype(dt.bfloat16): np.dtype(np.uint16), np.dtype(np.float16): np.dtype(np.int16)}


def kernel_view(a: np.ndarray) -> np.ndarray:
    """``a`` as the kernel sees it: 16-bit floats reinterpreted as 16-bit integers, same memory."""
    view = _VIEWS.get(a.dtype)
    return a if view is None else a.view(view)


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a kernel's input: a read-only view (``a`` itself where it is read-only already).
    numba compiles a kernel once per array type, and writability is part of it: a model's weights
    (read-only) and the same call's arrays from a user (writable) would compile it twice."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


# -- bit casts -----------------------------------------------------------------
@intrinsic
def f16_bits_to_f32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.int16), codegen


@intrinsic
def f32_to_f16_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.int16(types.float32), codegen


@intrinsic
def f32_bits(typingctx, value):
    """The IEEE bit pattern of an f32 as uint32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def bits_f32(typingctx, bits):
    """The f32 whose IEEE bit pattern is ``bits`` (uint32)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@register_jitable(inline="always")
def bf16_bits_to_f32(bits):
    return bits_f32(np.uint32(bits) << np.uint32(16))


@register_jitable(inline="always")
def f32_to_bf16_bits(value):
    bits = f32_bits(value)
    if value != value:   # NaN: keep sign and payload top, force quiet
        return np.uint16((bits >> np.uint32(16)) | np.uint32(0x40))
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return np.uint16((bits + rounding) >> np.uint32(16))


# -- the two generic conversions kernels use -------------------------------------
def widen(value):
    """Stored element -> compute value (see module docstring)."""


def narrow(value, out):
    """Compute value -> element of ``out``'s storage dtype."""


@overload(widen, inline="always")
def _widen(value):
    if value == types.uint16:
        return lambda value: bf16_bits_to_f32(value)
    if value == types.int16:
        return lambda value: f16_bits_to_f32(value)
    if value == types.float32:
        return lambda value: value
    if value == types.float64:
        return lambda value: value
    if isinstance(value, (types.Integer, types.Boolean)):
        return lambda value: value
    if isinstance(value, types.Float):
        return lambda value: np.float32(value)


@overload(narrow, inline="always")
def _narrow(value, out):
    kind = out.dtype
    if kind == types.uint16:
        return lambda value, out: f32_to_bf16_bits(np.float32(value))
    if kind == types.int16:
        return lambda value, out: f32_to_f16_bits(np.float32(value))
    if kind == types.float32:
        return lambda value, out: np.float32(value)
    if kind == types.float64:
        return lambda value, out: np.float64(value)
    if isinstance(kind, (types.Integer, types.Boolean)):
        return lambda value, out: value


def compute_dtype(storage: np.dtype) -> np.dtype:
    """The numpy dtype ``widen`` produces for float storage: f64 stays f64, the rest is f32."""
    return np.dtype(np.float64) if storage == np.float64 else np.dtype(np.float32)
