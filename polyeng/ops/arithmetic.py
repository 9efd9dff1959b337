"""Elementwise arithmetic with numpy broadcasting: add, sub, mul, div (true division) and pow.

Operands are arrays or Python scalars. A Python scalar is *weak* (NEP 50): it takes the other
operand's dtype when its kind fits (an f16 array times 2.5 stays f16, a bf16 array plus 1 stays
bf16, an int8 array plus 1000 is an error as in numpy). Arrays promote as numpy promotes them,
extended to bfloat16 (bf16 with f32 gives f32, bf16 with f16 gives f32), within polyeng's dtypes.
``div`` of two integer operands gives float64, as numpy's true division does. Bool operands are
refused: numpy's bool arithmetic (``+`` is ``or``) is rarely what a model means.
"""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size


def add(a, b):
    """``a + b`` elementwise, with numpy broadcasting; integers wrap around as in numpy."""
    return run(ADD, a=a, b=b)


def sub(a, b):
    """``a - b`` elementwise, with numpy broadcasting; integers wrap around as in numpy."""
    return run(SUB, a=a, b=b)


def mul(a, b):
    """``a * b`` elementwise, with numpy broadcasting; integers wrap around as in numpy."""
    return run(MUL, a=a, b=b)


def div(a, b):
    """``a / b`` elementwise (true division), with numpy broadcasting. Two integer operands give
    float64, as in numpy; ``x / 0`` is inf or NaN, never an error."""
    return run(DIV, a=a, b=b)


def pow(x, exponent):   # noqa: A001 (the op's public name)
    """``x ** exponent`` elementwise for floating-point ``x``; ``exponent`` is a Python number or a
    floating-point array broadcastable with ``x``. ``pow(0, -1)`` is inf, a negative base with a
    non-integer exponent NaN, as in numpy and PyTorch."""
    return run(POW, x=x, exponent=exponent)


def _bool_refused(value, name: str, op: str) -> None:
    if isinstance(value, (bool, np.bool_)) or getattr(value, "dtype", None) == dt.bool_:
        shown = f"{name}={value!r}" if isinstance(value, (bool, np.bool_)) else f"{name} has dtype bool"
        raise TypeError(f"{shown}; {op} does not take bool operands (numpy's bool arithmetic is logical, "
                        f"not numeric): convert first, e.g. {name}.astype(np.int32)")


def operands(first, second, names: tuple, op: str) -> tuple:
    """Both operands as arrays: a Python scalar beside an array becomes a 0-d array of the weak
    dtype (see ``check.weak_scalar``); two Python scalars become numpy's default types."""
    n1, n2 = names
    if type(first) is not np.ndarray or type(second) is not np.ndarray:   # two arrays: the common case
        first, second = _scalars_resolved(first, second, names, op)
    first, second = check.tensor(first, n1), check.tensor(second, n2)
    _bool_refused(first, n1, op)
    _bool_refused(second, n2, op)
    return first, second


def _scalars_resolved(first, second, names: tuple, op: str) -> tuple:
    n1, n2 = names
    _bool_refused(first, n1, op)
    _bool_refused(second, n2, op)
    if isinstance(first, complex) or isinstance(second, complex):
        name, value = (n1, first) if isinstance(first, complex) else (n2, second)
        raise TypeError(f"{name}={value!r}: polyeng has no complex dtype")
    scalar1, scalar2 = check.is_python_scalar(first), check.is_python_scalar(second)
    for name, value in ((n1, first), (n2, second)):
        if type(value) is int and not INT64_MIN <= value <= check.INT64_MAX:
            raise ValueError(f"{name}={value}: does not fit int64, the widest integer dtype of polyeng")
    if scalar1 and scalar2 and op == "pow":   # numpy's 2 ** 3 is an int; pow is a float op
        return np.asarray(float(first)), np.asarray(float(second))
    if scalar1 and not scalar2:
        second = check.tensor(second, n2)
        first = _weak(first, second.dtype, n1, op)
    elif scalar2 and not scalar1:
        first = check.tensor(first, n1)
        second = _weak(second, first.dtype, n2, op)
    return first, second


INT64_MIN = -2 ** 63


def _weak(value, other, name: str, op: str):
    """The weak scalar, except an int beside an integer array in true division: numpy divides
    in float64 there, so ``int8_array / 1000`` is fine although 1000 does not fit int8."""
    if op == "div" and np.dtype(other).kind in "iu" and type(value) is int:
        return np.asarray(value, np.int64)
    return check.weak_scalar(value, other, name)


def broadcast(shape1, shape2, names: tuple) -> tuple:
    """numpy's broadcast of two shapes, in plain Python (np.broadcast_shapes costs 3 us, a
    third of a small call's dispatch)."""
    if shape1 == shape2:
        return tuple(shape1)
    n1, n2 = len(shape1), len(shape2)
    out = []
    for d1, d2 in zip((1,) * (n2 - n1) + tuple(shape1), (1,) * (n1 - n2) + tuple(shape2)):
        if d1 == d2 or d2 == 1:
            out.append(d1)
        elif d1 == 1:
            out.append(d2)
        else:
            raise ValueError(f"{names[0]} {check.shape_str(shape1)} and {names[1]} {check.shape_str(shape2)} "
                             f"do not broadcast together (numpy's rule: aligned from the right, each pair of "
                             f"dimensions equal or one of them 1)")
    return tuple(out)


def _binary_validator(op: str):
    def validate(a, b):
        a, b = operands(a, b, ("a", "b"), op)
        if not (op == "div" and a.dtype.kind in "iu" and b.dtype.kind in "iu"):   # int / int is f64
            check.promoted([("a", a.dtype), ("b", b.dtype)], op)
        broadcast(a.shape, b.shape, ("a", "b"))
        return {"a": a, "b": b}
    return validate


def _validate_pow(x, exponent):
    x, exponent = operands(x, exponent, ("x", "exponent"), "pow")
    for name, value in (("x", x), ("exponent", exponent)):
        if value.dtype not in dt.FLOAT_DTYPES:
            raise TypeError(f"{name} has dtype {value.dtype}; pow expects floating-point arrays (float16, "
                            f"bfloat16, float32 or float64) or a Python number; convert first, e.g. "
                            f"{name}.astype(np.float32)")
    check.promoted([("x", x.dtype), ("exponent", exponent.dtype)], "pow")
    broadcast(x.shape, exponent.shape, ("x", "exponent"))
    return {"x": x, "exponent": exponent}


def result_dtype(op: str, first, second) -> np.dtype:
    """The result's dtype: numpy's promotion extended to bfloat16; float64 for int / int."""
    if op == "div" and first.kind in "iu" and second.kind in "iu":
        return dt.float64
    return np.dtype(first) if first == second else dt.result_type(first, second)


def _spec(name, function, validate, names, min_elements, category=Category.FOLLOW, **catalogue):
    def prepare(args) -> Prepared:
        first, second = args[names[0]], args[names[1]]
        dtype = result_dtype(name, first.dtype, second.dtype)
        shape = broadcast(first.shape, second.shape, names)
        # broadcasting (n, 1) against (1, m) can ask for far more than the operands hold
        check_output_size(shape, dtype, name, f"{names[0]} {check.shape_str(first.shape)} and "
                                              f"{names[1]} {check.shape_str(second.shape)}")
        return Prepared(shape, dtype)
    return OpSpec(name=name, function=function, validate=validate, prepare=prepare, category=category,
                  # not ONEDNN: its binary primitive ran at 0.3-0.7x numpy's add and mul from 2**10 to
                  # 2**19 elements (direct calls, 2 cores), broadcasts included
                  recommend=_recommend.jit_from(min_elements),
                  preference=_recommend.PREFERENCE,
                  chunking="elementwise", **catalogue)


# NUMBA/BASIC on f32 of equal shapes: 1.0x at 2**18 elements, 1.05-1.17x at 2**19 (its parallel launch)
ADD = _spec("add", add, _binary_validator("add"), ("a", "b"), 1 << 19, ufuncs=("add",),
            example=lambda t, rng: ((t(2, 3, 8, 8), t(2, 3, 8, 8)), {}),
            zero_size=lambda z: ((z(0, 3), z(1, 3)), {}, (0, 3)))
SUB = _spec("sub", sub, _binary_validator("sub"), ("a", "b"), 1 << 19, ufuncs=("subtract",),
            example=lambda t, rng: ((t(2, 3, 8, 8), t(1, 3, 1, 1)), {}),
            zero_size=lambda z: ((z(2, 0), 1.5), {}, (2, 0)))
MUL = _spec("mul", mul, _binary_validator("mul"), ("a", "b"), 1 << 19, ufuncs=("multiply",),
            example=lambda t, rng: ((t(2, 3, 8, 8), t(1, 3, 1, 1)), {}),
            zero_size=lambda z: ((z(0, 1), z(4)), {}, (0, 4)))
DIV = _spec("div", div, _binary_validator("div"), ("a", "b"), 1 << 19, ufuncs=("divide", "true_divide"),
            example=lambda t, rng: ((t(4, 33), 8.0), {}),
            zero_size=lambda z: ((z(3, 0), z(1)), {}, (3, 0)))
# NUMBA/BASIC 0.75x at every size from 2**17 to 2**22 elements (numpy's powf is SIMD): BASIC throughout
POW = _spec("pow", pow, _validate_pow, ("x", "exponent"), 1 << 24, Category.DENY, ufuncs=("power",),
            example=lambda t, rng: ((abs(t(4, 33)), 1.5), {}),
            zero_size=lambda z: ((z(0, 2), 2.0), {}, (0, 2)))
SPECS = [ADD, SUB, MUL, DIV, POW]
