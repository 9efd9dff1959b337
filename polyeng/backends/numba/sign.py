"""abs and neg as NUMBA kernels, in contiguous flat chunks run in parallel.

Floats are read as unsigned integers of their width (16-bit floats need no conversion at all):
abs clears the sign bit and neg flips it, which is numpy's result bit for bit, NaN payloads,
signed zeros and infinities included, without floating-point work. Integers are negated in
their own type, so the most negative value (and any uint8) wraps as numpy's do.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...engine import dtypes as dt
from ._runtime import jit, launch, threads_for

_CHUNK = 16384   # elements per parallel task: enough work to hide a task's start
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


@jit(parallel=True)
def _float_sign(x, out, chunks, keep, flip):
    """``(bits & keep) ^ flip``: abs keeps every bit but the sign, neg keeps all and flips the sign."""
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]   # indexed from 0 by range variables: vectorizable
        for i in range(hi - lo):
            dst[i] = (src[i] & keep) ^ flip


@jit(parallel=True)
def _int_abs(x, out, chunks, zero):
    """zero: 0 in x's type (an int literal would widen uint8 work); the store truncates, so
    ``zero - v`` of the most negative value wraps back to it."""
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            v = src[i]
            dst[i] = zero - v if v < zero else v


@jit(parallel=True)
def _int_neg(x, out, chunks, zero):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = zero - src[i]


def _elementwise(x, float_masks, int_kernel):
    """Run the float kernel with ``float_masks(bits dtype, sign bit)`` -> (keep, flip), or the
    integer kernel, over ``x``'s elements in contiguous flat chunks."""
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    src = np.ascontiguousarray(x)
    if x.dtype in dt.FLOAT_DTYPES:
        bits = np.dtype(_BITS[x.dtype.itemsize])
        kernel, constants = _float_sign, float_masks(bits.type, bits.type(1) << bits.type(8 * bits.itemsize - 1))
        src, dst = src.view(bits), out.view(bits)
    else:
        kernel, constants, dst = int_kernel, (x.dtype.type(0),), out
    src = src.reshape(-1)
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
    launch(kernel, out.nbytes, src, dst.reshape(-1), chunks, *constants)
    return out


def abs(p, x):   # noqa: A001 - kernels are named after their op
    return _elementwise(x, lambda bits, sign: (~sign, bits(0)), _int_abs)


def neg(p, x):
    return _elementwise(x, lambda bits, sign: (~bits(0), sign), _int_neg)
