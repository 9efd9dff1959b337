"""clip (torch.clamp): every element of a floating-point ``x`` held between ``min`` and ``max``.

Each bound is None, a number, or a floating-point array that broadcasts to ``x``'s shape (one
way: the result has ``x``'s shape and dtype, so a bound may not add dimensions or grow one).
A number is rounded to ``x``'s dtype (to nearest even, overflowing to ±inf), and so is an array
bound of another float dtype. PyTorch's rules: both bounds None is a ValueError; NaN in ``x``
stays NaN; a NaN bound makes the result NaN; where ``min > max`` the result is ``max``.

clip only picks values (``x``, the lower bound or the upper one), so it is exact in every dtype
and no fp math mode changes it. Where ``x`` equals a bound, ``x`` is kept: only the sign of a
zero can tell, and ``clip(-0.0, min=0.0)`` is -0.0 as ``torch.clamp`` gives for a number bound
(PyTorch's tensor bounds keep the bound's zero instead).
"""
import numbers

import numpy as np

from ..engine.mixed_precision import Category
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend


def clip(x, min=None, max=None):   # noqa: A002 - torch.clamp's argument names
    """``x`` held between ``min`` and ``max`` elementwise (torch.clamp): each bound None, a number
    or a float array broadcastable to ``x``; the result has ``x``'s shape and dtype."""
    return run(CLIP, x=x, min=min, max=max)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _number(value, name: str, dtype) -> np.ndarray:
    """A real number as a 0-d array of ``dtype``, rounded to nearest even (beyond its range: ±inf)."""
    try:
        number = float(value)
    except OverflowError:   # an int past float64's range
        number = float("inf") if value > 0 else float("-inf")
    return dt.round_to(np.asarray(number, np.float64), dtype)


def _bound(value, name: str, x):
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"{name}={value!r}: clip's bounds are None, a real number or a floating-point array")
    if _is_number(value):
        return _number(value, name, x.dtype)
    bound = check.tensor(value, name, like=x.dtype)   # a list of numbers takes x's dtype
    if bound.dtype not in dt.FLOAT_DTYPES:
        raise TypeError(f"{name} has dtype {np.dtype(bound.dtype)}; clip expects a number or a floating-point "
                        f"array (float16, bfloat16, float32 or float64) as a bound; convert it first, e.g. "
                        f"{name}.astype(np.float32)")
    have, want = tuple(bound.shape), tuple(x.shape)
    if len(have) > len(want) or any(b != o and b != 1 for b, o in zip(reversed(have), reversed(want))):
        raise ValueError(f"{name} has shape {check.shape_str(have)}, which does not broadcast to x's shape "
                         f"{check.shape_str(want)}: clip's result has x's shape, so a bound may not add "
                         f"dimensions or grow one (aligned from the right, each of its dimensions equal to "
                         f"x's or 1)")
    return bound


def _validate(x, min, max):   # noqa: A002
    x = check.tensor(x, "x", floats_only=True, op="clip")
    if min is None and max is None:
        raise ValueError("clip: min and max are both None; give at least one bound (torch.clamp's rule)")
    return {"x": x, "min": _bound(min, "min", x), "max": _bound(max, "max", x)}


CLIP = OpSpec(
    name="clip", function=clip, validate=_validate, prepare=check.like_input, category=Category.FOLLOW, exact=True,
    chunking="elementwise",
    # NUMBA/BASIC on f32: number bounds 1.55x at 2**12 elements, 1.18x at 2**11, 0.91x at 2**10 (BASIC
    # makes two np.where passes); array bounds 1.03x at 2**12, 0.82x at 2**11
    recommend=_recommend.jit_from(1 << 12), preference=_recommend.PREFERENCE,
    example=lambda t, rng: ((t(6, 31),), {"min": -0.5, "max": 0.75}),
    warmup=lambda t, rng: [((t(6, 31),), {"min": t(6, 1), "max": t(31)}), ((t(6, 31),), {"min": t(31)})],
    zero_size=lambda z: ((z(0, 3),), {"min": z(1, 3), "max": 1.0}, (0, 3)),
)
SPECS = [CLIP]
