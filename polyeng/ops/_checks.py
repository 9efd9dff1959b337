"""Argument checks shared by the op modules. Every error names the argument, the value and
what was expected, and is raised before any engine is chosen."""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..engine import dtypes as dt
from ..engine.signal_safe import quietly
from ..engine import plugins
from ..engine.call import Prepared


_SUPPORTED = frozenset(dt.SUPPORTED_DTYPES)   # sets: membership is one hash, not a compare per dtype
_FLOATS = frozenset(dt.FLOAT_DTYPES)


def tensor(value, name: str, *, floats_only: bool = False, ranks=None, op: str = "", like=None) -> object:
    """``value`` as a numpy array (or the device tensor it already is), with a supported dtype.

    ``like``: the dtype a Python list or scalar is given (weights written as lists take the
    input's dtype rather than float64).
    """
    if type(value) is not np.ndarray:   # the common case costs this one test
        value = _as_array(value, name, like)
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


_NOT_NUMBERS = "OUSVMm"   # numpy kinds of objects, strings, records and dates (bfloat16 is a V too)


def _as_array(value, name: str, like):
    """A value that is not a plain ndarray: a device tensor of a registered engine as it is,
    an ndarray subclass as the plain array under it (np.matrix's methods would misbehave in
    kernels), anything else through ``np.asarray``."""
    if isinstance(value, plugins.native_types):
        return value
    if isinstance(value, np.ndarray):
        if isinstance(value, np.ma.MaskedArray):   # np.asarray would read the masked entries as data
            example = name if " " not in name else name.split(" ")[0]   # "params[0][2] (b_ih of ...)"
            raise TypeError(f"{name} is a masked array, which polyeng does not support (its masked "
                            f"entries would be read as data); fill them first, e.g. {example}.filled(0)")
        return np.asarray(value)
    if value is None:
        raise TypeError(f"{name}=None: expected an array or array-like of numbers")
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"{name}={value!r:.60}: expected an array or array-like of numbers, "
                        f"got {type(value).__name__}")
    try:
        converted = np.asarray(value)
    except Exception as exc:
        if _is_foreign_tensor(value, None):
            raise _unowned_tensor(value, name) from None
        raise TypeError(f"{name}: expected an array or array-like of numbers, got a "
                        f"{type(value).__name__} that numpy cannot turn into an array ({exc})") from None
    if converted.dtype.kind in _NOT_NUMBERS and converted.dtype not in _SUPPORTED:   # bfloat16 is kind V
        if _is_foreign_tensor(value, converted):
            raise _unowned_tensor(value, name)
        read = f" (numpy reads it as dtype {converted.dtype})" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{name}: expected an array or array-like of numbers, got {type(value).__name__}{read}")
    if like is not None and converted.dtype.kind in "fiub" and not hasattr(value, "dtype"):
        converted = converted.astype(like)   # lists and Python numbers: they have no dtype of their own
    return converted


def _is_foreign_tensor(value, converted) -> bool:
    """An object with a shape and dtype of its own whose data numpy cannot read (``converted``
    is None or not of that dtype): another library's device tensor. A pandas Series of
    objects, whose own dtype is object, is not one."""
    if isinstance(value, np.generic) or not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return False
    try:
        return converted is None or bool(converted.dtype != value.dtype)
    except Exception:   # a dtype numpy cannot compare with
        return True


def _unowned_tensor(value, name: str) -> TypeError:
    kind = type(value)
    where = "" if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}."
    return TypeError(f"{name} is a {where}{kind.__qualname__}, which no registered engine owns "
                     f"(register its engine, or convert it to a numpy array)")


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
        # a float too large for a 16-bit type becomes inf
        return quietly(np.asarray, value, target, over="ignore")
    except OverflowError:
        raise ValueError(f"{name}={value!r} does not fit the other operand's dtype {other}") from None


INT32_MAX = 2 ** 31 - 1   # PyTorch's pooling takes kernel, stride, padding and dilation as C ints
INT64_MAX = 2 ** 63 - 1


def _index(value):
    """``value`` as a Python int if it is an integer (numpy integers and 0-d integer arrays
    too, as numpy takes them), else None. Bools are not integers here: ``True`` for a size
    is a mistake."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def integer(value, name: str, *, minimum=None, maximum=None) -> int:
    """An int ``minimum <= value <= maximum``; TypeError for bools, floats (NaN too) and strings."""
    number = _index(value)
    if number is None:
        raise TypeError(f"{name}={value!r}: expected an int")
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={number}: expected an int >= {minimum}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name}={number}: expected an int <= {maximum}")
    return number


def int_tuple(value, n: int, name: str, *, minimum=None, maximum=None) -> tuple:
    """An int or a sequence of ``n`` ints (one int is repeated), as a tuple of ``n`` ints in
    ``[minimum, maximum]``."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = tuple(value.tolist())
    if isinstance(value, (list, tuple, range)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise ValueError(f"{name}={tuple(value)!r}: expected an int or {n} ints")
        items = tuple(value)
    else:
        items = (value,) * n
    out = []
    for item in items:
        number = _index(item)
        if number is None:
            raise TypeError(f"{name}={value!r}: expected an int or {n} ints")
        if minimum is not None and number < minimum:
            raise ValueError(f"{name}={value!r}: every value must be >= {minimum}")
        if maximum is not None and number > maximum:
            raise ValueError(f"{name}={value!r}: every value must be <= {maximum}")
        out.append(number)
    return tuple(out)


def eps(value, name: str = "eps") -> float:
    """A finite real number >= 0 (a normalization's epsilon) as a float; TypeError for bools and
    non-numbers, ValueError for NaN, inf, negatives and ints past float's range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r}: expected a real number")
    try:
        finite = math.isfinite(value)
    except OverflowError:   # an int past float's range (10 ** 400)
        finite = False
    if not finite or value < 0:
        raise ValueError(f"{name}={value!r}: expected a finite real number >= 0")
    return float(value)


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


def real(value, name: str) -> float:
    """A real number (Python or numpy, not bool) as a Python float; TypeError naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r:.60}: expected a real number (an int or a float)")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name}={value}: too large for a float64") from None


def choice(value, name: str, options) -> str:
    if not isinstance(value, str) or value not in options:   # an array's == would not be a bool
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(repr(o) for o in options)}")
    return str(value)   # a plain str, also for np.str_: the decision cache keys on it


def same_or_f32(weight, x_dtype, name: str) -> None:
    """Weights match the input's dtype, or are f32 (mixed weights must be f32)."""
    if weight is None:
        return
    wd = np.dtype(weight.dtype)
    if wd != np.dtype(x_dtype) and wd != dt.float32:
        raise TypeError(f"{name} has dtype {wd} but the input is {np.dtype(x_dtype)}; "
                        f"weights must match the input's dtype or be float32")


def promoted(named_dtypes, op: str) -> np.dtype:
    """numpy's promotion (extended to bfloat16) of ``(argument name, dtype)`` pairs; a TypeError
    naming the arguments when it leaves polyeng's dtypes (int8 with uint8 gives int16)."""
    first = named_dtypes[0][1]
    if all(d == first for _, d in named_dtypes):   # the common case: nothing to promote
        return np.dtype(first)
    dtypes = [np.dtype(d) for _, d in named_dtypes]
    result = dt.result_type(*dtypes)
    if result in _SUPPORTED:
        return result
    seen, named = set(), []
    for name, dtype in named_dtypes:
        if np.dtype(dtype) not in seen:
            seen.add(np.dtype(dtype))
            named.append(f"{name} ({np.dtype(dtype)})")
    wider = next((d for d in (dt.int32, dt.int64) if all(np.can_cast(d2, d) for d2 in dtypes)), dt.float64)
    raise TypeError(f"{op}: {' and '.join(named)} promote to {result}, which is not among polyeng's dtypes "
                    f"({dt.supported_names()}); " + (
                        f"convert one of them first, e.g. {named_dtypes[-1][0]}.astype(np.{wider})"
                        if len(named_dtypes) == 2 else f"convert them to one dtype first, e.g. np.{wider}"))


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def like_input(args) -> Prepared:
    """The prepared facts of an op whose result has the shape and dtype of its input ``x``."""
    x = args["x"]
    return Prepared(x.shape, x.dtype)
