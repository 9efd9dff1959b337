"""maximum and minimum elementwise (torch.maximum, torch.minimum), and the order every engine
compares values in, which amax and amin (``reduction.py``) share.

Operands broadcast, promote and take Python scalars exactly as ``add`` does (``arithmetic.py``):
numpy's promotion extended to bfloat16, weak Python scalars (NEP 50), bool refused. Integers
compare as integers. Floats follow IEEE 754-2019's ``maximum`` and ``minimum``: a NaN operand
gives that NaN (``a``'s when both are: numpy's rule, payload and sign kept), and -0.0 is below
+0.0, so ``maximum(-0.0, 0.0)`` is +0.0 whichever side each zero is on (numpy returns either
zero, depending on the operand order and the loop it takes). The result is always one of the
operands' values, so both ops are exact: bit for bit the same on every engine, in any fp math mode.
Being exact where numpy is not, they are not numpy's ``maximum`` and ``minimum`` ufuncs, which a
graph trace therefore does not record as them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size
from .arithmetic import broadcast, operands, result_dtype


def maximum(a, b):
    """The larger of ``a`` and ``b`` elementwise, with numpy broadcasting and promotion; NaN
    propagates and +0.0 is larger than -0.0."""
    return run(MAXIMUM, a=a, b=b)


def minimum(a, b):
    """The smaller of ``a`` and ``b`` elementwise, with numpy broadcasting and promotion; NaN
    propagates and -0.0 is smaller than +0.0."""
    return run(MINIMUM, a=a, b=b)


@dataclass(frozen=True)
class Order:
    """How an engine compares elements of one dtype as integers of their width (OPENCL's kernels
    and the reductions do; f64 then needs no floating-point unit). A float's bits read as a signed
    integer order the non-negative floats; flipping the ``magnitude`` bits of the negative ones
    orders them all, -0.0 just below +0.0. A magnitude above ``infinity`` is NaN. Integers are
    their own order: ``magnitude`` 0 and no NaN."""
    word: np.dtype      # the integer dtype elements are read as
    magnitude: int      # every bit but the sign (floats), 0 (integers)
    infinity: int       # the bits of +inf (floats); the word's largest value (integers: no NaN)

    @property
    def bits(self) -> int:
        return 8 * self.word.itemsize


_INFINITY = {dt.float16: 0x7C00, dt.bfloat16: 0x7F80, dt.float32: 0x7F800000, dt.float64: 0x7FF0000000000000}
_SIGNED = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}


def order(dtype) -> Order:
    """The ``Order`` of a float or integer dtype."""
    dtype = np.dtype(dtype)
    if dtype in _INFINITY:
        word = _SIGNED[dtype.itemsize]
        return Order(word, int(np.iinfo(word).max), _INFINITY[dtype])
    return Order(dtype, 0, int(np.iinfo(dtype).max))


def _validator(op: str):
    def validate(a, b):
        a, b = operands(a, b, ("a", "b"), op)
        check.promoted([("a", a.dtype), ("b", b.dtype)], op)
        broadcast(a.shape, b.shape, ("a", "b"))
        return {"a": a, "b": b}
    return validate


def _preparer(op: str):
    def prepare(args) -> Prepared:
        """The broadcast shape, the promoted dtype and its ``order``."""
        a, b = args["a"], args["b"]
        dtype = result_dtype(op, a.dtype, b.dtype)
        shape = broadcast(a.shape, b.shape, ("a", "b"))
        # broadcasting (n, 1) against (1, m) can ask for far more than the operands hold
        check_output_size(shape, dtype, op, lambda: f"a {check.shape_str(a.shape)} and b {check.shape_str(b.shape)}")
        return Prepared(shape, dtype, order=order(dtype))
    return prepare


def _spec(name, function, min_elements, **catalogue):
    return OpSpec(name=name, function=function, validate=_validator(name), prepare=_preparer(name),
                  category=Category.FOLLOW, exact=True, chunking="elementwise",
                  recommend=_recommend.jit_from(min_elements), preference=_recommend.PREFERENCE, **catalogue)


# thresholds: where NUMBA overtook BASIC on f32 operands of equal shapes, the elements of both
# counted (NUMBA/BASIC speed just above and below): 1.26x at 2**19, 1.00x at 2**18 (BASIC is
# numpy's SIMD maximum plus a scan for pairs of zeros; NUMBA wins once its threads share the work)
MAXIMUM = _spec("maximum", maximum, 1 << 19,
                example=lambda t, rng: ((t(2, 3, 8, 8), t(1, 3, 1, 8)), {}),
                zero_size=lambda z: ((z(0, 3), z(1, 3)), {}, (0, 3)))
# 1.29x, 1.02x
MINIMUM = _spec("minimum", minimum, 1 << 19,
                example=lambda t, rng: ((t(4, 33), 0.25), {}),
                zero_size=lambda z: ((z(2, 0), 1.5), {}, (2, 0)))
SPECS = [MAXIMUM, MINIMUM]
