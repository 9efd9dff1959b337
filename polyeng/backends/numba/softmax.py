"""softmax and log_softmax along one axis, on the input's storage dtype.

The input is seen as (outer, n, inner) with the reduction over n. ``inner == 1`` (the last
axis) runs row by row: a row is reduced while it sits in L1, so memory is read once and
written once. ``inner > 1`` reduces n vectors of a block of inner lanes elementwise, so the
loops vectorize across the inner dimension instead of striding over it.

Special values follow BASIC: the maximum ignores NaN, but a NaN anywhere in a reduction
reaches the sum, so the whole reduction becomes NaN, as does a reduction of all -inf
(-inf - -inf) or one holding +inf (inf - inf).

f32 uses two functions of its own, cheaper than mathfn's because their arguments are
limited: exp of x - max <= 0 (max 1.01 ulp against exact over every f32 in [-104, 0],
subnormal results identical to mathfn.exp_f32, exact for -inf and NaN) and, for inner > 1,
a vectorizable log of the sum of exps in [1, n] (max 0.83 ulp over every f32 in [1, 1e6]).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic, overload, register_jitable

from ._mathfn import exp_nonpositive_f32
from ._runtime import jit, launch, threads_for
from ._storage import bits_f32, compute_dtype, f32_bits, kernel_view, narrow, read_only, widen

_BLOCK_ELEMENTS = 2048   # inner lanes x n: the working set of one inner>1 task, kept in L1


@intrinsic
def _maxnum(typingctx, a, b):
    """llvm.maxnum: the larger of a and b, the other one if either is NaN. Unlike a compare
    and select, LLVM vectorizes it as a reduction without assuming there are no NaNs."""
    def codegen(context, builder, signature, args):
        kind = args[0].type
        fn = builder.module.declare_intrinsic("llvm.maxnum", [kind], ir.FunctionType(kind, [kind, kind]))
        return builder.call(fn, args)
    return a(a, a), codegen


# exp of x <= 0 (x - max is never positive), f32: mathfn's, without what x <= 0 makes useless
# (no overflow clamp, no NaN select: NaN propagates through the arithmetic).
_f = np.float32
_LN2_HI, _LN2_LO = _f(0.693359375), _f(-0.00021219444)


def _exp_nonpos(x):
    """e**x for x <= 0 or NaN"""


@overload(_exp_nonpos, inline="always")
def _exp_nonpos_typer(x):
    if x == types.float32:
        return exp_nonpositive_f32
    if x == types.float64:
        return lambda x: math.exp(x)


# log of a sum of exps (1 <= s <= n, or NaN), f32: straight-line code so that the inner>1
# kernel's loop over lanes vectorizes (libm's logf is a scalar call per lane). Cephes'
# logf: s = 2**e * m with m in [sqrt(1/2), sqrt(2)), log(m) = f - f*f/2 + f**3 * P(f) for
# f = m - 1, and e * ln2 added in two parts (_LN2_HI * e is exact).
_L0, _L1, _L2 = _f(7.0376836292e-2), _f(-1.1514610310e-1), _f(1.1676998740e-1)
_L3, _L4, _L5 = _f(-1.2420140846e-1), _f(1.4249322787e-1), _f(-1.6668057665e-1)
_L6, _L7, _L8 = _f(2.0000714765e-1), _f(-2.4999993993e-1), _f(3.3333331174e-1)
_SQRT2, _HALF, _ONE = _f(1.4142135), _f(0.5), _f(1.0)


@register_jitable(inline="always")
def _log_sum_f32(x):
    bits = f32_bits(x)
    m = bits_f32((bits & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000))   # in [1, 2)
    e = _f(np.int32(bits >> np.uint32(23)) - np.int32(127))
    big = m > _SQRT2
    f = (m * _HALF if big else m) - _ONE
    e = e + _ONE if big else e
    z = f * f
    poly = ((((((((_L0 * f + _L1) * f + _L2) * f + _L3) * f + _L4) * f + _L5) * f + _L6) * f + _L7) * f + _L8)
    y = (f * z * poly + e * _LN2_LO) - _HALF * z
    y = (f + y) + e * _LN2_HI
    return y if x == x else x


def _log_sum(x):
    """log(x) for a sum of exps: 1 <= x <= n, or NaN"""


@overload(_log_sum, inline="always")
def _log_sum_typer(x):
    if x == types.float32:
        return _log_sum_f32
    if x == types.float64:
        return lambda x: math.log(x)


@jit(parallel=True)
def _rows(x, out, scratch, log):
    """Softmax of every row of x (rows, n); scratch[:, 0] (chunks, 2, n) holds exps in compute dtype."""
    rows, n = x.shape
    chunks = scratch.shape[0]
    for c in prange(chunks):
        buf = scratch[c, 0]
        for r in range(c * rows // chunks, (c + 1) * rows // chunks):
            row, dst = x[r], out[r]
            m = widen(row[0])
            for j in range(n):
                m = _maxnum(m, widen(row[j]))
            total = np.float32(0)   # typed f64 for f64 storage by unification with the sum
            if log:
                for j in range(n):
                    total += _exp_nonpos(widen(row[j]) - m)
                shift = m + math.log(total)
                for j in range(n):
                    dst[j] = narrow(widen(row[j]) - shift, dst)
            else:
                for j in range(n):
                    e = _exp_nonpos(widen(row[j]) - m)
                    buf[j] = e
                    total += e
                inv = np.float32(1) / total
                for j in range(n):
                    dst[j] = narrow(buf[j] * inv, dst)


@jit(parallel=True)
def _row_pairs(x, out, scratch, log):
    """_rows for 16-bit storage, where it is faster (for f32 it is slower, measured).

    Rows go in pairs, a and b, each step done for a then for b: a short row is a chain of
    dependent steps (maximum, then sum, then its reciprocal), and with two independent
    chains side by side the core works on one while the other waits. Each loop handles one
    row (two rows in one loop vectorized worse). An odd last row is paired with itself.
    """
    rows, n = x.shape
    chunks = scratch.shape[0]
    for c in prange(chunks):
        bufa, bufb = scratch[c, 0], scratch[c, 1]
        lo, hi = c * rows // chunks, (c + 1) * rows // chunks
        for r in range(lo, hi, 2):
            rb = min(r + 1, hi - 1)
            a, b, da, db = x[r], x[rb], out[r], out[rb]
            ma, mb = widen(a[0]), widen(b[0])
            for j in range(n):
                ma = _maxnum(ma, widen(a[j]))
            for j in range(n):
                mb = _maxnum(mb, widen(b[j]))
            ta = tb = np.float32(0)   # typed f64 for f64 storage by unification with the sums
            if log:
                for j in range(n):
                    ta += _exp_nonpos(widen(a[j]) - ma)
                for j in range(n):
                    tb += _exp_nonpos(widen(b[j]) - mb)
                sa, sb = ma + math.log(ta), mb + math.log(tb)
                for j in range(n):
                    da[j] = narrow(widen(a[j]) - sa, da)
                for j in range(n):
                    db[j] = narrow(widen(b[j]) - sb, db)
            else:
                for j in range(n):
                    e = _exp_nonpos(widen(a[j]) - ma)
                    bufa[j] = e
                    ta += e
                for j in range(n):
                    e = _exp_nonpos(widen(b[j]) - mb)
                    bufb[j] = e
                    tb += e
                ia, ib = np.float32(1) / ta, np.float32(1) / tb
                for j in range(n):
                    da[j] = narrow(bufa[j] * ia, da)
                for j in range(n):
                    db[j] = narrow(bufb[j] * ib, db)


@jit(parallel=True)
def _lanes(x, out, scratch, block, log):
    """Softmax over axis 1 of x (outer, n, inner), ``block`` inner lanes per task.

    scratch (chunks, n + 2, block): rows 0..n-1 the exps, n the maxima, n + 1 the sums.
    """
    outer, n, inner = x.shape
    blocks = (inner + block - 1) // block
    tasks = outer * blocks
    chunks = scratch.shape[0]
    for c in prange(chunks):
        buf = scratch[c]
        peak, total = buf[n], buf[n + 1]
        for t in range(c * tasks // chunks, (c + 1) * tasks // chunks):
            o = t // blocks
            lo = (t - o * blocks) * block
            hi = min(lo + block, inner)
            w = hi - lo
            # 1-D slices, indexed from 0 by range variables: no negative-index wraparound
            # code in the loops, which would keep LLVM from vectorizing them.
            first = x[o, 0, lo:hi]
            for k in range(w):
                peak[k] = widen(first[k])
                total[k] = 0
            for j in range(1, n):
                src = x[o, j, lo:hi]
                for k in range(w):
                    peak[k] = _maxnum(peak[k], widen(src[k]))
            if log:
                for j in range(n):
                    src = x[o, j, lo:hi]
                    for k in range(w):
                        total[k] += _exp_nonpos(widen(src[k]) - peak[k])
                for k in range(w):
                    peak[k] += _log_sum(total[k])
                for j in range(n):
                    src, dst = x[o, j, lo:hi], out[o, j, lo:hi]
                    for k in range(w):
                        dst[k] = narrow(widen(src[k]) - peak[k], dst)
            else:
                for j in range(n):
                    src, exps = x[o, j, lo:hi], buf[j]
                    for k in range(w):
                        e = _exp_nonpos(widen(src[k]) - peak[k])
                        exps[k] = e
                        total[k] += e
                for k in range(w):
                    total[k] = np.float32(1) / total[k]
                for j in range(n):
                    exps, dst = buf[j], out[o, j, lo:hi]
                    for k in range(w):
                        dst[k] = narrow(exps[k] * total[k], dst)


def _run(x, axis, log):
    if x.size == 0:
        return np.empty_like(x)
    shape = x.shape
    n = shape[axis] if x.ndim else 1
    inner = math.prod(shape[axis + 1:])
    outer = x.size // (n * inner)
    out = np.empty(shape, x.dtype)
    src = read_only(kernel_view(np.ascontiguousarray(x)))
    dst = kernel_view(out)
    threads = threads_for(out.nbytes)
    if inner == 1:
        chunks = min(outer, 4 * threads)
        scratch = np.empty((chunks, 2, n), compute_dtype(x.dtype))
        kernel = _row_pairs if x.dtype.itemsize == 2 else _rows
        launch(kernel, out.nbytes, src.reshape(outer, n), dst.reshape(outer, n), scratch, log)
        return out
    block = min(inner, max(16, _BLOCK_ELEMENTS // n // 16 * 16))
    chunks = min(outer * -(-inner // block), 4 * threads)
    scratch = np.empty((chunks, n + 2, block), compute_dtype(x.dtype))
    launch(_lanes, out.nbytes, src.reshape(outer, n, inner), dst.reshape(outer, n, inner), scratch, block, log)
    return out


def softmax(p, x, axis):
    return _run(x, axis, False)


def log_softmax(p, x, axis):
    return _run(x, axis, True)
