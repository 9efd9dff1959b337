"""Argument checks shared by the op modules. Every error names the argument, the value and
what was expected, and is raised before any engine is chosen."""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ..engine import dtypes as dt


def _native_types() -> tuple:
    from ..engine.plugins import registry
    return registry().native_types()


def tensor(value, name: str, *, floats_only: bool = False, ranks=None, op: str = "") -> object:
    """``value`` as a numpy array (or the device tensor it already is), with a supported dtype."""
    if not (isinstance(value, np.ndarray) or isinstance(value, _native_types())):
        if value is None:
            raise TypeError(f"{name}=None: expected an array")
        try:
            value = np.asarray(value)
        except Exception as exc:
            raise TypeError(f"{name}: cannot convert {type(value).__name__} to an array ({exc})") from None
    dtype = np.dtype(value.dtype)
    if dtype not in dt.SUPPORTED_DTYPES:
        raise TypeError(f"{name} has dtype {dtype}, which polyeng does not support; "
                        f"expected one of {dt.supported_names()}")
    if floats_only and dtype not in dt.FLOAT_DTYPES:
        raise TypeError(f"{name} has dtype {dtype}; {op or 'this op'} expects a floating-point array "
                        f"(float16, bfloat16, float32 or float64)")
    if ranks is not None and len(value.shape) not in ranks:
        expected = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{name} has shape {tuple(value.shape)} ({len(value.shape)}-D); "
                         f"{op or 'this op'} expects a {expected} array")
    return value


def integer(value, name: str, *, minimum=None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={value!r}: expected an int")
    value = operator.index(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value}: expected an int >= {minimum}")
    return value


def int_tuple(value, n: int, name: str, *, minimum=None) -> tuple:
    """An int or a sequence of ``n`` ints, as a tuple of ``n`` ints each >= ``minimum``."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise ValueError(f"{name}={tuple(value)!r}: expected an int or {n} ints")
        items = tuple(value)
    else:
        items = (value,) * n
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral):
            raise TypeError(f"{name}={value!r}: expected an int or {n} ints")
        item = operator.index(item)
        if minimum is not None and item < minimum:
            raise ValueError(f"{name}={value!r}: every value must be >= {minimum}")
        out.append(item)
    return tuple(out)


def flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}={value!r}: expected True or False")
    return bool(value)


def axis(value, ndim: int, name: str = "axis") -> int:
    """A normalised axis in [0, ndim); 0-d arrays accept -1 and 0 as numpy and PyTorch do."""
    value = integer(value, name)
    bound = max(ndim, 1)
    if not -bound <= value < bound:
        raise ValueError(f"{name}={value} is out of range for an array with {ndim} dimensions; "
                         f"expected {-bound} <= {name} < {bound}")
    return value % bound


def choice(value, name: str, options) -> str:
    if value not in options:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(repr(o) for o in options)}")
    return value


def same_or_f32(weight, x_dtype, name: str) -> None:
    """Weights match the input's dtype, or are f32 (SPEC: mixed weights must be f32)."""
    if weight is None:
        return
    wd = np.dtype(weight.dtype)
    if wd != np.dtype(x_dtype) and wd != dt.float32:
        raise TypeError(f"{name} has dtype {wd} but the input is {np.dtype(x_dtype)}; "
                        f"weights must match the input's dtype or be float32")


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"
