"""concat on oneDNN's concat primitive: a copy, so every dtype is handed over as bytes a oneDNN
type keeps bit for bit (f32 for 4-byte items, u8 with a last dim of the item size for the
others). Inputs of different dtypes (numpy's promotion) are turned down; zero-size inputs add
nothing and are left out."""
from __future__ import annotations

import ctypes

import numpy as np

from .._loader import limit
from . import _constants as C
from ._primitive import Primitive, cached, desc, elements_strides
from ._threads import threads_for


def describable(a: np.ndarray) -> bool:
    """Whether oneDNN takes ``a``'s strides: none negative, and in increasing order each dim's
    stride at least the span of the dims below it (oneDNN's check; numpy's ``x[:, ::2]`` of a
    3-D array can interleave dims it would reject)."""
    dims = sorted((s, n) for s, n in zip(a.strides, a.shape) if n > 1)
    if dims and dims[0][0] < 0:
        return False
    return all(high >= low * n for (low, n), (high, _) in zip(dims, dims[1:]))


def as_bytes(a: np.ndarray) -> np.ndarray:
    """A view of ``a`` in a type oneDNN copies exactly, in a layout oneDNN describes (a copy otherwise)."""
    if not describable(a):
        a = np.ascontiguousarray(a)
    if a.dtype.itemsize == 4:
        return a.view(np.float32)
    if a.dtype.itemsize == 1:
        return a.view(np.uint8)
    a = a if a.ndim and a.strides[-1] == a.itemsize else np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(a.shape + (a.itemsize,))


def _rule(call):
    tensors, p = call.args["tensors"], call.prepared
    kinds = {np.dtype(t.dtype) for t in tensors}
    if len(kinds) > 1:
        return (f"oneDNN's concat takes inputs of one type; these ({', '.join(sorted(map(str, kinds)))}) "
                f"promote to {p.dtype}")
    if len(p.shape) + (np.dtype(p.dtype).itemsize not in (1, 4)) > C.MAX_NDIMS:
        return f"oneDNN's concat takes at most {C.MAX_NDIMS} dims"
    return None


def _plan(parts, axis, out):
    key = ("concat", axis, out.shape, out.dtype.str, tuple((a.shape, elements_strides(a)) for a in parts))

    def build():
        srcs = [desc(a.shape, a.dtype, elements_strides(a)) for a in parts]
        dst = desc(out.shape, out.dtype)
        handles = (ctypes.c_void_p * len(srcs))(*[s.handle for s in srcs])
        return Primitive("dnnl_concat_primitive_desc_create", dst.handle, len(srcs), axis, handles, None,
                         keep=(srcs, dst))
    return cached(key, build)


@limit(_rule)
def concat(p, tensors, axis):
    out = np.empty(p.shape, p.dtype)
    parts = [t for t in tensors if t.size]
    if not parts or out.size == 0:
        return out
    if len(parts) == 1:
        out[...] = parts[0]
        return out
    parts = [as_bytes(t) for t in parts]
    target = as_bytes(out)
    prim = _plan(parts, axis, target)
    args = {C.ARG_MULTIPLE_SRC + i: a for i, a in enumerate(parts)}
    args[C.ARG_DST] = target
    prim.run(args, threads_for(out.size))
    return out
