"""The fp math mode: a scoped hint that allows f32 work to be done in a lower-precision type.

The mode only *allows*; what a call actually computes in is decided per call by
``compute_dtype`` from the op's AMP category and shown by ``explain`` and verbose.
"""
from __future__ import annotations

import contextvars
import enum
import os

import numpy as np

from . import dtypes as dt
from .amp import Category
from .scopes import Scoped

ENV_FP_MATH_MODE = "POLYENG_DEFAULT_FP_MATH_MODE"


class FpMathMode(str, enum.Enum):
    STRICT = "strict"
    BF16 = "bf16"
    F16 = "f16"
    TF32 = "tf32"
    ANY = "any"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


def as_mode(value, where: str = "mode") -> FpMathMode:
    if isinstance(value, FpMathMode):
        return value
    if isinstance(value, str):
        try:
            return FpMathMode(value.strip().lower())
        except ValueError:
            pass
    raise ValueError(f"{where}={value!r} is not an fp math mode; expected one of "
                     f"{', '.join(m.value for m in FpMathMode)}")


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


def compute_dtype(category: Category, storage: np.dtype, mode: FpMathMode) -> np.dtype:
    """The dtype a call computes in, given the op's category and the inputs' promoted dtype.

    16-bit float storage is computed in f32 (f32 accumulation) for every category;
    f64 and integer work is untouched. Down-conversion of f32 work is not performed yet:
    every mode computes f32 work in f32, which every mode allows.
    """
    storage = np.dtype(storage)
    if storage in dt.SIXTEEN_BIT_FLOATS:
        return dt.float32
    return storage
