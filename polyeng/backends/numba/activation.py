"""gelu (exact or with the tanh approximation), relu, sigmoid, tanh, exp, sqrt, erf, hardswish,
hardsigmoid, silu, leaky_relu, log and reciprocal, elementwise on the input's storage dtype, in
contiguous flat chunks run in parallel.

gelu's, hardswish's, hardsigmoid's and silu's formulas are BASIC's, term for term, so special
values (inf * 0 -> NaN at -inf) agree. The transcendental functions are ``_mathfn``'s
(vectorizable f32 code, libm for f64; sigmoid and tanh its cheaper forms, within 2.5 ulp),
called through the module: the ops' own names (tanh, erf, ...) are this module's kernels. f32
log is ``_log_f32`` below (libm's logf would be a call per element, which stops the loop
vectorizing), f64 log libm's.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from numba.extending import overload, register_jitable

from . import _mathfn as mathfn
from ._runtime import jit, launch, threads_for
from ._mathfn import _bits_f64 as bits_f64, _f64_bits as f64_bits
from ._storage import compute_dtype, kernel_view, narrow, read_only, widen

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
    launch(_gelu, out.nbytes, read_only(kernel_view(np.ascontiguousarray(x)).reshape(-1)), kernel_view(out).reshape(-1),
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


# hardswish, hardsigmoid, silu, leaky_relu, log and reciprocal: constants come in the compute
# type (zero, three, six, one, the slope), as BASIC rounds them.
@jit(parallel=True)
def _hardswish(x, out, chunks, zero, three, six):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            v = widen(src[i])
            t = v + three
            t = zero if t < zero else t   # NaN < 0 and NaN > 6 are false: NaN stays
            t = six if t > six else t
            dst[i] = narrow(v * t / six, dst)


@jit(parallel=True)
def _hardsigmoid(x, out, chunks, zero, three, six):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            t = widen(src[i]) + three
            t = zero if t < zero else t
            t = six if t > six else t
            dst[i] = narrow(t / six, dst)


@jit(parallel=True)
def _silu(x, out, chunks, one):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            v = widen(src[i])
            dst[i] = narrow(v / (one + mathfn.exp(-v)), dst)


@jit(parallel=True)
def _leaky_relu(x, out, chunks, zero, slope):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            v = widen(src[i])
            dst[i] = narrow(v if v > zero else v * slope, dst)   # NaN > 0 is false: NaN * slope


@jit(parallel=True)
def _reciprocal(x, out, chunks, one):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(one / widen(src[i]), dst)   # correctly rounded; 1 / 0 = inf (numpy's error model)


# log of an f32, in f64: x (a subnormal f32 is a normal f64) = 2**e * m with m in
# [sqrt(2)/2, sqrt(2)), then log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series
# to s**15 (the next term is below 2**-44 of the sum), and e ln 2 added: the f64 value is within a
# few f64 ulp of log(x), so the f32 result is log(x) correctly rounded but for inputs within about
# 2**-40 of a rounding tie (none among every 13th of the positive finite f32 bit patterns; numpy's
# own f32 log is off by an ulp on 4% of them). Straight-line code with selects: the loop vectorizes,
# though numpy's AVX-512 log is still 2x faster on one core.
_LOG_MANTISSA, _LOG_ONE_BITS = np.int64(0x000FFFFFFFFFFFFF), np.int64(0x3FF0000000000000)
_LOG_SQRT2_BITS, _LOG_EXP_ONE = np.int64(0x3FF6A09E667F3BCD), np.int64(1 << 52)   # sqrt(2)'s f64 bits; 2**52
_LOG_ZERO_F, _LOG_INF_F, _LOG_NAN_F = np.float32(0.0), np.float32(np.inf), np.float32(np.nan)
_LOG_LN2, _LOG_ONE = np.float64(math.log(2.0)), np.float64(1.0)
_L0, _L1, _L2, _L3, _L4, _L5, _L6, _L7 = (np.float64(2.0 / (2 * k + 1)) for k in range(8))


@register_jitable(inline="always")
def _log_f32(x):
    x = np.float32(x)
    bits = f64_bits(np.float64(x))
    e = (bits >> np.int64(52)) - np.int64(1023)
    mantissa = (bits & _LOG_MANTISSA) | _LOG_ONE_BITS
    above = mantissa > _LOG_SQRT2_BITS   # m in (sqrt(2), 2): halve it
    mantissa = mantissa - _LOG_EXP_ONE if above else mantissa
    e = e + np.int64(1) if above else e
    m = bits_f64(mantissa)
    s = (m - _LOG_ONE) / (m + _LOG_ONE)
    z = s * s
    p = _L0 + z * (_L1 + z * (_L2 + z * (_L3 + z * (_L4 + z * (_L5 + z * (_L6 + z * _L7))))))
    r = np.float32(np.float64(e) * _LOG_LN2 + s * p)
    r = r if x > _LOG_ZERO_F else (-_LOG_INF_F if x == _LOG_ZERO_F else _LOG_NAN_F)   # log(±0) = -inf, < 0 NaN
    r = x if x == _LOG_INF_F else r
    return r if x == x else x


def _log_value(x):
    """log(x) of an f32 (``_log_f32``) or f64 (libm) value."""


@overload(_log_value, inline="always")
def _log_value_impl(x):
    if x == types.float32:
        return _log_f32
    if x == types.float64:
        return lambda x: np.log(x)   # libm: -inf at ±0, NaN below 0


@jit(parallel=True)
def _log(x, out, chunks):
    n = x.size
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[lo:hi], out[lo:hi]
        for i in range(hi - lo):
            dst[i] = narrow(_log_value(widen(src[i])), dst)


def _constants(x, *values):
    real = compute_dtype(x.dtype).type
    return tuple(real(v) for v in values)


def hardswish(p, x):
    return _elementwise(_hardswish, x, *_constants(x, 0, 3, 6))


def hardsigmoid(p, x):
    return _elementwise(_hardsigmoid, x, *_constants(x, 0, 3, 6))


def silu(p, x):
    return _elementwise(_silu, x, *_constants(x, 1))


def leaky_relu(p, x, negative_slope):
    return _elementwise(_leaky_relu, x, *_constants(x, 0, negative_slope))


def log(p, x):
    return _elementwise(_log, x)


def reciprocal(p, x):
    return _elementwise(_reciprocal, x, *_constants(x, 1))
