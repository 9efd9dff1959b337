// gelu, exact (erf) or tanh form; one work item per 16 elements (VLOAD), the last item taking
// what is left one by one; 64-bit indices.
// The tanh form is computed as v / (1 + exp(-2u)), the same value as 0.5 v (1 + tanh(u)): it
// reaches exact 0 and v where tanh saturates (a vector tanh that stops short of -1 would leave
// 1 + tanh(u) as rounding noise) and gives NaN for v = -inf as BASIC does.
#ifdef TANH_FORM
#define GELU(v) ((v) / ((real)1 + exp((real)-1.5957691216057308 * ((v) + (real)0.044715 * (v) * (v) * (v)))))
#else
#define GELU(v) ((real)0.5 * (v) * ((real)1 + erf((v) * (real)0.7071067811865476)))
#endif

__kernel void gelu(__global const elem *x, __global elem *y, const ulong n) {
    const size_t i = get_global_id(0) * VLANES;
    if (i >= n) return;
    if (i + VLANES <= n) {
        const realv v = VLOAD(x, i);
        VSTORE(y, i, GELU(v));
        return;
    }
    for (size_t k = i; k < n; ++k) {
        const real v = LOAD(x, k);
        STORE(y, k, GELU(v));
    }
}

// relu, sigmoid, tanh, exp, sqrt, erf, hardswish, hardsigmoid, silu, log and reciprocal: y = FN(x)
// elementwise, the function a build option (-DFN_RELU, ...); a work item takes `per` runs of 16
// elements (VLOAD), the last elements one by one. relu keeps NaN (as numpy's maximum) and turns
// -0.0 into +0.0 as numpy's vector loop does; sigmoid's exp(-x) = inf for very negative x gives
// exactly 0 and exp(-x) = 0 exactly 1, as BASIC's formula does. hardswish, hardsigmoid and silu
// are BASIC's formulas term for term; relu6 clamps with comparisons, which keep NaN (fmin and
// fmax would drop it).
#if defined(FN_RELU) && defined(ITYPE)
#define FN(v) max((v), (ITYPE)0)
#elif defined(FN_RELU)
#define FN(v) ((v) > (real)0 || isnan(v) ? (v) : (real)0)
#define FNV(v) select((realv)0, (v), VMASK((v) > (real)0 || isnan(v)))
#elif defined(FN_SIGMOID)
#define FN(v) ((real)1 / ((real)1 + exp(-(v))))
#elif defined(FN_TANH)
#define FN(v) tanh(v)
#elif defined(FN_EXP)
#define FN(v) exp(v)
#elif defined(FN_SQRT)
#define FN(v) sqrt(v)
#elif defined(FN_ERF)
#define FN(v) erf(v)
#elif defined(FN_HARDSWISH) || defined(FN_HARDSIGMOID)
inline real relu6(real t) {
    t = t < (real)0 ? (real)0 : t;
    return t > (real)6 ? (real)6 : t;
}
inline realv relu6v(realv t) {
    t = select(t, (realv)0, VMASK(t < (real)0));
    return select(t, (realv)6, VMASK(t > (real)6));
}
#if defined(FN_HARDSWISH)
#define FN(v) ((v) * relu6((v) + (real)3) / (real)6)
#define FNV(v) ((v) * relu6v((v) + (real)3) / (real)6)
#else
#define FN(v) (relu6((v) + (real)3) / (real)6)
#define FNV(v) (relu6v((v) + (real)3) / (real)6)
#endif
#elif defined(FN_SILU)
#define FN(v) ((v) / ((real)1 + exp(-(v))))
#elif defined(FN_LOG)
#define FN(v) log(v)
#elif defined(FN_RECIPROCAL)
#define FN(v) ((real)1 / (v))
#endif
#if defined(FN) && !defined(FNV)
#define FNV(v) FN(v)
#endif

#if defined(FN) && defined(ITYPE)
// integer relu: ITYPE is the element type (for uint8 the kernel copies)
#define V16_(t) t##16
#define V16(t) V16_(t)
__kernel void unary(__global const ITYPE *x, __global ITYPE *y, const ulong n, const ulong per) {
    const size_t first = get_global_id(0) * per * VLANES;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * VLANES);
    size_t i = first;
    for (; i + VLANES <= last; i += VLANES) {
        const V16(ITYPE) v = vload16(0, x + i);
        vstore16(FN(v), 0, y + i);
    }
    for (; i < last; ++i) {
        const ITYPE v = x[i];
        y[i] = FN(v);
    }
}
#elif defined(FN)
__kernel void unary(__global const elem *x, __global elem *y, const ulong n, const ulong per) {
    const size_t first = get_global_id(0) * per * VLANES;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * VLANES);
    size_t i = first;
    for (; i + VLANES <= last; i += VLANES) {
        const realv v = VLOAD(x, i);
        VSTORE(y, i, FNV(v));
    }
    for (; i < last; ++i) {
        const real v = LOAD(x, i);
        STORE(y, i, FN(v));
    }
}
#endif


#ifdef LEAKY_RELU
// leaky_relu: x where x > 0, else x * slope (NaN > 0 is false: NaN * slope is NaN); the slope in
// the compute type, as BASIC rounds it. Runs of 16 as `unary`.
__kernel void leaky_relu(__global const elem *x, __global elem *y, const ulong n, const ulong per, const real slope) {
    const size_t first = get_global_id(0) * per * VLANES;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * VLANES);
    size_t i = first;
    for (; i + VLANES <= last; i += VLANES) {
        const realv v = VLOAD(x, i);
        VSTORE(y, i, select(v * slope, v, VMASK(v > (real)0)));
    }
    for (; i < last; ++i) {
        const real v = LOAD(x, i);
        STORE(y, i, v > (real)0 ? v : v * slope);
    }
}
#endif
