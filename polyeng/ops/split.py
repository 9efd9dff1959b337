"""split: cut an array into pieces along one axis (torch.split), returned as a tuple.

``split_size_or_sections`` is an int, the size of every piece but the last, which holds the rest
(an axis of length 0 gives one empty piece; a size of 0 is allowed only there, as in PyTorch), or
a list or tuple of the pieces' sizes, each >= 0, summing to the axis length. Every piece is a new
C-contiguous array (or device tensor), never a view of ``x``: an engine's result is its own.
"""
from __future__ import annotations

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend

_NAME = "split_size_or_sections"


def split(x, split_size_or_sections, axis=0):
    """The pieces of ``x`` along ``axis`` as a tuple of arrays: of ``split_size_or_sections``
    elements each (an int; the last piece may be shorter) or of the sizes it lists."""
    return run(SPEC, x=x, split_size_or_sections=split_size_or_sections, axis=axis)


def _sizes(value, length: int, axis: int) -> tuple:
    """The pieces' sizes along an axis of ``length``, from an int or a sequence of ints."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        sizes = tuple(check.integer(s, f"{_NAME}[{i}]", minimum=0) for i, s in enumerate(value))
        if not sizes:
            raise ValueError(f"{_NAME}=[]: expected at least one size (split returns at least one piece)")
        if sum(sizes) != length:
            raise ValueError(f"{_NAME}={list(sizes)} sums to {sum(sizes)}, but axis {axis} of x has length "
                             f"{length}; the sizes must sum to it")
        return sizes
    try:
        size = check.integer(value, _NAME, minimum=0)
    except TypeError:
        raise TypeError(f"{_NAME}={value!r}: expected an int (the size of each piece) or a list or tuple "
                        f"of ints (the sizes of the pieces)") from None
    if length == 0:
        return (0,)   # one empty piece, as torch.split gives
    if size == 0:
        raise ValueError(f"{_NAME}=0: a piece size must be >= 1 for axis {axis} of length {length} "
                         f"(0 only splits an empty axis)")
    full, rest = divmod(length, size)
    return (size,) * full + ((rest,) if rest else ())


def _validate(x, split_size_or_sections, axis):
    x = check.tensor(x, "x")
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError("x is 0-D; split expects an array with at least one dimension")
    axis = check.axis(axis, ndim)
    return {"x": x, "split_size_or_sections": _sizes(split_size_or_sections, int(x.shape[axis]), axis),
            "axis": axis}


def _prepare(args) -> Prepared:
    """The first piece's shape (the result's, for the dispatcher) and ``shapes``, every piece's."""
    x, sizes, axis = args["x"], args["split_size_or_sections"], args["axis"]
    shapes = tuple(tuple(x.shape[:axis]) + (size,) + tuple(x.shape[axis + 1:]) for size in sizes)
    return Prepared(shapes[0], x.dtype, shapes=shapes)


SPEC = OpSpec(
    name="split",
    function=split,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=_prepare,
    exact=True,
    # NUMBA/BASIC on f32 split in 4 along either axis of (n / 1024, 1024): 0.5x up to 2**17
    # elements, 0.8-0.94x at 2**22, 1.1-1.15x at 2**23, 0.96-1.05x at 2**24: both copy at memory
    # speed, so NUMBA's threads barely help; BASIC up to 2**24, as pow
    recommend=_recommend.jit_from(1 << 24), preference=_recommend.PREFERENCE,
    chunking="split",
    example=lambda t, rng: ((t(3, 10, 7), 4), {"axis": 1}),
    zero_size=lambda z: ((z(0, 5), [2, 0, 3]), {"axis": 1}, [(0, 2), (0, 0), (0, 3)]),
)
SPECS = [SPEC]
