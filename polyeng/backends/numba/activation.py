"""gelu, exact (erf) or with the tanh approximation, elementwise on the input's storage dtype.

The formulas are BASIC's, term for term, so special values (inf * 0 -> NaN at -inf) agree.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._mathfn import erf, tanh
from ._runtime import jit, launch, threads_for
from ._storage import compute_dtype, kernel_view, narrow, widen

_CHUNK = 16384   # elements per parallel task: enough work to hide a task's start


@jit(parallel=True)
def _gelu(x, out, tanh_form, chunks, half, one, cubic, scale):
    """half, one, cubic, scale: the formula's constants in the compute dtype, as BASIC rounds them."""
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]   # indexed from 0 by range variables: vectorizable
        if tanh_form:
            for i in range(hi - lo):
                v = widen(src[i])
                dst[i] = narrow(half * v * (one + tanh(scale * (v + cubic * v * v * v))), dst)
        else:
            for i in range(hi - lo):
                v = widen(src[i])
                dst[i] = narrow(half * v * (one + erf(v * scale)), dst)


def gelu(p, x, approximate):
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    real = compute_dtype(x.dtype).type
    tanh_form = approximate == "tanh"
    scale = real(math.sqrt(2.0 / math.pi)) if tanh_form else real(1 / math.sqrt(2.0))
    chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
    launch(_gelu, out.nbytes, kernel_view(np.ascontiguousarray(x)).reshape(-1), kernel_view(out).reshape(-1),
           tanh_form, chunks, real(0.5), real(1), real(0.044715), scale)
    return out
