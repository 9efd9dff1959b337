"""Comparisons: equal, not_equal, greater, greater_equal, less, less_equal, elementwise with numpy
broadcasting, giving bool arrays (torch.eq, torch.ne, torch.gt, torch.ge, torch.lt, torch.le).

Operands promote as the arithmetic ops' do (``arithmetic.py``): arrays by numpy's rule extended
to bfloat16, a Python scalar weakly (NEP 50: ``f16_array < 2.5`` compares in float16), and both
are compared in the promoted dtype, as numpy's comparison loops do (int64 with f32 compares in
f64). bfloat16 compares as its values. A promotion that leaves polyeng's dtypes (int8 with uint8
gives int16) is a TypeError naming both, as for add.

- Floats compare as IEEE says: NaN is unequal to everything, itself included (``not_equal`` is
  True, the other five False), and -0.0 equals 0.0.
- Bool operands are taken by all six, ordered False < True as numpy and PyTorch order them;
  beside a number a bool promotes to its type (True is 1).
- A Python int beside an integer array whose dtype cannot hold it is compared exactly, as numpy 2
  does (``int8_array < 1000`` is all True), where add would refuse it; an int beyond int64 is a
  ValueError, as for add.

AMP category DENY, with ``exact``: the graph pass gives a DENY node its float inputs back in their
original dtype, and an exact op is never converted per call, so no mixed precision changes which
elements compare equal (two f32 values 1 + 2**-10 apart are one bf16 value, and an f32 beyond
f16's range would compare as inf). The result is bool, so nothing is rounded on the way out.
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
from .arithmetic import INT64_MIN, broadcast


def equal(a, b):
    """``a == b`` elementwise, with numpy broadcasting; NaN equals nothing, -0.0 equals 0.0."""
    return run(EQUAL, a=a, b=b)


def not_equal(a, b):
    """``a != b`` elementwise, with numpy broadcasting; True wherever either side is NaN."""
    return run(NOT_EQUAL, a=a, b=b)


def greater(a, b):
    """``a > b`` elementwise, with numpy broadcasting; False wherever either side is NaN."""
    return run(GREATER, a=a, b=b)


def greater_equal(a, b):
    """``a >= b`` elementwise, with numpy broadcasting; False wherever either side is NaN."""
    return run(GREATER_EQUAL, a=a, b=b)


def less(a, b):
    """``a < b`` elementwise, with numpy broadcasting; False wherever either side is NaN."""
    return run(LESS, a=a, b=b)


def less_equal(a, b):
    """``a <= b`` elementwise, with numpy broadcasting; False wherever either side is NaN."""
    return run(LESS_EQUAL, a=a, b=b)


def _scalar(value, other, name: str):
    """A Python scalar beside an array of dtype ``other``: weak (``check.weak_scalar``), except an
    int the integer dtype cannot hold, which compares exactly as int64 (numpy 2's rule)."""
    if type(value) is int and other.kind in "iu" and not np.iinfo(other).min <= value <= np.iinfo(other).max:
        return np.asarray(value, np.int64)
    return check.weak_scalar(value, other, name)


def operands(a, b, op: str) -> tuple:
    """Both operands as arrays of polyeng's dtypes; Python scalars resolved against the other side."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:   # two arrays: the common case
        for name, value in (("a", a), ("b", b)):
            if isinstance(value, complex):
                raise TypeError(f"{name}={value!r}: polyeng has no complex dtype")
            if type(value) is int and not INT64_MIN <= value <= check.INT64_MAX:
                raise ValueError(f"{name}={value}: does not fit int64, the widest integer dtype of polyeng")
        scalar_a, scalar_b = check.is_python_scalar(a), check.is_python_scalar(b)
        if scalar_a and not scalar_b:
            b = check.tensor(b, "b")
            a = _scalar(a, b.dtype, "a")
        elif scalar_b and not scalar_a:
            a = check.tensor(a, "a")
            b = _scalar(b, a.dtype, "b")
    a, b = check.tensor(a, "a"), check.tensor(b, "b")
    check.promoted([("a", a.dtype), ("b", b.dtype)], op)
    broadcast(a.shape, b.shape, ("a", "b"))
    return a, b


def _validator(op: str):
    def validate(a, b):
        a, b = operands(a, b, op)
        return {"a": a, "b": b}
    return validate


def prepared_for(op: str):
    """``prepare`` of a binary op on ``a`` and ``b`` with a bool result: the broadcast shape, and
    ``common``, the dtype both operands are compared in."""
    def prepare(args) -> Prepared:
        a, b = args["a"], args["b"]
        shape = broadcast(a.shape, b.shape, ("a", "b"))
        # broadcasting (n, 1) against (1, m) can ask for far more than the operands hold
        check_output_size(shape, dt.bool_, op, f"a {check.shape_str(a.shape)} and b {check.shape_str(b.shape)}")
        common = np.dtype(a.dtype) if a.dtype == b.dtype else dt.result_type(a.dtype, b.dtype)
        return Prepared(shape, dt.bool_, common=common)
    return prepare


def _spec(name, function, min_elements, **catalogue):
    return OpSpec(name=name, function=function, validate=_validator(name), prepare=prepared_for(name),
                  category=Category.DENY, exact=True, chunking="elementwise", ufuncs=(name,),
                  recommend=_recommend.jit_from(min_elements), preference=_recommend.PREFERENCE, **catalogue)


# threshold: where NUMBA overtook BASIC, on f32 of equal shapes, elements of both operands, in the
# quietest runs of the day (2 cores, load 0.8-1.2): equal 0.80-0.95x at 2**21, 0.86-1.45x at 2**22,
# 0.93-1.07x at 2**23; less 0.76-1.09x, 0.78-1.54x, 0.94-1.25x. numpy's comparison loop runs at
# memory speed on one thread, and waking NUMBA's pool costs more than the loop below 2**21
# (equal 0.45-0.59x at 2**19-2**20); add ran 0.73-0.85x from 2**21 to 2**23 in the same runs
EQUAL = _spec("equal", equal, 1 << 22,
              example=lambda t, rng: ((t(2, 3, 8, 8), t(1, 3, 1, 1)), {}),
              zero_size=lambda z: ((z(0, 3), z(1, 3)), {}, (0, 3)))
NOT_EQUAL = _spec("not_equal", not_equal, 1 << 22,
                  example=lambda t, rng: ((t(4, 33), t(33)), {}),
                  zero_size=lambda z: ((z(2, 0), 1.5), {}, (2, 0)))
GREATER = _spec("greater", greater, 1 << 22,
                example=lambda t, rng: ((t(4, 33), 0.25), {}),
                zero_size=lambda z: ((z(0, 1), z(4)), {}, (0, 4)))
GREATER_EQUAL = _spec("greater_equal", greater_equal, 1 << 22,
                      example=lambda t, rng: ((t(2, 3, 8, 8), t(2, 3, 8, 8)), {}),
                      zero_size=lambda z: ((z(3, 0), z(1)), {}, (3, 0)))
LESS = _spec("less", less, 1 << 22,
             example=lambda t, rng: ((t(5, 1, 7), t(1, 6, 7)), {}),
             zero_size=lambda z: ((0.0, z(0, 2)), {}, (0, 2)))
LESS_EQUAL = _spec("less_equal", less_equal, 1 << 22,
                   example=lambda t, rng: ((-0.5, t(6, 31)), {}),
                   zero_size=lambda z: ((z(0,), z(0,)), {}, (0,)))
SPECS = [EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL]
