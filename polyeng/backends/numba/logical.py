"""The logical ops, isnan and isinf as NUMBA kernels.

logical_and, logical_or and logical_xor walk their broadcast operands as the comparisons do
(``compare.py``'s tasks and layouts), bools read as uint8 and any nonzero byte true, as numpy
reads a bool. logical_not, isnan and isinf run over contiguous flat chunks in parallel. isnan
and isinf read floats as unsigned integers of their width (16-bit floats need no conversion) and
compare the bits below the sign with infinity's: above is NaN, equal is ±inf, bit for bit as
numpy classifies them, without floating-point work. Integers and bools are neither: their result
is numpy's zeroed array, since there is nothing to read.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...engine import dtypes as dt
from ._runtime import inline, jit, launch, threads_for
from .arithmetic import walk
from .compare import element, run_binary

AND, OR, XOR = range(3)
_CHUNK = 16384   # elements per parallel task of the flat kernels: enough work to hide a task's start
# float storage -> (unsigned type of its width, the bits below the sign, +inf's bits)
_FLOAT_BITS = {dt.float16: (np.uint16, 0x7FFF, 0x7C00), dt.bfloat16: (np.uint16, 0x7FFF, 0x7F80),
               dt.float32: (np.uint32, 0x7FFFFFFF, 0x7F800000),
               dt.float64: (np.uint64, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000)}


@inline
def _logical_row(op, x, y, dst):
    """dst = x op y over one row (see ``arithmetic.walk``); the op is chosen once per row."""
    n = dst.size
    if op == AND:
        for k in range(n):
            dst[k] = (element(x, k) != 0) & (element(y, k) != 0)
    elif op == OR:
        for k in range(n):
            dst[k] = (element(x, k) != 0) | (element(y, k) != 0)
    else:   # XOR
        for k in range(n):
            dst[k] = (element(x, k) != 0) != (element(y, k) != 0)


@jit(parallel=True)
def _logical(a, b, out, shape, strides, starts, tasks, op):
    for t in prange(tasks):
        walk(_logical_row, op, t, tasks, a, b, out, shape, strides, starts)


@jit(parallel=True)
def _not(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]   # indexed from 0 by range variables: vectorizable
        for i in range(hi - lo):
            dst[i] = src[i] == 0


@jit(parallel=True)
def _isnan_bits(x, out, chunks, magnitude, inf):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = (src[i] & magnitude) > inf


@jit(parallel=True)
def _isinf_bits(x, out, chunks, magnitude, inf):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = (src[i] & magnitude) == inf


def _flat(kernel, x, *constants):
    """``kernel`` over ``x``'s elements (as given: already the integer view) in contiguous flat chunks."""
    out = np.empty(x.shape, dt.bool_)
    if x.size == 0:
        return out
    src = np.ascontiguousarray(x).reshape(-1)
    src.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
    launch(kernel, out.nbytes, src, out.reshape(-1), chunks, *constants)
    return out


def _classify(kernel, x):
    if x.dtype not in dt.FLOAT_DTYPES:
        return np.zeros(x.shape, dt.bool_)   # calloc's zero pages: no integer is NaN or infinite
    bits, magnitude, inf = _FLOAT_BITS[x.dtype]
    return _flat(kernel, x.view(bits), bits(magnitude), bits(inf))


def logical_and(p, a, b):
    return run_binary(_logical, AND, p, a, b, dt.bool_)


def logical_or(p, a, b):
    return run_binary(_logical, OR, p, a, b, dt.bool_)


def logical_xor(p, a, b):
    return run_binary(_logical, XOR, p, a, b, dt.bool_)


def logical_not(p, x):
    return _flat(_not, x.view(np.uint8))


def isnan(p, x):
    return _classify(_isnan_bits, x)


def isinf(p, x):
    return _classify(_isinf_bits, x)
