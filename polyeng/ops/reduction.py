"""mean over one or several axes (numpy's ``mean``; ``torch.mean``).

16-bit inputs accumulate in f32 and every engine sums in blocks combined pairwise, so the
rounding error does not grow with the length of the reduced axes (numpy's pairwise
summation is the reference). The mean of zero elements is NaN, as in numpy and PyTorch.
"""
import math

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def mean(x, axis=None, keepdims=False):
    """The arithmetic mean of ``x`` over ``axis`` (an int, a tuple of ints, or None for every
    axis); ``keepdims=True`` keeps the reduced axes as size 1."""
    return run(SPEC, x=x, axis=axis, keepdims=keepdims)


def _validate(x, axis, keepdims):
    x = check.tensor(x, "x", floats_only=True, op="mean")
    return {"x": x, "axis": axes(axis, len(x.shape)), "keepdims": check.flag(keepdims, "keepdims")}


def axes(value, ndim: int) -> tuple:
    """``axis`` as a sorted tuple of distinct axes in [0, ndim); None is every axis."""
    if value is None:
        return tuple(range(ndim))
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("axis=(): give axis=None to average over every axis, or name at least one "
                             "axis (numpy would reduce nothing, PyTorch everything)")
        normalised = [check.axis(a, ndim, f"axis[{i}]") for i, a in enumerate(value)]
        if len(set(normalised)) != len(normalised):
            raise ValueError(f"axis={tuple(value)!r} names an axis twice")
        found = tuple(sorted(normalised))
    else:
        found = (check.axis(value, ndim),)
    return found if ndim else ()   # a 0-d array's axis 0 or -1 (as numpy and PyTorch take it): the value itself


def _prepare(args) -> Prepared:
    x, reduced, keep = args["x"], args["axis"], args["keepdims"]
    shape = tuple(1 if d in reduced else n for d, n in enumerate(x.shape) if keep or d not in reduced)
    return Prepared(shape, x.dtype, count=math.prod(x.shape[d] for d in reduced))


SPEC = OpSpec(name="mean", function=mean, validate=_validate, category=Category.DENY, prepare=_prepare,
              # last axis of rows of 256, f32: NUMBA/BASIC 1.01x at 2**15 elements, 0.89x at 2**14
              recommend=_recommend.jit_from(1 << 15), preference=_recommend.PREFERENCE,
              chunking="mean",
              example=lambda t, rng: ((t(4, 5, 33),), {"axis": -1}),
              zero_size=lambda z: ((z(0, 3),), {"axis": 1}, (0,)))
SPECS = [SPEC]
