"""Sign changes: abs and neg elementwise (torch.abs, torch.neg), for floating-point and integer arrays.

Both only touch the sign, so they are exact in every dtype: a float's sign bit is cleared (abs)
or flipped (neg), NaN stays NaN, ``abs(-0.0)`` is +0.0 and ``neg(0.0)`` -0.0. Integers wrap as
numpy's and PyTorch's do: ``abs`` and ``neg`` of the most negative value give that value back,
and ``neg`` of a uint8 ``v`` is ``256 - v``.
"""
from ..engine.mixed_precision import Category
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend


def abs(x):   # noqa: A001 - the op's public name, as torch.abs and numpy.abs
    """``|x|`` elementwise, for floating-point and integer arrays; NaN stays NaN, -0.0 becomes +0.0."""
    return run(ABS, x=x)


def neg(x):
    """``-x`` elementwise, for floating-point and integer arrays; integers wrap (uint8: ``256 - x``)."""
    return run(NEG, x=x)


def _validator(op: str):
    def validate(x):
        x = check.tensor(x, "x")
        if x.dtype == dt.bool_:
            raise TypeError(f"x has dtype bool; {op} expects a floating-point or integer array")
        return {"x": x}
    return validate


def _spec(name, function, min_elements, **catalogue):
    return OpSpec(name=name, function=function, validate=_validator(name), category=Category.FOLLOW, exact=True,
                  chunking="elementwise", prepare=check.like_input,
                  recommend=_recommend.jit_from(min_elements), preference=_recommend.PREFERENCE, **catalogue)


# thresholds: where NUMBA overtook BASIC on f32 (NUMBA/BASIC speed just above and below)
# 1.19x at 2**19, 0.95x at 2**18 (numpy's SIMD loop runs at memory speed on one thread: NUMBA
# wins only once its threads share the work; 0.57x at 2**16, where it runs on one thread)
ABS = _spec("abs", abs, 1 << 19,
            example=lambda t, rng: ((t(6, 31),), {}),
            zero_size=lambda z: ((z(0, 3),), {}, (0, 3)))
# 1.23x, 1.00x
NEG = _spec("neg", neg, 1 << 19,
            example=lambda t, rng: ((t(6, 31),), {}),
            zero_size=lambda z: ((z(2, 0),), {}, (2, 0)))
SPECS = [ABS, NEG]
