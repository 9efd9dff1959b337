"""Argument checks shared by the op modules. Every error names the argument, the value and
what was expected, and is raised before any engine is chosen."""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ..engine import dtypes as dt
from ..engine import plugins
from ..engine.call import Prepared


_SUPPORTED = frozenset(dt.SUPPORTED_DTYPES)   # sets: membership is one hash, not a compare per dtype
_FLOATS = frozenset(dt.FLOAT_DTYPES)


def tensor(value, name: str, *, floats_only: bool = False, ranks=None, op: str = "", like=None) -> object:
    """``value`` as a numpy array (or the device tensor it already is), with a supported dtype.

    ``like``: the dtype a Python list or scalar is given (weights written as lists take the
    input's dtype rather than float64).
    """
    if type(value) is not np.ndarray and not isinstance(value, np.ndarray) \
            and not isinstance(value, plugins.native_types):
        if value is None:
            raise TypeError(f"{name}=None: expected an array")
        try:
            converted = np.asarray(value)
        except Exception as exc:
            raise TypeError(f"{name}: cannot convert {type(value).__name__} to an array ({exc})") from None
        if like is not None and converted.dtype.kind in "fiub" and not isinstance(value, np.generic):
            converted = converted.astype(like)
        value = converted
    dtype = value.dtype
    if isinstance(value, np.ndarray) and not dtype.isnative:
        value = value.astype(dtype.newbyteorder("="))   # big-endian data, native arithmetic
        dtype = value.dtype
    if dtype not in _SUPPORTED:
        raise TypeError(f"{name} has dtype {dtype}, which polyeng does not support; "
                        f"expected one of {dt.supported_names()}")
    if floats_only and dtype not in _FLOATS:
        raise TypeError(f"{name} has dtype {dtype}; {op or 'this op'} expects a floating-point array "
                        f"(float16, bfloat16, float32 or float64)")
    if ranks is not None and len(value.shape) not in ranks:
        expected = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{name} has shape {tuple(value.shape)} ({len(value.shape)}-D); "
                         f"{op or 'this op'} expects a {expected} array")
    return value


def is_python_scalar(value) -> bool:
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def weak_scalar(value, other_dtype, name: str) -> np.ndarray:
    """A Python scalar beside an array takes the array's dtype when its kind fits (numpy 2's weak
    promotion, extended to bfloat16): ``select(m, x_f16, 0.0)`` stays float16."""
    other = np.dtype(other_dtype)
    if other in dt.FLOAT_DTYPES or (other.kind in "iu" and not isinstance(value, float)) or \
            (other.kind == "b" and isinstance(value, bool)):
        target = other
    else:
        target = np.result_type(other if other != dt.bfloat16 else dt.float16, value)
    try:
        with np.errstate(over="ignore"):   # a float too large for a 16-bit type becomes inf
            return np.asarray(value, dtype=target)
    except OverflowError:
        raise ValueError(f"{name}={value!r} does not fit the other operand's dtype {other}") from None


def integer(value, name: str, *, minimum=None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={value!r}: expected an int")
    value = operator.index(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value}: expected an int >= {minimum}")
    return value


def int_tuple(value, n: int, name: str, *, minimum=None) -> tuple:
    """An int or a sequence of ``n`` ints, as a tuple of ``n`` ints each >= ``minimum``."""
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iu":
        value = tuple(value.tolist())
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
    if type(value) is not int:
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
    """Weights match the input's dtype, or are f32 (mixed weights must be f32)."""
    if weight is None:
        return
    wd = np.dtype(weight.dtype)
    if wd != np.dtype(x_dtype) and wd != dt.float32:
        raise TypeError(f"{name} has dtype {wd} but the input is {np.dtype(x_dtype)}; "
                        f"weights must match the input's dtype or be float32")


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def like_input(args) -> Prepared:
    """The prepared facts of an op whose result has the shape and dtype of its input ``x``."""
    x = args["x"]
    return Prepared(x.shape, x.dtype)
