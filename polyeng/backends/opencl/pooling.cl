// avg_pool2d/3d and max_pool2d/3d; 2-D pooling runs as 3-D with a depth of 1. The host
// hands over what the shared window geometry says: sizes, strides, paddings, dilations, the
// average divisor of each output position and, with WITH_INDEX, the index each max window
// reports when nothing in it beats the lowest value (`first`, one per output position of a
// plane). 64-bit indices throughout.

// max pooling compares a key: `real` for float storage (read through LOAD), the stored
// integer type for ints and bool (INT_KEY). The winning element itself is copied as a raw
// word, so 16-bit floats and NaN payloads come out bit-exact.
#ifdef INT_KEY
#if INT_KEY == 1
typedef char key;
#define LOWEST CHAR_MIN
#elif INT_KEY == 2
typedef uchar key;
#define LOWEST 0
#elif INT_KEY == 3
typedef int key;
#define LOWEST INT_MIN
#else
typedef long key;
#define LOWEST LONG_MIN
#endif
#define KEY(p, i) (((__global const key *)(p))[i])
#define WINS(v, best) ((v) > (best))
#define STORE_LOWEST(p, i) (((__global key *)(p))[i] = (key)LOWEST)
#else
typedef real key;
#define LOWEST (-INFINITY)
#define KEY(p, i) LOAD((__global const elem *)(p), i)
// PyTorch's `val > max || isnan(val)`: ties keep the first tap, the last NaN wins
#define WINS(v, best) ((v) > (best) || isnan(v))
#define STORE_LOWEST(p, i) STORE((__global elem *)(p), i, LOWEST)
#endif

// Integer and bool max pooling, one work item per output element. `dims` holds the input
// sizes (D, H, W), the output sizes (OD, OH, OW) and the dilation (DD, DH, DW); `ranges` the
// first in-bounds tap of every depth, height and width window in turn, then their ends.
__kernel void max_pool(__global const word *x, __global word *y,
#ifdef WITH_INDEX
                       __global long *index, __global const long *first,
#endif
                       const ulong n, __global const long *dims, __global const long *ranges) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long H = dims[1], W = dims[2], OD = dims[3], OH = dims[4], OW = dims[5];
    const long DD = dims[6], DH = dims[7], DW = dims[8];
    __global const long *lo = ranges, *hi = ranges + OD + OH + OW;
    const long out_plane = OD * OH * OW;
    const long plane = (long)i / out_plane;
    const long o = (long)i - plane * out_plane;
    const long ow = o % OW, oh = (o / OW) % OH, od = o / (OW * OH);
    const size_t base = (size_t)plane * (size_t)(dims[0] * H * W);
    long best_at = 0;
    int won = 0;
    key best = LOWEST;
    for (long d = lo[od]; d < hi[od]; d += DD)
        for (long h = lo[OD + oh]; h < hi[OD + oh]; h += DH)
            for (long w = lo[OD + OH + ow]; w < hi[OD + OH + ow]; w += DW) {
                const long at = (d * H + h) * W + w;
                const key v = KEY(x, base + (size_t)at);
                if (WINS(v, best)) {
                    best = v;
                    best_at = at;
                    won = 1;
                }
            }
    if (won)
        y[i] = x[base + (size_t)best_at];
    else
        STORE_LOWEST(y, i);
#ifdef WITH_INDEX
    index[i] = won ? best_at : first[o];
#endif
}

#ifdef STORAGE
// Float pooling, 16 adjacent output columns per work item (range (ceil(OW / 16), OH,
// planes * OD)), taps in the same row-major order as max_pool. A tap's input columns are one
// vector load when they lie inside the row (stride 1, or stride 2 from two loads), else 16
// clamped loads with a mask (a window over the left edge, other strides). Lanes past OW are
// computed and not stored.
// Each tap's coordinate (window start + tap offset * dilation) and its bounds test are
// inlined in the loops below for speed, where a table lookup per tap and lane would cost
// more; tests/test_op_pooling.py, which compares every engine with BASIC, guards them.
inline realv tap16(__global const elem *x, size_t row, long p0, long W, long step, int lanes, long avail,
                   int16 *valid) {
    // the vector path reads up to step * 16 elements from p0: lanes past `lanes` (not stored)
    // may read past the row, never past the buffer (`avail` elements from `row` on)
    if (p0 >= 0 && p0 + step * (lanes - 1) < W && p0 + step * VLANES <= avail && step <= 2) {
        *valid = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) < lanes;
        if (step == 1) return VLOAD(x, row + (size_t)p0);
        // positions p0, p0 + 2, ..., p0 + 30: the even lanes of one load, the odd lanes of one
        // starting 15 further
        const realv a = VLOAD(x, row + (size_t)p0), b = VLOAD(x, row + (size_t)p0 + VLANES - 1);
        return (realv)(a.even, b.odd);
    }
    real v[VLANES];
    int ok[VLANES];
    for (int l = 0; l < VLANES; ++l) {
        const long p = p0 + step * l;
        ok[l] = p >= 0 && p < W && l < lanes ? -1 : 0;
        v[l] = LOAD(x, row + (size_t)clamp(p, 0L, W - 1));
    }
    *valid = vload16(0, ok);
    return vload16(0, v);
}

#define POSITION16                                                                      \
    const long ow = (long)get_global_id(0) * VLANES, oh = get_global_id(1), z = get_global_id(2); \
    if (ow >= OW || oh >= OH || z >= planes * OD) return;                               \
    const long od = z % OD, plane = z / OD;                                             \
    const long d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;                 \
    const size_t base = (size_t)plane * (size_t)(D * H * W);                            \
    const size_t at_out = ((size_t)z * OH + oh) * OW + ow;                              \
    const int lanes = (int)min((long)VLANES, OW - ow);                                 \
    const long in_size = planes * D * H * W;

__kernel void avg_pool16(__global const elem *x, __global elem *y, const long D, const long H, const long W,
                         const long OD, const long OH, const long OW, const long planes,
                         const long SD, const long SH, const long SW, const long PD, const long PH, const long PW,
                         const long KD, const long KH, const long KW, __global const long *divisor) {
    POSITION16
    realv total = (realv)0;
    for (long kd = 0; kd < KD; ++kd) {
        const long d = d0 + kd;
        if (d < 0 || d >= D) continue;
        for (long kh = 0; kh < KH; ++kh) {
            const long h = h0 + kh;
            if (h < 0 || h >= H) continue;
            const size_t row = base + (size_t)((d * H + h) * W);
            for (long kw = 0; kw < KW; ++kw) {
                int16 valid;
                const realv v = tap16(x, row, w0 + kw, W, SW, lanes, in_size - (long)row, &valid);
                total += select((realv)0, v, VMASK(valid));
            }
        }
    }
    real sums[VLANES];
    vstore16(total, 0, sums);
    const size_t at_div = (size_t)(od * OH + oh) * OW + ow;
    for (int l = 0; l < lanes; ++l) STORE(y, at_out + l, sums[l] / (real)divisor[at_div + l]);
}

__kernel void max_pool16(__global const elem *x, __global word *y,
#ifdef WITH_INDEX
                         __global long *index, __global const long *first,
#endif
                         const long D, const long H, const long W, const long OD, const long OH, const long OW,
                         const long planes, const long SD, const long SH, const long SW,
                         const long PD, const long PH, const long PW, const long DD, const long DH, const long DW,
                         const long KD, const long KH, const long KW) {
    POSITION16
    const long16 lane = (long16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    long16 best_at = (long16)0;
    realv best = (realv)(-INFINITY);
    int16 won = (int16)0;
    for (long kd = 0; kd < KD; ++kd) {
        const long d = d0 + kd * DD;
        if (d < 0 || d >= D) continue;
        for (long kh = 0; kh < KH; ++kh) {
            const long h = h0 + kh * DH;
            if (h < 0 || h >= H) continue;
            const long row = (d * H + h) * W;
            for (long kw = 0; kw < KW; ++kw) {
                int16 valid;
                const long p0 = w0 + kw * DW;
                const realv v = tap16(x, base + (size_t)row, p0, W, SW, lanes, in_size - (long)(base + row), &valid);
                // PyTorch's `val > max || isnan(val)`: ties keep the first tap, the last NaN wins
                const int16 take = valid & (convert_int16(v > best) | convert_int16(isnan(v)));
                best = select(best, v, VMASK(take));
                best_at = select(best_at, (long16)(row + p0) + lane * SW, convert_long16(take) != 0);
                won |= take;
            }
        }
    }
    long at[VLANES];
    int any[VLANES];
    vstore16(best_at, 0, at);
    vstore16(won, 0, any);
    __global const word *xw = (__global const word *)x;
    for (int l = 0; l < lanes; ++l) {
        if (any[l])
            y[at_out + l] = xw[base + (size_t)at[l]];   // the winner's own bits
        else
            STORE_LOWEST(y, at_out + l);
#ifdef WITH_INDEX
        index[at_out + l] = any[l] ? at[l] : first[(size_t)(od * OH + oh) * OW + ow + l];
#endif
    }
}
#endif
