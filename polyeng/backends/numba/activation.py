"""gelu (exact or with the tanh approximation), relu, sigmoid, tanh, exp, sqrt and erf,
elementwise on the input's storage dtype, in contiguous flat chunks run in parallel.

gelu's formulas are BASIC's, term for term, so special values (inf * 0 -> NaN at -inf) agree.
The transcendental functions are ``_mathfn``'s (vectorizable f32 code, libm for f64; sigmoid
and tanh its cheaper forms, within 2.5 ulp), called through the module: the ops' own names
(tanh, erf, ...) are this module's kernels.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from . import _mathfn as mathfn
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
                dst[i] = narrow(half * v * (one + mathfn.tanh(scale * (v + cubic * v * v * v))), dst)
        else:
            for i in range(hi - lo):
                v = widen(src[i])
                dst[i] = narrow(half * v * (one + mathfn.erf(v * scale)), dst)


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


# relu, sigmoid, tanh, exp, sqrt and erf: one kernel each (a kernel holding all six would
# compile every transcendental function for each of them), over contiguous flat chunks.
@jit(parallel=True)
def _relu(x, out, chunks, zero):
    """zero: 0 in the compute type (an int literal would promote f32 work to f64)."""
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            v = widen(src[i])
            dst[i] = narrow(zero if v <= zero else v, dst)   # NaN <= 0 is false: NaN stays


@jit(parallel=True)
def _sigmoid(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(mathfn.sigmoid_fast(widen(src[i])), dst)


@jit(parallel=True)
def _tanh(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(mathfn.tanh_fast(widen(src[i])), dst)


@jit(parallel=True)
def _exp(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(mathfn.exp(widen(src[i])), dst)


@jit(parallel=True)
def _sqrt(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(np.sqrt(widen(src[i])), dst)   # correctly rounded, NaN below 0


@jit(parallel=True)
def _erf(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(mathfn.erf(widen(src[i])), dst)


def _elementwise(kernel, x, *constants):
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    src = kernel_view(np.ascontiguousarray(x)).reshape(-1)
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
    launch(kernel, out.nbytes, src, kernel_view(out).reshape(-1), chunks, *constants)
    return out


def relu(p, x):
    zero = x.dtype.type(0) if x.dtype.kind in "iu" else compute_dtype(x.dtype).type(0)
    return _elementwise(_relu, x, zero)


def sigmoid(p, x):
    return _elementwise(_sigmoid, x)


def tanh(p, x):
    return _elementwise(_tanh, x)


def exp(p, x):
    return _elementwise(_exp, x)


def sqrt(p, x):
    return _elementwise(_sqrt, x)


def erf(p, x):
    return _elementwise(_erf, x)
