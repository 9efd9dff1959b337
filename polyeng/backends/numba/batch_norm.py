"""batch_norm (inference) as a NUMBA kernel on the storage dtype: one parallel loop over the
(N, C) planes, each ``x * scale[c] + shift[c]`` in a loop LLVM vectorizes."""
from __future__ import annotations

import numpy as np
from numba import prange

from ...ops.batch_norm import affine, compute_dtype
from ._runtime import jit, launch
from ._storage import kernel_view, narrow, read_only, widen


@jit(parallel=True)
def _batch_norm(x, scale, shift, out):
    planes, size = x.shape
    channels = scale.shape[0]
    for plane in prange(planes):
        c = plane % channels
        s, t = scale[c], shift[c]
        src, dst = x[plane], out[plane]
        for i in range(size):
            dst[i] = narrow(widen(src[i]) * s + t, dst)


def batch_norm(p, x, running_mean, running_var, weight, bias, eps):
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    scale, shift = affine(running_mean, running_var, weight, bias, eps, compute_dtype(x.dtype))
    planes = x.shape[0] * x.shape[1]
    src = kernel_view(np.ascontiguousarray(x)).reshape(planes, -1)
    launch(_batch_norm, out.nbytes, read_only(src), scale, shift, kernel_view(out).reshape(planes, -1))
    return out
