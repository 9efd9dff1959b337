"""The JIT conversion of an array to f16, bf16, f32 or f64 with one round-to-nearest-even, bit for
bit as BASIC: the cast kernel, and the 16-bit storage around f32 kernels (``_f32_path``).

Most conversions are one LLVM instruction, correctly rounded. Two would round twice if
taken through f32, and are done as engine.dtypes.round_to documents:
- f64 -> bf16 and f64 -> f16: f64 -> f32 with round-to-odd (a sticky last bit), then one
  rounding to the 16-bit type, which equals rounding the f64 directly (f32 keeps more than
  two bits beyond either 16-bit format's precision).
- int64 -> bf16: at and beyond 2**24 the bits below the 24th significant one are folded
  into a sticky bit, so the f32 holding them is exact and the one rounding is to bf16.
  Narrower integers take the f64 route (they are exact in f64).
Everything else converts directly, correctly rounded by LLVM, from the input's own storage:
no widened copy of the input is made (bools are read as uint8). Conversions that are exact
(integers to f64, 8-bit integers to f32) are numpy assignments.
"""
from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from ...engine import dtypes as dt
from ._runtime import inline, jit, launch, threads_for
from ._storage import (
    bits_f32,
    f32_bits,
    f32_to_bf16_bits,
    f32_to_f16_bits,
    kernel_view,
    read_only,
    widen,
)

_CHUNK = 65536   # elements per parallel task


@inline
def _f64_to_f32_odd(v):
    """v rounded to f32 toward zero, with the last bit set when that was inexact (round-to-odd)."""
    f = np.float32(v)
    back = np.float64(f)
    if back == v or not np.isfinite(v):
        return f
    bits = f32_bits(f)
    if abs(back) > abs(v):   # rounded away from zero: one step back toward it
        bits -= np.uint32(1)
    return bits_f32(bits | np.uint32(1))


@inline
def _int_to_f32_sticky(v):
    """An integer as an f32 that rounds to bf16 as the integer itself would (see module doc)."""
    if -16777216 < v < 16777216:
        return np.float32(v)
    magnitude = np.uint64(-np.int64(v)) if v < 0 else np.uint64(v)
    shift = np.uint64(0)
    while (magnitude >> shift) >= np.uint64(16777216):
        shift += np.uint64(1)
    sticky = np.uint64(1) if magnitude & ((np.uint64(1) << shift) - np.uint64(1)) else np.uint64(0)
    f = np.float32(((magnitude >> shift) | sticky) << shift)
    return -f if v < 0 else f


def convert(value, out):
    """A stored element -> the element of ``out``'s storage (bf16 as uint16, f16 as int16)."""


@overload(convert, inline="always")
def _convert(value, out):
    target = out.dtype
    floating = value in (types.uint16, types.int16, types.float32)   # 16-bit storage views and f32
    if target == types.uint16:
        if floating:
            return lambda value, out: f32_to_bf16_bits(widen(value))
        if value == types.float64:
            return lambda value, out: f32_to_bf16_bits(_f64_to_f32_odd(value))
        if value.bitwidth <= 32:   # exact in f64, whose path vectorizes where the sticky loop does not
            return lambda value, out: f32_to_bf16_bits(_f64_to_f32_odd(np.float64(value)))
        return lambda value, out: f32_to_bf16_bits(_int_to_f32_sticky(value))
    if target == types.int16:
        if floating:
            return lambda value, out: f32_to_f16_bits(widen(value))
        if value == types.float64:
            return lambda value, out: f32_to_f16_bits(_f64_to_f32_odd(value))
        # |integer| >= 2**24 is far beyond f16's range: its f32 rounding cannot change the result
        return lambda value, out: f32_to_f16_bits(np.float32(value))
    if target == types.float32:
        if floating:
            return lambda value, out: widen(value)
        return lambda value, out: np.float32(value)
    if target == types.float64:
        if floating:
            return lambda value, out: np.float64(widen(value))
        return lambda value, out: np.float64(value)


@jit(parallel=True)
def _cast(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]   # indexed from 0 by range variables: vectorizable
        for i in range(hi - lo):
            dst[i] = convert(src[i], dst)


def converted(x, dtype):
    """``x`` (any supported dtype) as a new array of the float ``dtype`` and the same shape."""
    if x.dtype == dtype:
        return x.copy()
    out = np.empty(x.shape, dtype)
    if x.size == 0:
        return out
    if x.dtype.kind in "biu":
        if x.dtype.itemsize < 8 and (dtype == dt.float64 or (dtype == dt.float32 and x.dtype.itemsize == 1)):
            out[...] = x   # exact: nothing to round
            return out
        if x.dtype == dt.bool_:
            x = x.view(np.uint8)
    src = kernel_view(np.ascontiguousarray(x)).reshape(-1)
    chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
    launch(_cast, out.nbytes, read_only(src), kernel_view(out).reshape(-1), chunks)
    return out
