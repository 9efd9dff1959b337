// equal, not_equal, less, less_equal (greater and greater_equal are less and less_equal with the
// operands swapped): y = a OP b as a bool (uchar 0 or 1), both operands already in the dtype
// they compare in. A work item takes `per` runs of 16 elements (vload16), the last elements one
// by one, as arithmetic.cl's kernels do. 64-bit offsets.
//
// Elements are loaded as `stored` (ELEM, an integer type of their width) and compared as `key`
// (KEY); MASK is the signed integer type of their width, what a comparison of 16 lanes gives.
// Integers and bools are their own key. Floats (FLOAT_KEY) are read as unsigned words and keyed
// by sign and magnitude: the magnitude's bits order as |x| does (IEEE's layout), and the key
// is the magnitude negated where the sign bit is set, a signed integer of the same width, so -0.0
// and 0.0 are both 0 and every other order is the floats'. A magnitude above infinity's is NaN,
// which is unordered: every comparison with it is false but not_equal. No floating-point work at
// all, so f64 needs no cl_khr_fp64 and f16/bf16 need no conversion.
#define V16_(t) t##16
#define V16(t) V16_(t)
#define CONVERT_(t) convert_##t
#define CONVERT(t) CONVERT_(t)
typedef ELEM stored;
typedef V16(ELEM) storedv;
typedef KEY key;
typedef V16(KEY) keyv;
typedef V16(MASK) maskv;

#ifdef FLOAT_KEY
#define MAGNITUDE(v) ((v) & (stored)MAGNITUDE_BITS)
#define KEY_OF(v) (((v) >> SIGN_SHIFT) ? -(key)MAGNITUDE(v) : (key)MAGNITUDE(v))
#define IS_NAN(v) (MAGNITUDE(v) > (stored)INF_BITS)
inline keyv keys16(const storedv v) {
    const keyv magnitude = CONVERT(V16(KEY))(v & (storedv)MAGNITUDE_BITS);   // below the sign bit: fits
    return select(magnitude, -magnitude, (v >> SIGN_SHIFT) != (storedv)0);
}
#define NAN16(v) (((v) & (storedv)MAGNITUDE_BITS) > (storedv)INF_BITS)
#else
#define keys16(v) (v)
#endif

#if defined(OP_EQ)
#define OP(a, b) ((a) == (b))
#elif defined(OP_NE)
#define OP(a, b) ((a) != (b))
#elif defined(OP_LT)
#define OP(a, b) ((a) < (b))
#elif defined(OP_LE)
#define OP(a, b) ((a) <= (b))
#endif

// One element: NaN on either side makes not_equal true and the others false.
inline uchar compare1(const stored u, const stored v) {
#if defined(FLOAT_KEY) && defined(OP_NE)
    return (uchar)(OP(KEY_OF(u), KEY_OF(v)) || IS_NAN(u) || IS_NAN(v));
#elif defined(FLOAT_KEY)
    return (uchar)(OP(KEY_OF(u), KEY_OF(v)) && !IS_NAN(u) && !IS_NAN(v));
#else
    return (uchar)OP(u, v);
#endif
}

// 16 elements: a lane mask of -1 or 0 (the key's width) turned into 16 bools.
inline uchar16 compare16(const storedv u, const storedv v) {
    const maskv ordered = OP(keys16(u), keys16(v));
#if defined(FLOAT_KEY) && defined(OP_NE)
    const maskv lanes = ordered | NAN16(u) | NAN16(v);
#elif defined(FLOAT_KEY)
    const maskv lanes = ordered & ~(NAN16(u) | NAN16(v));
#else
    const maskv lanes = ordered;
#endif
    return convert_uchar16(-lanes);
}

// Operands of the output's own shape: one flat run.
__kernel void compare_flat(__global const stored *a, __global const stored *b, __global uchar *y, const ulong n,
                           const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) vstore16(compare16(vload16(0, a + i), vload16(0, b + i)), 0, y + i);
    for (; i < last; ++i) y[i] = compare1(a[i], b[i]);
}

// Broadcasting: each operand is read through its own strides (0 along broadcast axes) in the
// layout of _strided.py: i < width (range dimension 0, `per` runs of 16 a work item), j < height
// (dimension 1), r < rows (dimension 2). Along the width every operand steps by 0 (one value for
// all 16 lanes) or 1 (vload16), and the output by 1.
inline storedv lanes16(__global const stored *p, long at, long step) {
    return step ? vload16(0, p + at) : (storedv)(p[at]);
}

__kernel void compare_strided(__global const stored *a, __global const stored *b, __global uchar *y,
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
        const uchar16 lanes = compare16(lanes16(a, ia + (long)i * as0, as0), lanes16(b, ib + (long)i * bs0, bs0));
        vstore16(lanes, 0, y + o + (long)i);
    }
    for (; i < last; ++i) y[o + (long)i] = compare1(a[ia + (long)i * as0], b[ib + (long)i * bs0]);
}
