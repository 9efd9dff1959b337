// abs and neg on the elements' bits (common.cl's `word`, WORD_BYTES wide), the function a build
// option; a work item takes `per` runs of 16 elements (vload16), the last elements one by one.
// Floats (FLOAT_SIGN): abs clears the sign bit, neg flips it: numpy's result bit for bit (NaN,
// -0.0, inf) without floating-point work, so f64 needs no cl_khr_fp64. Integers: two's complement
// negation as unsigned arithmetic, which wraps (the most negative value, uint8) where signed
// overflow would be undefined; abs negates the words whose sign bit is set (SIGNED) only.
#define SIGN_BIT ((word)1 << (8 * WORD_BYTES - 1))
#if defined(FN_ABS) && defined(FLOAT_SIGN)
#define FN(v) ((v) & (word)~SIGN_BIT)
#define FNV(v) ((v) & (wordv)(word)~SIGN_BIT)
#elif defined(FN_NEG) && defined(FLOAT_SIGN)
#define FN(v) ((v) ^ SIGN_BIT)
#define FNV(v) ((v) ^ (wordv)SIGN_BIT)
#elif defined(FN_ABS) && defined(SIGNED)
#define FN(v) (((v) & SIGN_BIT) ? (word)0 - (v) : (v))
#define FNV(v) select((v), (wordv)0 - (v), ((v) & (wordv)SIGN_BIT) != (wordv)0)
#elif defined(FN_ABS)
#define FN(v) (v)   // unsigned: abs is the value itself
#define FNV(v) (v)
#elif defined(FN_NEG)
#define FN(v) ((word)0 - (v))
#define FNV(v) ((wordv)0 - (v))
#endif

__kernel void sign_words(__global const word *x, __global word *y, const ulong n, const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) {
        const wordv v = vload16(0, x + i);
        vstore16(FNV(v), 0, y + i);
    }
    for (; i < last; ++i) {
        const word v = x[i];
        y[i] = FN(v);
    }
}
