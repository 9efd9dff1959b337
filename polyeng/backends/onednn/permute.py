"""permute_contiguous on oneDNN's reorder: the source is the input read through permuted dims
and strides (a strided view, no copy), the destination plain. Items are handed over as a
type oneDNN copies bit for bit: f32 for 4-byte items, u8 for 1-byte ones, u8 with a last dim
of the item size (kept in place) for the others. Inputs whose strides oneDNN cannot describe
(negative, interleaved), 2- and 8-byte items not adjacent along the last axis, 0-d and empty
arrays are copied by numpy."""
from __future__ import annotations

import numpy as np

from . import _constants as C
from ._primitive import cached, desc, reorder
from ._threads import threads_for
from .concat import describable


def _items(a: np.ndarray):
    """``a`` viewed in a oneDNN type, and whether a last dim of bytes was added (None: no view)."""
    size = a.dtype.itemsize
    if size == 4:
        return a.view(np.float32), False
    if size == 1:
        return a.view(np.uint8), False
    if a.ndim + 1 > C.MAX_NDIMS or a.strides[-1] != size:
        return None, False
    return a.view(np.uint8).reshape(a.shape + (size,)), True


def permute_contiguous(p, x, dims):
    out = np.empty(p.shape, p.dtype)
    if out.size == 0 or x.ndim == 0 or not describable(x):
        out[...] = np.transpose(x, dims)
        return out
    src, extra = _items(x)
    if src is None:
        out[...] = np.transpose(x, dims)
        return out
    order = tuple(dims) + ((x.ndim,) if extra else ())
    src = np.transpose(src, order)
    dst, _ = _items(out)
    strides = tuple(s // src.itemsize for s in src.strides)
    key = ("permute", src.shape, strides, src.dtype.str)
    step = cached(key, lambda: reorder(desc(src.shape, src.dtype, strides), desc(dst.shape, dst.dtype)))
    step.run({C.ARG_FROM: src, C.ARG_TO: dst}, threads_for(out.size))
    return out
