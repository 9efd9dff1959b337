"""The fp math mode: a scoped hint that allows f32 work to be done in a lower-precision type.

The mode only *allows*; what a call may compute in is decided per call by
``allowed_compute`` from the op's AMP category, the engine picks the most preferred type
its kernel supports, and ``explain`` and verbose show it.
"""
from __future__ import annotations

import contextvars
import os

import numpy as np

from . import dtypes as dt
from .mixed_precision import Category
from .names import NameEnum
from .scopes import Scoped

ENV_FP_MATH_MODE = "POLYENG_DEFAULT_FP_MATH_MODE"


class FpMathMode(NameEnum):
    STRICT = "strict"
    BF16 = "bf16"
    F16 = "f16"
    TF32 = "tf32"
    ANY = "any"


# The compatibility lattice, in one table: the types each mode allows f32 work to be computed
# in, most preferred (fastest) first. f32 > tf32 > bf16 and f32 > tf32 > f16; bf16 and f16
# are not comparable, so only ANY allows both.
ALLOWED = {
    FpMathMode.STRICT: ("f32",),
    FpMathMode.TF32: ("tf32", "f32"),
    FpMathMode.BF16: ("bf16", "tf32", "f32"),
    FpMathMode.F16: ("f16", "tf32", "f32"),
    FpMathMode.ANY: ("bf16", "f16", "tf32", "f32"),
}
# The down-conversion type a mode names, as given to mixed precision rules.
MIXED_DTYPE = {FpMathMode.STRICT: "float32", FpMathMode.TF32: "tf32", FpMathMode.BF16: "bfloat16",
               FpMathMode.F16: "float16", FpMathMode.ANY: "bfloat16"}
# The lower types stand for rounding of the inputs; arithmetic and accumulation stay f32.
DOWN_CONVERSIONS = ("tf32", "bf16", "f16")
_BY_DTYPE = {dt.float32: FpMathMode.STRICT, dt.bfloat16: FpMathMode.BF16, dt.float16: FpMathMode.F16}


def valid_modes() -> str:
    """The values a mode may be given as, for error messages."""
    return (f"{', '.join(m.value for m in FpMathMode)}, or a float dtype or its name: "
            f"float32 (strict), bfloat16, float16")


def as_mode(value, where: str = "mode") -> FpMathMode:
    """A mode from a ``FpMathMode``, a name (case-insensitive) or a float dtype or dtype name
    (float32 = strict)."""
    if isinstance(value, FpMathMode):
        return value
    if isinstance(value, str):
        try:
            return FpMathMode(value.strip().lower())
        except ValueError:
            pass
        try:
            dtype = dt.as_dtype(value.strip(), where)
        except TypeError:
            raise ValueError(f"{where}={value!r} is not an fp math mode; expected one of {valid_modes()}") from None
    else:
        try:
            dtype = None if value is None else np.dtype(value)
        except TypeError:
            dtype = None
        if dtype is None:   # np.dtype(None) is float64: None is no mode at all
            raise TypeError(f"{where}={value!r} is not an fp math mode; expected one of {valid_modes()}")
    if dtype not in _BY_DTYPE:
        raise ValueError(f"{where}={dtype.name} is not a compatible down-conversion type for f32 work "
                         f"(only float32, bfloat16, float16 and tf32 are); expected one of {valid_modes()}")
    return _BY_DTYPE[dtype]


_mode: contextvars.ContextVar[FpMathMode | None] = contextvars.ContextVar("polyeng_fp_math_mode", default=None)
_default: FpMathMode | None = None
_default_source = "default"


def default_mode() -> FpMathMode:
    global _default, _default_source
    if _default is None:
        raw = os.environ.get(ENV_FP_MATH_MODE, "").strip()
        if raw:
            _default, _default_source = as_mode(raw, ENV_FP_MATH_MODE), f"env {ENV_FP_MATH_MODE}"
        else:
            _default = FpMathMode.STRICT
    return _default


def default_source() -> str:
    default_mode()
    return _default_source


def set_default_fp_math_mode(mode) -> None:
    """Set the process-wide fp math mode (below any ``fp_math_mode`` scope)."""
    global _default, _default_source
    _default, _default_source = as_mode(mode), "set_default_fp_math_mode()"


def get_fp_math_mode() -> FpMathMode:
    """The mode in effect here: the innermost ``fp_math_mode`` scope, else the process default."""
    return _mode.get() or default_mode()


class fp_math_mode(Scoped):
    """Allow f32 work inside the ``with`` block to be computed in ``mode``'s type or better."""

    _var = _mode

    def __init__(self, mode):
        self.mode = self.value = as_mode(mode)


def allowed_compute(category: Category, storage: np.dtype, mode: FpMathMode, exact: bool = False) -> tuple:
    """The compute types a call may use, most preferred first.

    Only f32 work of ALLOW ops is ever down-converted. 16-bit storage computes in f32
    (f32 accumulation, written back in 16 bits); FOLLOW and DENY f32 work stays f32; f64,
    integer and bool work, and exact (data movement) ops, run in their storage dtype.
    """
    storage = np.dtype(storage)
    if exact or storage not in dt.FLOAT_DTYPES or storage == dt.float64:
        return (dt.short_name(storage),)
    if storage in dt.SIXTEEN_BIT_FLOATS or category is not Category.ALLOW:
        return ("f32",)
    return ALLOWED[mode]


def compute_dtype(compute: str) -> np.dtype:
    """The numpy dtype a compute type stands for: float32 for tf32 (no numpy type of its own)."""
    return dt.float32 if compute == "tf32" else dt.as_dtype(compute)


def arithmetic_dtype(compute: str) -> np.dtype:
    """The numpy dtype the arithmetic of a compute type runs in (down-conversions run in f32)."""
    return dt.float32 if compute in DOWN_CONVERSIONS else dt.as_dtype(compute)


def down_convert(a: np.ndarray, compute: str) -> np.ndarray:
    """f32 values rounded (to nearest even) to what ``compute`` can represent, kept as f32."""
    if compute == "tf32":
        return round_to_tf32(a)
    if compute in ("bf16", "f16"):
        return dt.round_to(a, dt.as_dtype(compute)).astype(dt.float32)
    return a


def round_to_tf32(a: np.ndarray) -> np.ndarray:
    """Round f32 values to TF32's 10 mantissa bits, nearest even; NaN and Inf kept, overflow to Inf."""
    a = np.ascontiguousarray(a, dtype=dt.float32)
    bits = a.view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    lsb = (bits >> 13) & 1
    rounded = ((bits + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)).astype(np.uint32)
    return np.where(finite, rounded, bits).view(dt.float32)
