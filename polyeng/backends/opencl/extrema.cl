// maximum and minimum elementwise, and amax and amin over the last axis of a (rows, n) view, all
// on the elements' bits as integers of their width (common.cl's WORD_BYTES), in the order of
// ops/extrema.py's Order: the build options give ORDER_MAG (a float's magnitude bits, 0 for
// integers) and ORDER_INF (+inf's bits; integers: the largest word); SIGNED_WORDS reads words
// as signed (floats and signed integers); LARGER picks the larger value, else the smaller.
// A float read as a signed integer orders the non-negative floats; flipping the magnitude bits
// of the negative ones orders them all, -0.0 just below +0.0 (IEEE 754-2019's maximum and
// minimum), and a magnitude above ORDER_INF is NaN, which wins. No floating-point work, so
// results are bit for bit and f64 needs no cl_khr_fp64. 64-bit offsets.
#if WORD_BYTES == 8
typedef long sword;
typedef long16 swordv;
#define SWORD_MIN LONG_MIN
#define SWORD_MAX LONG_MAX
#define UWORD_MAX ULONG_MAX
#elif WORD_BYTES == 4
typedef int sword;
typedef int16 swordv;
#define SWORD_MIN INT_MIN
#define SWORD_MAX INT_MAX
#define UWORD_MAX UINT_MAX
#elif WORD_BYTES == 2
typedef short sword;
typedef short16 swordv;
#define SWORD_MIN SHRT_MIN
#define SWORD_MAX SHRT_MAX
#define UWORD_MAX USHRT_MAX
#else
typedef char sword;
typedef char16 swordv;
#define SWORD_MIN CHAR_MIN
#define SWORD_MAX CHAR_MAX
#define UWORD_MAX UCHAR_MAX
#endif
#ifdef SIGNED_WORDS
typedef sword num;
typedef swordv numv;
#define NUM_LOWEST SWORD_MIN
#define NUM_HIGHEST SWORD_MAX
#else
typedef word num;
typedef wordv numv;
#define NUM_LOWEST 0
#define NUM_HIGHEST UWORD_MAX
#endif

// the order key (an involution: applied to a key it gives the word back) and the NaN test
#define KEY(v) ((num)((v) < (num)0 ? (v) ^ (num)ORDER_MAG : (v)))   // C's ?: promotes short to int
#define KEYV(v) select((v), (numv)((v) ^ (numv)(num)ORDER_MAG), (v) < (numv)(num)0)
#define ISNAN(v) (((v) & (num)ORDER_MAG) > (num)ORDER_INF)
#define ISNANV(v) (((v) & (numv)(num)ORDER_MAG) > (numv)(num)ORDER_INF)
#ifdef LARGER
#define WINS(ku, kv) ((ku) >= (kv))
#define BEST(a, b) max((a), (b))
#define SENTINEL NUM_HIGHEST   // a NaN's key for amax: above every number (as a word: a NaN)
#define IDENTITY NUM_LOWEST
#else
#define WINS(ku, kv) ((ku) <= (kv))
#define BEST(a, b) min((a), (b))
#define SENTINEL NUM_LOWEST    // for amin: below every number (a word whose key is a NaN)
#define IDENTITY NUM_HIGHEST
#endif

inline num pick(const num u, const num v) {
    if (ISNAN(u)) return u;
    if (ISNAN(v)) return v;
    return WINS(KEY(u), KEY(v)) ? u : v;
}

inline numv pickv(const numv u, const numv v) {
    numv r = select(v, u, WINS(KEYV(u), KEYV(v)));
    r = select(r, v, ISNANV(v));
    return select(r, u, ISNANV(u));
}

// Operands of the output's shape: one flat run; a work item takes `per` runs of 16 elements.
__kernel void extreme_flat(__global const num *a, __global const num *b, __global num *y, const ulong n,
                           const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) vstore16(pickv(vload16(0, a + i), vload16(0, b + i)), 0, y + i);
    for (; i < last; ++i) y[i] = pick(a[i], b[i]);
}

// Broadcasting, in the layout of _strided.py (as arithmetic.cl's binary16): along the width every
// operand steps by 0 (one value for all 16 lanes) or 1, and the output by 1.
inline numv lanes16(__global const num *p, long at, long step) {
    return step ? vload16(0, p + at) : (numv)(p[at]);
}

__kernel void extreme16(__global const num *a, __global const num *b, __global num *y,
                        const ulong width, const ulong height, const ulong rows, const ulong per,
                        const long as0, const long as1, __global const long *ab,
                        const long bs0, const long bs1, __global const long *bb,
                        const long ys0, const long ys1, __global const long *yb) {
    const size_t first = get_global_id(0) * per * 16, j = get_global_id(1), r = get_global_id(2);
    if (first >= width || j >= height || r >= rows) return;
    const size_t last = min((size_t)width, first + (size_t)per * 16);
    const long ia = ab[r] + (long)j * as1, ib = bb[r] + (long)j * bs1, o = yb[r] + (long)j * ys1;
    size_t i = first;
    for (; i + 16 <= last; i += 16)
        vstore16(pickv(lanes16(a, ia + (long)i * as0, as0), lanes16(b, ib + (long)i * bs0, bs0)), 0, y + o + (long)i);
    for (; i < last; ++i) y[o + (long)i] = pick(a[ia + (long)i * as0], b[ib + (long)i * bs0]);
}

// amax / amin: the best key of x[start:start + count], NaN keys replaced by SENTINEL.
inline num best_key(__global const num *x, const size_t start, const size_t count) {
    numv acc = (numv)(num)IDENTITY;
    size_t k = 0;
    for (; k + 16 <= count; k += 16) {
        const numv v = vload16(0, x + start + k);
        acc = BEST(acc, select(KEYV(v), (numv)(num)SENTINEL, ISNANV(v)));
    }
    num lanes[16];
    vstore16(acc, 0, lanes);
    num best = IDENTITY;
    for (int l = 0; l < 16; ++l) best = BEST(best, lanes[l]);
    for (; k < count; ++k) {
        const num v = x[start + k];
        best = BEST(best, (num)(ISNAN(v) ? (num)SENTINEL : KEY(v)));
    }
    return best;
}

__kernel void extreme_rows(__global const num *x, __global num *y, const ulong rows, const ulong n) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    const num best = best_key(x, r * n, n);
    y[r] = KEY(best);
}

// few long rows: the best key of each chunk of a row, then the best of a row's chunks
__kernel void extreme_chunks(__global const num *x, __global num *partial, const ulong rows, const ulong n,
                             const ulong chunks, const ulong chunk) {
    const size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= chunks || r >= rows) return;
    const size_t start = c * chunk;
    partial[r * chunks + c] = best_key(x, r * n + start, min((size_t)chunk, (size_t)n - start));
}

__kernel void extreme_partials(__global const num *partial, __global num *y, const ulong rows,
                               const ulong chunks) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    num best = IDENTITY;
    for (size_t c = 0; c < chunks; ++c) best = BEST(best, partial[r * chunks + c]);
    y[r] = KEY(best);
}
