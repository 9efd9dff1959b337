"""The dtype table: which numpy dtypes polyeng accepts, their short names, and promotion.

bfloat16 is re-exported from ml_dtypes here and nowhere else.
"""
from __future__ import annotations

import numpy as np
from ml_dtypes import bfloat16 as _ml_bfloat16

from .signal_safe import quietly

# The public names (polyeng.float32, polyeng.bfloat16, ...) are scalar types, as in numpy;
# the module-level dtype constants below are what the tables and checks use.
BFLOAT16_TYPE = _ml_bfloat16

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(_ml_bfloat16)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)  # numpy's default integer: array-likes of ints arrive as int64
bool_ = np.dtype(np.bool_)

FLOAT_DTYPES = (float16, bfloat16, float32, float64)
SIXTEEN_BIT_FLOATS = (float16, bfloat16)
INTEGER_DTYPES = (int8, uint8, int32, int64)
SUPPORTED_DTYPES = FLOAT_DTYPES + INTEGER_DTYPES + (bool_,)

SHORT_NAMES = {
    float16: "f16", bfloat16: "bf16", float32: "f32", float64: "f64",
    int8: "s8", uint8: "u8", int32: "s32", int64: "s64", bool_: "bool",
}

# Names a user may write for a dtype, besides numpy dtypes and scalar types.
_ALIASES = {
    "float16": float16, "f16": float16, "half": float16,
    "bfloat16": bfloat16, "bf16": bfloat16,
    "float32": float32, "f32": float32, "float": float32,
    "float64": float64, "f64": float64, "double": float64,
    "int8": int8, "s8": int8, "uint8": uint8, "u8": uint8,
    "int32": int32, "s32": int32, "int64": int64, "s64": int64,
    "bool": bool_, "bool_": bool_,
}


def supported_names() -> str:
    return ", ".join(np.dtype(d).name for d in SUPPORTED_DTYPES)


def as_dtype(value, name: str = "dtype") -> np.dtype:
    """Turn a dtype-like (polyeng/numpy dtype, scalar type or name) into a supported np.dtype."""
    if value is None:
        raise TypeError(f"{name}=None: expected a dtype, one of {supported_names()}")
    if isinstance(value, str):
        found = _ALIASES.get(value.lower())
        if found is None:
            raise TypeError(f"{name}={value!r} is not a supported dtype; expected one of {supported_names()}")
        return found
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"{name}={value!r} is not a dtype; expected one of {supported_names()}") from None
    if dtype not in SUPPORTED_DTYPES:
        shown = dtype.name if isinstance(value, (np.dtype, type)) else repr(value)   # [] reads as void
        raise TypeError(f"{name}={shown} is not a supported dtype; expected one of {supported_names()}")
    return dtype


def short_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return SHORT_NAMES.get(dtype) or dtype.name


def result_type(*dtypes) -> np.dtype:
    """numpy's promotion, extended to bfloat16 (which numpy cannot promote with float16).

    bfloat16 promotes like float16 does (bf16 + int8 -> bf16, bf16 + f32 -> f32), and
    bf16 + f16 -> f32, the narrowest type that holds both.
    """
    dtypes = [np.dtype(d) for d in dtypes]
    if bfloat16 not in dtypes:
        return np.result_type(*dtypes)
    if float16 in dtypes:
        return np.result_type(float32, *[d for d in dtypes if d not in SIXTEEN_BIT_FLOATS])
    promoted = np.result_type(*[float16 if d == bfloat16 else d for d in dtypes])
    return bfloat16 if promoted == float16 else promoted


def round_to(x: np.ndarray, dtype) -> np.ndarray:
    """Convert ``x`` to ``dtype`` with round-to-nearest-even, NaN/Inf preserved, overflow to Inf.

    numpy's casts are correctly rounded except f64 -> bf16 in ml_dtypes, which goes through
    f32 and can round twice; that one is done as f64 -> f32 with round-to-odd (a sticky
    last bit), then f32 -> bf16, which is exact rounding for every input.
    """
    dtype = np.dtype(dtype)
    x = np.asarray(x)
    return quietly(_round_to, x, dtype, over="ignore")   # overflow to Inf is the defined result


def _round_to(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == bfloat16 and x.dtype.kind in "iub":
        x = _int_to_float64_for_bf16(x)   # ml_dtypes would round int -> f32 -> bf16 twice
    if dtype == bfloat16 and x.dtype == float64:
        narrow = x.astype(float32)
        inexact = (narrow.astype(float64) != x) & np.isfinite(x)
        if inexact.any():
            # step back toward zero where f32 rounding went away from zero, then mark sticky
            away = inexact & (np.abs(narrow.astype(float64)) > np.abs(x))
            narrow = np.where(away, np.nextafter(narrow, np.float32(0)), narrow)
            bits = narrow.view(np.uint32) | inexact.astype(np.uint32)
            narrow = bits.view(float32)
        return narrow.astype(bfloat16)
    return x.astype(dtype)


def _int_to_float64_for_bf16(x: np.ndarray) -> np.ndarray:
    """Integers as f64 values that round to bf16 exactly as the integers would.

    Below 2**53 the conversion is exact. Above, the bits past the 24th significant one only
    matter as a sticky bit, so they are folded into one before converting (rare: a loop).
    """
    out = x.astype(float64, order="C")
    if x.dtype.itemsize == 8 and x.size:
        big = np.flatnonzero(np.abs(out.ravel()) >= 2.0 ** 53)
        flat_in, flat_out = x.ravel(), out.reshape(-1)
        for i in big:
            value = int(flat_in[i])
            magnitude = abs(value)
            shift = magnitude.bit_length() - 24
            folded = ((magnitude >> shift) | (1 if magnitude & ((1 << shift) - 1) else 0)) << shift
            flat_out[i] = float(folded if value > 0 else -folded)
    return out


def product_dtype(a, b) -> np.dtype:
    """The dtype a matrix product of ``a`` and ``b`` computes in: their promotion, except that
    integer operands join a float one as it is (floats were already converted to the compute
    type, which must not be widened again by an int32 beside it)."""
    out = result_type(a, b)
    if out in FLOAT_DTYPES:
        out = result_type(*[d for d in (a, b) if d in FLOAT_DTYPES])
    return out
