"""pad: grow or crop the last dims of an array (torch.nn.functional.pad), with a constant, the
reflection of the array's own elements, or its edge elements.

``pads`` is PyTorch's order, last dim first: ``(left, right)`` pads the last dim, ``(left,
right, top, bottom)`` the last two, and so on, at most one pair per dim. A negative pad crops.
Output element ``o`` of a padded dim of size ``n`` with pads ``(b, a)`` reads element
``p = o - b`` of the input, for ``0 <= o < n + b + a``; where ``p`` falls outside ``[0, n)``:

- ``constant``: ``value`` (cast to x's dtype; refused where it does not fit);
- ``reflect``: the mirror image about the edge element, ``-p`` or ``2 (n - 1) - p`` (each pad
  must be less than ``n``, so one reflection reaches every element);
- ``replicate``: the edge element itself.

Unlike PyTorch, whose reflect and replicate kernels take only some ranks and pad lengths
(and no bool), every mode here takes any rank, any number of padded dims and every dtype: pad
only moves elements, so it is exact.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from ml_dtypes import finfo as _finfo

from ..engine.mixed_precision import Category
from ..engine.call import Prepared, later
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size

MODES = ("constant", "reflect", "replicate")


def pad(x, pads, mode="constant", value=0.0):
    """``x`` padded (or cropped, where a pad is negative) on its last ``len(pads) // 2`` dims.

    ``pads``: ``(left, right)`` for the last dim, then ``(top, bottom)`` for the one before, as
    ``torch.nn.functional.pad``; ``mode``: ``"constant"`` (``value``, cast to x's dtype),
    ``"reflect"`` (mirrored about the edge, each pad less than its dim's size) or
    ``"replicate"`` (the edge element repeated); only constant padding takes a ``value``.
    """
    return run(SPEC, x=x, pads=pads, mode=mode, value=value)


def _validate(x, pads, mode, value):
    x = check.tensor(x, "x")
    mode = check.choice(mode, "mode", MODES)
    shape = tuple(int(s) for s in x.shape)
    pads = _pads(pads, len(shape))
    value = _value(value, mode, x.dtype)
    out = _check_sizes(shape, pads, mode)
    check_output_size(out, x.dtype, "pad", lambda: f"pads={pads} on x of shape {check.shape_str(shape)}")
    return {"x": x, "pads": pads, "mode": mode, "value": value}


def _pads(pads, ndim: int) -> tuple:
    if isinstance(pads, np.ndarray) and pads.ndim == 1:
        pads = tuple(pads.tolist()) if pads.dtype.kind in "iu" else tuple(pads)
    if not isinstance(pads, (list, tuple, range)):
        raise TypeError(f"pads={pads!r}: expected a tuple of ints, (left, right) for the last dim first")
    found = []
    for i, p in enumerate(pads):
        number = check._index(p)
        if number is None:
            raise TypeError(f"pads={tuple(pads)!r}: pads[{i}]={p!r} is not an int")
        found.append(number)
    pads = tuple(found)
    if len(pads) % 2:
        raise ValueError(f"pads={pads}: has {len(pads)} values; expected an even number, a (before, after) "
                         f"pair per padded dim, last dim first")
    if len(pads) > 2 * ndim:
        raise ValueError(f"pads={pads}: pads {len(pads) // 2} dims but x is {ndim}-D; expected at most "
                         f"{2 * ndim} values")
    return pads


def _value(value, mode: str, dtype) -> object:
    """``value`` as the Python number x's dtype holds exactly (bool, int or float); ValueError
    naming it where it does not fit, or where a mode other than constant is given one."""
    if value is None:
        value = 0
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biuf" and value.dtype != dt.bfloat16:
            raise TypeError(f"value={value!r}: expected a number (bool, int or float)")
        value = value.item() if value.dtype.kind in "biu" else float(value)
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"value={value!r}: expected a number (bool, int or float)")
    if mode != "constant":
        if value != 0:   # NaN too
            raise ValueError(f"value={value!r}: only mode='constant' takes a value; mode={mode!r} pads with "
                             f"x's own elements")
        value = 0
    dtype = np.dtype(dtype)
    if dtype == dt.bool_:
        if value not in (0, 1):   # NaN is neither
            raise ValueError(f"value={value!r} does not fit x's dtype bool (expected True, False, 0 or 1)")
        return bool(value)
    if dtype.kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value) or value != math.floor(value):
                raise ValueError(f"value={value!r} does not fit x's dtype {dtype.name} (expected a whole number)")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"value={value!r} does not fit x's dtype {dtype.name} ({info.min} to {info.max})")
        return int(value)
    try:
        number = float(value)
    except OverflowError:   # an int past float64's range
        number = math.inf
    largest = float(_finfo(dtype).max)
    if math.isfinite(number) and abs(number) > largest or not math.isfinite(number) and not isinstance(value, float):
        raise ValueError(f"value={value!r} does not fit x's dtype {dtype.name} (largest finite magnitude "
                         f"{largest:.6g})")
    return number


def _check_sizes(shape: tuple, pads: tuple, mode: str) -> tuple:
    """The output shape; ValueError naming pads where a dim cannot be padded so."""
    out = list(shape)
    for i in range(len(pads) // 2):
        d = len(shape) - 1 - i
        n, before, after = shape[d], pads[2 * i], pads[2 * i + 1]
        size = n + before + after
        where = f"dim {d} of x (shape {check.shape_str(shape)})"
        if mode == "constant":
            cropped = n + min(before, 0) + min(after, 0)
            if cropped < 0:
                raise ValueError(f"pads={pads}: ({before}, {after}) crops {n - cropped} elements from {where}, "
                                 f"which has {n}")
        else:
            if n == 0:
                raise ValueError(f"pads={pads}: mode={mode!r} pads {where}, which is empty; only mode='constant' "
                                 f"pads an empty dim")
            if mode == "reflect" and (before >= n or after >= n):
                raise ValueError(f"pads={pads}: ({before}, {after}) on {where}; mode='reflect' takes pads less "
                                 f"than the size of the dim they pad ({n})")
            if size < 1:
                raise ValueError(f"pads={pads}: ({before}, {after}) leaves {where} with {size} elements; "
                                 f"mode={mode!r} must leave at least one")
        out[d] = size
    return tuple(out)


def _prepare(args) -> Prepared:
    """The padded shape, ``before`` and ``after`` (each dim's pads, 0 for dims not padded) and
    ``fill`` (value in x's dtype, a 0-d array), plus ``plan``, the reduced geometry the NUMBA
    and OPENCL kernels walk (``movement_plan``)."""
    x, pads, value = args["x"], args["pads"], args["value"]
    shape = tuple(int(s) for s in x.shape)
    before, after = [0] * len(shape), [0] * len(shape)
    for i in range(len(pads) // 2):
        before[-1 - i], after[-1 - i] = pads[2 * i], pads[2 * i + 1]
    before, after = tuple(before), tuple(after)
    out = tuple(n + b + a for n, b, a in zip(shape, before, after))
    dtype = np.dtype(x.dtype)
    # 16-bit floats round through float32, as PyTorch converts the value
    fill = np.asarray(np.float32(value) if dtype in dt.SIXTEEN_BIT_FLOATS else value).astype(dtype)
    return Prepared(out, dtype, before=before, after=after, fill=fill,
                    plan=later(lambda: movement_plan(shape, before, after, dtype.itemsize)))


class Plan:
    """``pad`` reduced to the fewest dims, for kernels that move words: dims not padded are merged
    with their neighbours not padded; those after the last padded dim become ``inner``, a block
    of contiguous words that moves whole (elements are ``word`` unsigned ints, as wide as the
    block's size allows, up to 8 bytes).

    ``in_shape``, ``out_shape``, ``left`` (the before pads) and ``in_strides`` (in words) are
    int64 arrays over the reduced dims, the last of them padded; ``rows`` is the number of output
    rows (every reduced dim but the last); None of them where nothing is padded (``copy``).
    """

    __slots__ = ("copy", "word", "inner", "in_shape", "out_shape", "left", "in_strides", "rows")

    def __repr__(self) -> str:
        return "Plan(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


@functools.lru_cache(maxsize=256)
def movement_plan(shape, before, after, itemsize) -> Plan:
    dims = []   # [in size, before, out size, padded]
    for n, b, a in zip(shape, before, after):
        padded = bool(b or a)
        if not padded and n == 1:
            continue
        if not padded and dims and not dims[-1][3]:
            dims[-1][0] *= n
            dims[-1][2] *= n
            continue
        dims.append([n, b, n + b + a, padded])
    inner = 1
    if dims and not dims[-1][3]:
        inner = dims.pop()[0]
    plan = Plan()
    plan.copy = not dims
    block = inner * itemsize
    plan.word = next(w for w in (8, 4, 2, 1) if block % w == 0) if block else itemsize
    plan.inner = block // plan.word if block else 0
    plan.in_shape = np.array([d[0] for d in dims], np.int64)
    plan.out_shape = np.array([d[2] for d in dims], np.int64)
    plan.left = np.array([d[1] for d in dims], np.int64)
    strides = np.ones(len(dims), np.int64) * plan.inner
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1][0]
    plan.in_strides = strides
    plan.rows = math.prod(d[2] for d in dims[:-1])
    for array in (plan.in_shape, plan.out_shape, plan.left, plan.in_strides):
        array.flags.writeable = False   # shared by every call of the signature
    return plan


# thresholds (NUMBA/BASIC speed, f32, pads of 1 on H and W of NCHW arrays): constant padding is
# numpy's fill and one strided copy, at memory speed, which NUMBA only matches on two threads
# from about 2M elements (0.95x at 512K, 1.02x at 2M); reflect and replicate are gathers for
# numpy (one np.take per padded dim), which NUMBA's row copies beat from a few thousand
# elements (1.48x at 8K, 1.24x at 32K)
_CONSTANT_FROM, _GATHER_FROM = 1 << 21, 1 << 13


def _recommend_engine(call):
    threshold = _CONSTANT_FROM if call.args["mode"] == "constant" else _GATHER_FROM
    return _recommend.JIT if _recommend.elements(call) >= threshold else _recommend.REFERENCE


_recommend_engine.min_elements = _CONSTANT_FROM
_recommend_engine.__doc__ = (f"numba from {_CONSTANT_FROM} elements (constant) or {_GATHER_FROM} (reflect, "
                             f"replicate), basic below")

SPEC = OpSpec(
    name="pad",
    function=pad,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=_prepare,
    exact=True,
    recommend=_recommend_engine, preference=_recommend.PREFERENCE,
    chunking="pad",
    example=lambda t, rng: ((t(2, 3, 9, 11), (1, 2, 3, 0)), {"value": -1.5}),
    warmup=lambda t, rng: [((t(2, 3, 9, 11), (2, 1, 1, 2)), {"mode": "reflect"}),
                           ((t(2, 3, 9, 11), (3, 0, 0, 2)), {"mode": "replicate"})],
    zero_size=lambda z: ((z(0, 3, 4), (1, 1, -1, 2)), {}, (0, 4, 6)),
)
SPECS = [SPEC]
