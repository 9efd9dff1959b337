"""Converting arrays between float types with oneDNN's reorder (parallel, rounding to nearest
even as polyeng's ``fpmath.down_convert`` does), for the f32 work of ALLOW ops under a bf16 or
f16 fp math mode: oneDNN computes 16-bit products natively where the CPU has the units, but
only AMX implementations take f32 data with the fpmath attribute, so the data is converted
first (a bf16 x bf16 product with f32 accumulation and an f32 result: the same numbers the
attribute gives, ``fpmath.ALLOWED``'s contract). Where oneDNN converts 16-bit floats in its scalar
code (``_primitive.scalar_conversion``), numpy converts them, as BASIC's cast does (``dt.round_to``)."""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _constants as C
from ._primitive import cached, desc, elements_strides, reorder, scalar_conversion
from ._threads import threads_for

STORAGE = {"bf16": dt.bfloat16, "f16": dt.float16}


def storage_of(compute: str, dtype) -> np.dtype:
    """The dtype f32 data is given to a primitive in under ``compute`` (its own dtype otherwise)."""
    return np.dtype(STORAGE.get(compute, dtype)) if np.dtype(dtype) == dt.float32 else np.dtype(dtype)


def converted(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a C-contiguous array of ``dtype`` (``a`` itself when it is one already)."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype and a.flags.c_contiguous:
        return a
    strides = elements_strides(a)
    if a.size == 0 or min(strides, default=0) < 0:
        return np.ascontiguousarray(a).astype(dtype)
    key = ("reorder", a.shape, strides, a.dtype.str, dtype.str)
    step = cached(key, lambda: reorder(desc(a.shape, a.dtype, strides), desc(a.shape, dtype)))
    if scalar_conversion(step, a.dtype, dtype):   # oneDNN's scalar code: about 100 ns an element
        return np.ascontiguousarray(dt.round_to(a, dtype))
    out = np.empty(a.shape, dtype)
    step.run({C.ARG_FROM: a, C.ARG_TO: out}, threads_for(a.size * 4))
    return out
