"""Reductions over one or several axes: mean and sum (numpy's and PyTorch's), amax and amin
(``torch.amax``, ``torch.amin``; numpy's ``max`` and ``min``).

``axis`` is an int, a tuple of ints or None (every axis); ``keepdims=True`` keeps the reduced
axes as size 1. mean and sum of 16-bit inputs accumulate in f32, and every engine sums in blocks
combined pairwise, so the rounding error does not grow with the length of the reduced axes
(numpy's pairwise summation is the reference). The mean of zero elements is NaN and their sum 0,
as in numpy and PyTorch. ``sum`` of integers is int64 whatever their width, as ``torch.sum``
gives (numpy gives its platform integer, and uint64 for unsigned inputs, which polyeng lacks);
it wraps around past int64's range, as both do.

amax and amin pick values in the order of ``extrema.py`` (IEEE 754-2019's maximum and minimum):
a NaN among the reduced values gives NaN, as ``torch.amax`` does (the bits of the NaN are
amax's 0x7FFF... or amin's 0xFFFF..., on every engine, not those of an input NaN), and +0.0 is
above -0.0. Only picking values, they are exact. Over zero elements there is no value to pick:
a ValueError, as in numpy and PyTorch.
"""
import math

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from .extrema import order


def mean(x, axis=None, keepdims=False):
    """The arithmetic mean of ``x`` over ``axis`` (an int, a tuple of ints, or None for every
    axis); ``keepdims=True`` keeps the reduced axes as size 1."""
    return run(SPEC, x=x, axis=axis, keepdims=keepdims)


def sum(x, axis=None, keepdims=False):   # noqa: A001 - the op's public name, as numpy.sum and torch.sum
    """The sum of ``x`` over ``axis`` (an int, a tuple of ints, or None for every axis), pairwise;
    integers sum to int64. ``keepdims=True`` keeps the reduced axes as size 1."""
    return run(SUM, x=x, axis=axis, keepdims=keepdims)


def amax(x, axis=None, keepdims=False):
    """The largest value of ``x`` over ``axis`` (an int, a tuple of ints, or None for every axis);
    NaN if any is NaN. ``keepdims=True`` keeps the reduced axes as size 1."""
    return run(AMAX, x=x, axis=axis, keepdims=keepdims)


def amin(x, axis=None, keepdims=False):
    """The smallest value of ``x`` over ``axis`` (an int, a tuple of ints, or None for every axis);
    NaN if any is NaN. ``keepdims=True`` keeps the reduced axes as size 1."""
    return run(AMIN, x=x, axis=axis, keepdims=keepdims)


def _validate(x, axis, keepdims):
    x = check.tensor(x, "x", floats_only=True, op="mean")
    return {"x": x, "axis": axes(axis, len(x.shape)), "keepdims": check.flag(keepdims, "keepdims")}


def _numbers(x, op: str):
    """``x`` as an array of floats or integers: bool is refused, as by the arithmetic ops."""
    x = check.tensor(x, "x")
    if x.dtype == dt.bool_:
        hint = "count the True values with sum(x.astype(np.int32))" if op == "sum" else \
            f"{op} of bools is np.{'any' if op == 'amax' else 'all'}; or convert first, e.g. x.astype(np.int8)"
        raise TypeError(f"x has dtype bool; {op} expects a floating-point or integer array: {hint}")
    return x


def _number_validator(op: str):
    def validate(x, axis, keepdims):
        x = _numbers(x, op)
        reduced = axes(axis, len(x.shape), verb="reduce")
        if op != "sum" and any(x.shape[d] == 0 for d in reduced):
            empty = next(d for d in reduced if x.shape[d] == 0)
            raise ValueError(f"x has shape {check.shape_str(x.shape)}: {op} over axis {empty}, of size 0, has no "
                             f"value to pick (numpy and PyTorch raise too); reduce over axes of non-zero size")
        return {"x": x, "axis": reduced, "keepdims": check.flag(keepdims, "keepdims")}
    return validate


def axes(value, ndim: int, verb: str = "average") -> tuple:
    """``axis`` as a sorted tuple of distinct axes in [0, ndim); None is every axis."""
    if value is None:
        return tuple(range(ndim))
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"axis=(): give axis=None to {verb} over every axis, or name at least one "
                             "axis (numpy would reduce nothing, PyTorch everything)")
        normalised = [check.axis(a, ndim, f"axis[{i}]") for i, a in enumerate(value)]
        if len(set(normalised)) != len(normalised):
            raise ValueError(f"axis={tuple(value)!r} names an axis twice")
        found = tuple(sorted(normalised))
    else:
        found = (check.axis(value, ndim),)
    return found if ndim else ()   # a 0-d array's axis 0 or -1 (as numpy and PyTorch take it): the value itself


def _shape(args) -> tuple:
    x, reduced, keep = args["x"], args["axis"], args["keepdims"]
    return tuple(1 if d in reduced else n for d, n in enumerate(x.shape) if keep or d not in reduced)


def _count(args) -> int:
    return math.prod(args["x"].shape[d] for d in args["axis"])


def _prepare(args) -> Prepared:
    return Prepared(_shape(args), args["x"].dtype, count=_count(args))


def _prepare_sum(args) -> Prepared:
    dtype = args["x"].dtype
    return Prepared(_shape(args), dtype if dtype in dt.FLOAT_DTYPES else dt.int64, count=_count(args))


def _prepare_extreme(args) -> Prepared:
    dtype = args["x"].dtype
    return Prepared(_shape(args), dtype, count=_count(args), order=order(dtype))


SPEC = OpSpec(name="mean", function=mean, validate=_validate, category=Category.DENY, prepare=_prepare,
              # last axis of rows of 256, f32: NUMBA/BASIC 1.01x at 2**15 elements, 0.89x at 2**14
              recommend=_recommend.onednn_if(_recommend.always, _recommend.jit_from(1 << 15)),
              preference=_recommend.PREFERENCE,
              chunking="reduction",
              example=lambda t, rng: ((t(4, 5, 33),), {"axis": -1}),
              zero_size=lambda z: ((z(0, 3),), {"axis": 1}, (0,)))
# thresholds: where NUMBA overtook BASIC on f32, the last axis of rows of 256 (NUMBA/BASIC
# speed just above and below).
# 1.46x at 2**18, 1.00x at 2**17, 0.69x at 2**16: NUMBA's first parallel launch there costs more
# than it saves (1.09x at 2**15, still on one thread, as mean's rule takes it)
SUM = OpSpec(name="sum", function=sum, validate=_number_validator("sum"), category=Category.DENY,
             prepare=_prepare_sum, recommend=_recommend.jit_from(1 << 18), preference=_recommend.PREFERENCE,
             chunking="reduction",
             example=lambda t, rng: ((t(4, 5, 33),), {"axis": (0, 2)}),
             zero_size=lambda z: ((z(0, 3),), {"axis": 0}, (3,)))
# 1.05-1.09x from 1 to 2**8 elements, 1.5x at 2**14, 4x at 2**20 (amin the same): BASIC makes
# the keys in several numpy passes, NUMBA compares them in one vectorized pass; NUMBA throughout
AMAX = OpSpec(name="amax", function=amax, validate=_number_validator("amax"), category=Category.FOLLOW,
              exact=True, prepare=_prepare_extreme, recommend=_recommend.jit_from(0),
              preference=_recommend.PREFERENCE, chunking="reduction",
              example=lambda t, rng: ((t(4, 5, 33),), {"axis": -1}),
              zero_size=lambda z: ((z(0, 3),), {"axis": 1}, (0,)))
AMIN = OpSpec(name="amin", function=amin, validate=_number_validator("amin"), category=Category.FOLLOW,
              exact=True, prepare=_prepare_extreme, recommend=_recommend.jit_from(0),
              preference=_recommend.PREFERENCE, chunking="reduction",
              example=lambda t, rng: ((t(4, 5, 33),), {"axis": (0, 1), "keepdims": True}),
              zero_size=lambda z: ((z(2, 0),), {"axis": 0}, (0,)))
SPECS = [SPEC, SUM, AMAX, AMIN]
