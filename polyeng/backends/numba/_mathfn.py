"""Transcendental functions for NUMBA kernels, resolved at compile time by argument type.

``exp``, ``tanh``, ``sigmoid``, ``erf``, ``sigmoid_fast`` and ``tanh_fast`` take an f32
or f64 value; ``pow_ordinary``/``pow_fast`` an f32 pair (see
pow_positive_f32; other types get ``x ** y``). f64 uses libm (f64 is
the accuracy path, not the speed path). f32 uses the ``*_f32`` functions below: numba has
no SVML here, so libm would be one scalar call per element and stop LLVM from vectorizing
the kernel's loop. The f32 versions are straight-line f32 arithmetic, selects and bit
casts (no branches that depend on data, no loops, no calls), so a loop calling them
vectorizes.

Accuracy, measured against float64 libm rounded to f32, with polyeng's jit preset: max
1 ulp for each of the four (exp, tanh, sigmoid, erf), over every f32 with 2**-27 <= |x| <= 128
(570M inputs: outside, each function is constant or x-like and the polynomials are not
involved) plus every 61st bit pattern of all 2**32; also max 1 ulp without FMA contraction
(generic x86-64 target: every 5th input of that range, every 257th pattern overall).
Special values are exact: exp(-inf) = 0, exp(+inf) = inf, exp overflows
to inf above 88.72284 and underflows through the subnormals to 0; tanh(+-inf) = +-1,
sigmoid(+inf) = 1, sigmoid(-inf) = 0, erf(+-inf) = +-1; tanh and erf are odd and keep
-0.0; NaN in, NaN out.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable

from ._storage import bits_f32, f32_bits

# Globals of numpy f32 type are frozen into the code as f32 constants: a Python float
# literal would be typed f64 and promote the whole expression to f64.
_f = np.float32
_ZERO, _HALF, _ONE, _TWO = _f(0.0), _f(0.5), _f(1.0), _f(2.0)
_SIGN = np.uint32(0x80000000)

# Polynomial coefficients: weighted least squares on 4000 Chebyshev nodes in float64,
# reweighted toward the minimax solution (Lawson's iteration), weights turning the fit
# residual into the error of the final f32 result; then rounded to f32 one coefficient at
# a time, lowest degree first, refitting the remaining ones after each rounding. The
# figure after each set is the max approximation error of the rounded set, in units of
# 2**-24 relative (about half an ulp); the rest of the error budget is f32 rounding.

# exp(r) = 1 + r + r*r*P(r) for |r| <= 0.347 (ln2/2 plus slack for how n is rounded),
# P fitted to (expm1(r) - r) / r**2, relative weights: 0.053.
_E2, _E3, _E4, _E5, _E6 = _f(0.49999994), _f(0.16666521), _f(0.04166828), _f(0.0083686905), _f(0.0013819513)
_LOG2E = _f(1.442695)
# Cody-Waite split of ln2: _LN2_HI has 9 significant bits, so n * _LN2_HI is exact for
# every |n| <= 150 and x - n * _LN2_HI is exact; _LN2_LO = ln2 - _LN2_HI rounded to f32.
_LN2_HI = _f(0.693359375)
_LN2_LO = _f(-0.00021219444)
# Clamping keeps the float -> int conversion in range; the clamped inputs already give
# inf (x >= 89 > 88.7228) and 0 (x <= -104 < -103.973, below half the least subnormal).
_EXP_MAX, _EXP_MIN = _f(89.0), _f(-104.0)

# tanh(x) = x + x**3 * P(x*x) for |x| < 0.5625, relative weights: 0.002. Beyond, tanh is
# above 0.5 and 1 - 2 / (exp(2|x|) + 1) loses no accuracy to cancellation.
_TANH_SMALL = _f(0.5625)
_T0, _T1, _T2, _T3 = _f(-0.3333333), _f(0.13333228), _f(-0.053949635), _f(0.021716474)
_T4, _T5 = _f(-0.008215525), _f(0.002175993)

# erf(x) = x + x * R(x*x) for |x| < 0.875, relative weights: 0.015. Writing x + x*R
# rather than x * (2/sqrt(pi) + ...) keeps the leading term exact.
_ERF_SMALL = _f(0.875)
_R0, _R1, _R2, _R3 = _f(0.12837917), _f(-0.3761263), _f(0.11283622), _f(-0.026855282)
_R4, _R5, _R6 = _f(0.0051906356), _f(-0.00080217235), _f(7.842242e-05)
# erf(t) = 1 - exp(Q(t)) for 0.875 <= t <= 4, Q fitted to log(erfc(t)) with weights
# erfc(t) (the absolute error of erf, whose ulp is 2**-24 there): 0.0013. Above 4,
# erfc < 2**-25 and erf rounds to 1, so t is clamped to 4.
_ERF_BIG = _f(4.0)
_Q0, _Q1, _Q2, _Q3 = _f(0.00016358634), _f(-1.1294612), _f(-0.63345623), _f(-0.108159214)
_Q4, _Q5, _Q6, _Q7 = _f(0.025041005), _f(-0.0041412264), _f(0.00042830245), _f(-2.056287e-05)


@register_jitable(inline="always")
def _exp_parts(x):
    """exp(x) ~= (eh + el) * s1 * s2 for f32 x (NaN left to the caller); r is the reduced argument.

    eh + el is exp(r), el being the exact rounding error of eh (Fast2Sum, as |p| < 1). The
    scale 2**n is split in two normal powers of two so that results in the subnormal range
    are rounded once, by the last multiplication, and exp(x) just below the overflow
    threshold (n = 128, exp(r) < 1) stays finite.
    """
    xc = x if x < _EXP_MAX else _EXP_MAX
    xc = xc if xc > _EXP_MIN else _EXP_MIN
    t = xc * _LOG2E
    n = np.int32(t + (_HALF if t >= _ZERO else -_HALF))
    nf = np.float32(n)
    r = (xc - nf * _LN2_HI) - nf * _LN2_LO
    p = r + (r * r) * ((((_E6 * r + _E5) * r + _E4) * r + _E3) * r + _E2)
    eh = _ONE + p
    el = (_ONE - eh) + p
    n1 = n >> 1
    s1 = bits_f32(np.uint32((n1 + 127) << 23))
    s2 = bits_f32(np.uint32((n - n1 + 127) << 23))
    return eh, el, r, s1, s2


@register_jitable(inline="always")
def exp_f32(x):
    # The body of _exp_parts written out again: numba's IR inlining retypes every nested
    # inlined call, and each level added about a second to the compile of every kernel
    # calling tanh or erf (which inline this function).
    x = np.float32(x)
    xc = x if x < _EXP_MAX else _EXP_MAX
    xc = xc if xc > _EXP_MIN else _EXP_MIN
    t = xc * _LOG2E
    n = np.int32(t + (_HALF if t >= _ZERO else -_HALF))
    nf = np.float32(n)
    r = (xc - nf * _LN2_HI) - nf * _LN2_LO
    p = r + (r * r) * ((((_E6 * r + _E5) * r + _E4) * r + _E3) * r + _E2)
    n1 = n >> 1
    s1 = bits_f32(np.uint32((n1 + 127) << 23))
    s2 = bits_f32(np.uint32((n - n1 + 127) << 23))
    y = ((_ONE + p) * s1) * s2
    return y if x == x else x


@register_jitable(inline="always")
def _with_sign_of(v, x):
    """|v| with the sign of x (v >= 0): odd functions computed on |x| keep tanh(-0.0) = -0.0."""
    return bits_f32(np.uint32(f32_bits(v) | (f32_bits(x) & _SIGN)))


@register_jitable(inline="always")
def tanh_f32(x):
    x = np.float32(x)
    a = abs(x)
    s = a * a
    p = ((((_T5 * s + _T4) * s + _T3) * s + _T2) * s + _T1) * s + _T0
    small = a + (a * s) * p
    big = _ONE - _TWO / (exp_f32(a + a) + _ONE)   # exp overflow -> 1; NaN stays NaN
    return _with_sign_of(small if a < _TANH_SMALL else big, x)


@register_jitable(inline="always")
def sigmoid_f32(x):
    # e = exp(-|x|) <= 1 never overflows, and e / (1 + e) for x < 0 keeps relative
    # accuracy down to the subnormals. The naive quotient rounds three times (exp, 1 + e,
    # the division) and reaches 2 ulp; the first-order correction below removes the
    # rounding errors of exp(r) (el) and of 1 + e (dl, Fast2Sum), leaving about one.
    x = np.float32(x)
    neg = x < _ZERO
    eh, el, r, s1, s2 = _exp_parts(-abs(x))
    e = (eh * s1) * s2
    d = _ONE + e
    dl = ((_ONE - d) + e) + (el * s1) * s2
    q = (e if neg else _ONE) / d
    inv_d = (_ONE - q) if neg else q                       # 1 / d, to the few bits needed
    num_rel = el * (_ONE - r + _HALF * r * r) if neg else _ZERO   # el / eh, eh = exp(r)
    y = q + q * (num_rel - dl * inv_d)
    return y if x == x else x


@register_jitable(inline="always")
def erf_f32(x):
    x = np.float32(x)
    a = abs(x)
    s = a * a
    p = (((((_R6 * s + _R5) * s + _R4) * s + _R3) * s + _R2) * s + _R1) * s + _R0
    small = a + a * p
    t = _ERF_BIG if a > _ERF_BIG else a   # NaN stays NaN
    q = ((((((_Q7 * t + _Q6) * t + _Q5) * t + _Q4) * t + _Q3) * t + _Q2) * t + _Q1) * t + _Q0
    big = _ONE - exp_f32(q)
    return _with_sign_of(small if a < _ERF_SMALL else big, x)


# Cheaper sigmoid and tanh for the activation ops, where a loop over a large array is the whole
# kernel, and for lstm's and gru's cell updates (the functions above, within 1.4 ulp, serve the
# other fused kernels: gelu, gru's step-by-step path). Both
# reduce to e**t for t <= 0, so exp needs no overflow clamp, no NaN select and one scale:
# n comes from the round-to-nearest of adding 1.5 * 2**23 (the low mantissa bits of the sum
# hold n; no float -> int conversion), and NaN passes through the lower clamp (the compare
# is false) and the arithmetic. Max error over every f32 in [-12, 12] and down to 2**-129:
# sigmoid 2.3 ulp, tanh 2.5 ulp; both exact at 0, +-1 (sigmoid 0, 1) at the ends, NaN in, NaN out.
_MAGIC = _f(12582912.0)                     # 1.5 * 2**23: bits 0x4B400000 hold n + 0
_MAGIC_BIAS = np.uint32(0x4B400000 - 191)   # bits(t + magic) - _MAGIC_BIAS = n + 127 + 64
_TINY = _f(2.0 ** -64)
_EXPM1_MIN = _f(-30.0)   # expm1(-30) = -1 + 9e-14: -1 to f32 precision; keeps 2**n normal
_EXPM1_BIAS = np.uint32(0x4B400000 - 127)   # bits(t + magic) - _EXPM1_BIAS = n + 127


@register_jitable(inline="always")
def exp_nonpositive_f32(x):
    """e**x for f32 x <= 0 (or NaN), max 1.01 ulp, subnormal results rounded once: (1 + p) * 2**-64
    is exact and the one multiplication by 2**(n + 64) (normal for n in [-150, 0]) rounds."""
    xc = _EXP_MIN if _EXP_MIN > x else x
    k = xc * _LOG2E + _MAGIC
    nf = k - _MAGIC
    r = (xc - nf * _LN2_HI) - nf * _LN2_LO
    p = r + (r * r) * ((((_E6 * r + _E5) * r + _E4) * r + _E3) * r + _E2)
    scale = bits_f32(np.uint32((f32_bits(k) - _MAGIC_BIAS) << np.uint32(23)))
    return (p * _TINY + _TINY) * scale


@register_jitable(inline="always")
def sigmoid_fast_f32(x):
    # e = exp(-|x|) <= 1 never overflows; e / (1 + e) for x < 0 keeps relative accuracy
    # down to the subnormals
    x = np.float32(x)
    e = exp_nonpositive_f32(-abs(x))
    return (e if x < _ZERO else _ONE) / (_ONE + e)


@register_jitable(inline="always")
def tanh_fast_f32(x):
    # tanh|x| = -m / (2 + m) with m = expm1(-2|x|) in (-1, 0]: no cancellation anywhere, and
    # m ~ -2|x| for small |x|, so no separate polynomial. expm1 = 2**n * p + (2**n - 1) with
    # p = expm1(r) of the reduced argument: exactly p when n = 0.
    x = np.float32(x)
    t = -(abs(x) + abs(x))
    t = _EXPM1_MIN if _EXPM1_MIN > t else t
    k = t * _LOG2E + _MAGIC
    nf = k - _MAGIC
    r = (t - nf * _LN2_HI) - nf * _LN2_LO
    p = r + (r * r) * ((((_E6 * r + _E5) * r + _E4) * r + _E3) * r + _E2)
    scale = bits_f32(np.uint32((f32_bits(k) - _EXPM1_BIAS) << np.uint32(23)))
    m = scale * p + (scale - _ONE)
    return _with_sign_of(abs(m / (_TWO + m)), x)


def exp(x):
    """e**x"""


def tanh(x):
    """tanh(x)"""


def sigmoid(x):
    """1 / (1 + e**-x)"""


def erf(x):
    """the error function"""


def sigmoid_fast(x):
    """1 / (1 + e**-x), to 2.3 ulp in f32"""


def tanh_fast(x):
    """tanh(x), to 2.5 ulp in f32"""


def _generic(f32_impl, f64_impl):
    # The f32 implementation itself, not a lambda calling it: one inlining level less
    # (see exp_f32). Inlining at numba's IR level is what lets LLVM vectorize the caller's
    # loop; left to LLVM's inliner, tanh, sigmoid and erf stay calls.
    def typer(x):
        if x == types.float32:
            return f32_impl
        if x == types.float64:
            return lambda x: f64_impl(x)
    return typer


@register_jitable(inline="always")
def _sigmoid_f64(x):
    return 1.0 / (1.0 + math.exp(-x))


overload(exp, inline="always")(_generic(exp_f32, math.exp))
overload(tanh, inline="always")(_generic(tanh_f32, math.tanh))
overload(sigmoid, inline="always")(_generic(sigmoid_f32, _sigmoid_f64))
overload(erf, inline="always")(_generic(erf_f32, math.erf))
overload(sigmoid_fast, inline="always")(_generic(sigmoid_fast_f32, _sigmoid_f64))
overload(tanh_fast, inline="always")(_generic(tanh_fast_f32, math.tanh))


# pow for f32: exp(y * log(x)) evaluated in f64, straight-line code that vectorizes (libm's
# powf, one scalar call per element, took 5x numpy's SIMD power; this takes about 1.35x).
# log(m) for x = 2**e * m, m in [sqrt(1/2), sqrt(2)): 2 atanh(f) with f = (m - 1) / (m + 1),
# |f| <= 0.1716, series to f**15 (truncation 4e-14 relative); exp(t) = 2**n * e**r, |r| <=
# ln2 / 2, Taylor to r**11 (7e-15). t is off by about |t| * 2**-52, and every |t| that gives a
# finite nonzero f32 is below 104, so the f64 result is within 1e-13 of x**y and its one
# rounding to f32 is correct but for values within 1e-13 of a tie. Only for finite x > 0 and
# finite y (``pow_ordinary``); everything else (zeros, negative bases, infinities, NaN) is
# left to libm's IEEE rules by the caller.
_LN2_F64 = math.log(2.0)
_LOG2E_F64 = 1.0 / math.log(2.0)
_ATANH = tuple(1.0 / (2 * k + 1) for k in range(8))   # 1, 1/3, ..., 1/15
_FACTORIAL = tuple(1.0 / math.factorial(k) for k in range(12))
_T_MAX, _T_MIN = 95.0, -110.0   # e**95 overflows f32, e**-110 is below half its least subnormal
_ROUND_F64 = 6755399441055744.0   # 1.5 * 2**52: adding it rounds to an integer
_SQRT2_F64 = math.sqrt(2.0)


@intrinsic
def _f64_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _bits_f64(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@register_jitable(inline="always")
def pow_positive_f32(x, y):
    xd, yd = np.float64(x), np.float64(y)
    bits = _f64_bits(xd)   # f32 values are normal in f64: no subnormal case
    e = ((bits >> 52) & 0x7FF) - 1023
    m = _bits_f64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)   # in [1, 2)
    big = m > _SQRT2_F64
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = (m - 1.0) / (m + 1.0)
    s = f * f
    series = ((((((_ATANH[7] * s + _ATANH[6]) * s + _ATANH[5]) * s + _ATANH[4]) * s + _ATANH[3]) * s
               + _ATANH[2]) * s + _ATANH[1]) * s + _ATANH[0]
    t = yd * (np.float64(e) * _LN2_F64 + 2.0 * f * series)
    t = t if t < _T_MAX else _T_MAX
    t = t if t > _T_MIN else _T_MIN
    k = t * _LOG2E_F64 + _ROUND_F64
    nf = k - _ROUND_F64
    r = t - nf * _LN2_F64
    p = _FACTORIAL[11]
    for i in range(10, -1, -1):   # unrolled by LLVM: constant trip count
        p = p * r + _FACTORIAL[i]
    scale = _bits_f64((np.int64(nf) + 1023) << 52)
    return np.float32(p * scale)


def pow_ordinary(x, y):
    """True where ``pow_fast(x, y)`` is x ** y: finite x > 0 and finite y for f32; always otherwise"""


def pow_fast(x, y):
    """x ** y: exact IEEE rules only where ``pow_ordinary(x, y)``"""


_F32_INF = _f(np.inf)


@overload(pow_ordinary, inline="always")
def _pow_ordinary(x, y):
    if x == types.float32 and y == types.float32:
        return lambda x, y: (x > _ZERO) & (x < _F32_INF) & (abs(y) < _F32_INF)
    return lambda x, y: True


@overload(pow_fast, inline="always")
def _pow_fast(x, y):
    if x == types.float32 and y == types.float32:
        return pow_positive_f32
    return lambda x, y: x ** y
