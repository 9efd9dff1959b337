// clip on the elements' bits (common.cl's `word`, WORD_BYTES wide; INF_BITS, +inf's pattern in
// the float format, a build option): no floating-point work, so every value is kept bit for bit
// and f64 needs no cl_khr_fp64. Floats are compared through an order key: sign and magnitude
// turned into an unsigned number that orders as the floats do, both zeros the same key (a float
// comparison says -0.0 == 0.0: x is kept). A NaN (magnitude above inf's) compares with nothing:
// NaN in x stays, a NaN bound is picked.
#define SIGN_BIT ((word)1 << (8 * WORD_BYTES - 1))
#define MAGNITUDE (SIGN_BIT - (word)1)

inline word order_key(word w) {
    const word m = w & MAGNITUDE;
    return (w & SIGN_BIT) ? SIGN_BIT - m : SIGN_BIT + m;
}
inline int not_a_number(word w) { return (w & MAGNITUDE) > (word)INF_BITS; }

inline word clip1(word v, word lo, word hi) {
    const word held = not_a_number(lo) || (!not_a_number(v) && order_key(v) < order_key(lo)) ? lo : v;
    return not_a_number(hi) || (!not_a_number(held) && order_key(held) > order_key(hi)) ? hi : held;
}

inline wordv order_keyv(wordv w) {
    const wordv m = w & (wordv)MAGNITUDE;
    return select((wordv)SIGN_BIT + m, (wordv)SIGN_BIT - m, (w & (wordv)SIGN_BIT) != (wordv)0);
}
inline wordmask nanv(wordv w) { return (w & (wordv)MAGNITUDE) > (wordv)INF_BITS; }

inline wordv clip16(wordv v, wordv lo, wordv hi) {
    const wordv held = select(v, lo, nanv(lo) | (~nanv(v) & (order_keyv(v) < order_keyv(lo))));
    return select(held, hi, nanv(hi) | (~nanv(held) & (order_keyv(held) > order_keyv(hi))));
}

// Both bounds one value: `per` runs of 16 elements a work item (vload16), the last one by one.
__kernel void clip_flat(__global const word *x, __global word *y, const ulong n, const ulong per, const word lo,
                        const word hi) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) vstore16(clip16(vload16(0, x + i), (wordv)lo, (wordv)hi), 0, y + i);
    for (; i < last; ++i) y[i] = clip1(x[i], lo, hi);
}

// Array bounds: x, each bound and y read through their own strides (0 along broadcast axes) in
// the layout of _strided.py: i < width (range dimension 0, `per` runs of 16 a work item),
// j < height (dimension 1), r < rows (dimension 2). Along the width x and y step by 1, a bound by 0
// (one value for all 16 lanes), 1 (vload16) or any other step (gathered).
inline wordv lanes16(__global const word *p, long step) {
    if (step == 1) return vload16(0, p);
    if (step == 0) return (wordv)(p[0]);
    word lanes[16];
    for (int k = 0; k < 16; ++k) lanes[k] = p[k * step];
    return vload16(0, lanes);
}

__kernel void clip_strided(__global const word *x, __global const word *lo, __global const word *hi,
                           __global word *y, const ulong width, const ulong height, const ulong rows, const ulong per,
                           const long xs0, const long xs1, __global const long *xb,
                           const long ls0, const long ls1, __global const long *lb,
                           const long hs0, const long hs1, __global const long *hb,
                           const long ys0, const long ys1, __global const long *yb) {
    const size_t first = get_global_id(0) * per * 16, j = get_global_id(1), r = get_global_id(2);
    if (first >= width || j >= height || r >= rows) return;
    const size_t last = min((size_t)width, first + (size_t)per * 16);
    const long ix = xb[r] + (long)j * xs1, il = lb[r] + (long)j * ls1, ih = hb[r] + (long)j * hs1;
    const long o = yb[r] + (long)j * ys1;
    size_t i = first;
    for (; i + 16 <= last; i += 16)
        vstore16(clip16(lanes16(x + ix + (long)i * xs0, xs0), lanes16(lo + il + (long)i * ls0, ls0),
                        lanes16(hi + ih + (long)i * hs0, hs0)), 0, y + o + (long)i * ys0);
    for (; i < last; ++i)
        y[o + (long)i * ys0] = clip1(x[ix + (long)i * xs0], lo[il + (long)i * ls0], hi[ih + (long)i * hs0]);
}
