// logical_and, logical_or and logical_xor of bools (uchar; any nonzero byte is true, as numpy
// reads a bool), read as compare.cl's kernels read their operands: `logical_flat` for operands of
// the output's shape, `logical_strided` through each operand's strides (0 along broadcast axes) in
// the layout of _strided.py, 16 lanes at a time. 64-bit offsets.
//
// logical_not, isnan and isinf (`classify_words`) read each element as a word of its width
// (common.cl's WORD_BYTES): a bool for logical_not, a float's bits for isnan and isinf, whose
// magnitude (the bits below the sign) is above infinity's for NaN and equal to it for ±inf, bit
// for bit as numpy classifies them, with no floating-point work (f64 needs no cl_khr_fp64).
// Integers and bools are never NaN or infinite: FN_FALSE writes false without reading them.
#if defined(OP_AND)
#define OP(a, b) ((a) != 0 && (b) != 0)
#define OP16(a, b) (((a) != (uchar16)0) & ((b) != (uchar16)0))
#elif defined(OP_OR)
#define OP(a, b) ((a) != 0 || (b) != 0)
#define OP16(a, b) (((a) != (uchar16)0) | ((b) != (uchar16)0))
#elif defined(OP_XOR)
#define OP(a, b) (((a) != 0) != ((b) != 0))
#define OP16(a, b) (((a) != (uchar16)0) ^ ((b) != (uchar16)0))
#endif

#ifdef OP
__kernel void logical_flat(__global const uchar *a, __global const uchar *b, __global uchar *y, const ulong n,
                           const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) vstore16(convert_uchar16(-OP16(vload16(0, a + i), vload16(0, b + i))), 0, y + i);
    for (; i < last; ++i) y[i] = (uchar)OP(a[i], b[i]);
}

inline uchar16 lanes16(__global const uchar *p, long at, long step) {
    return step ? vload16(0, p + at) : (uchar16)(p[at]);
}

__kernel void logical_strided(__global const uchar *a, __global const uchar *b, __global uchar *y,
                              const ulong width, const ulong height, const ulong rows, const ulong per,
                              const long as0, const long as1, __global const long *ab,
                              const long bs0, const long bs1, __global const long *bb,
                              const long ys0, const long ys1, __global const long *yb) {
    const size_t first = get_global_id(0) * per * 16, j = get_global_id(1), r = get_global_id(2);
    if (first >= width || j >= height || r >= rows) return;
    const size_t last = min((size_t)width, first + (size_t)per * 16);
    const long ia = ab[r] + (long)j * as1, ib = bb[r] + (long)j * bs1, o = yb[r] + (long)j * ys1;
    size_t i = first;
    for (; i + 16 <= last; i += 16) {
        const char16 lanes = OP16(lanes16(a, ia + (long)i * as0, as0), lanes16(b, ib + (long)i * bs0, bs0));
        vstore16(convert_uchar16(-lanes), 0, y + o + (long)i);
    }
    for (; i < last; ++i) y[o + (long)i] = (uchar)OP(a[ia + (long)i * as0], b[ib + (long)i * bs0]);
}
#endif

#if defined(FN_NOT)
#define FN(v) ((v) == (word)0)
#elif defined(FN_ISNAN)
#define FN(v) (((v) & (word)MAGNITUDE_BITS) > (word)INF_BITS)
#elif defined(FN_ISINF)
#define FN(v) (((v) & (word)MAGNITUDE_BITS) == (word)INF_BITS)
#endif

#if defined(FN) || defined(FN_FALSE)
__kernel void classify_words(__global const word *x, __global uchar *y, const ulong n, const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
#ifdef FN_FALSE
    for (; i + 16 <= last; i += 16) vstore16((uchar16)0, 0, y + i);
    for (; i < last; ++i) y[i] = 0;
#else
    for (; i + 16 <= last; i += 16) {
        const wordv v = vload16(0, x + i);
        vstore16(convert_uchar16(-FN(v)), 0, y + i);   // a lane mask of -1 or 0: 1 or 0
    }
    for (; i < last; ++i) {
        const word v = x[i];
        y[i] = (uchar)FN(v);
    }
#endif
}
#endif
