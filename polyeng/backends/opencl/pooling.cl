// avg_pool2d/3d and max_pool2d/3d, one work item per output element; 2-D pooling runs as
// 3-D with a depth of 1. `dims` holds the input sizes (D, H, W), the output sizes (OD, OH,
// OW) and, for max pooling, the dilation (DD, DH, DW). `lo`/`hi` hold per output position the
// in-bounds tap range of each dimension, concatenated over depth, height, width (computed
// on the host from the shared window geometry). 64-bit indices throughout.

// avg pooling: the in-bounds taps summed in row-major order (padding zeros add nothing),
// then divided by the host's divisor table converted to `real`.
__kernel void avg_pool(__global const elem *x, __global elem *y, const ulong n,
                       __global const long *dims, __global const long *lo, __global const long *hi,
                       __global const long *divisor) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long H = dims[1], W = dims[2], OD = dims[3], OH = dims[4], OW = dims[5];
    const long out_plane = OD * OH * OW;
    const long plane = (long)i / out_plane;
    const long o = (long)i - plane * out_plane;
    const long ow = o % OW, oh = (o / OW) % OH, od = o / (OW * OH);
    const size_t base = (size_t)plane * (size_t)(dims[0] * H * W);
    real total = (real)0;
    for (long d = lo[od]; d < hi[od]; ++d)
        for (long h = lo[OD + oh]; h < hi[OD + oh]; ++h) {
            const size_t row = base + (size_t)((d * H + h) * W);
            for (long w = lo[OD + OH + ow]; w < hi[OD + OH + ow]; ++w)
                total += LOAD(x, row + (size_t)w);
        }
    STORE(y, i, total / (real)divisor[o]);
}

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

__kernel void max_pool(__global const word *x, __global word *y,
#ifdef WITH_INDEX
                       __global long *index,
#endif
                       const ulong n, __global const long *dims, __global const long *lo,
                       __global const long *hi) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long H = dims[1], W = dims[2], OD = dims[3], OH = dims[4], OW = dims[5];
    const long DD = dims[6], DH = dims[7], DW = dims[8];
    const long out_plane = OD * OH * OW;
    const long plane = (long)i / out_plane;
    const long o = (long)i - plane * out_plane;
    const long ow = o % OW, oh = (o / OW) % OH, od = o / (OW * OH);
    const size_t base = (size_t)plane * (size_t)(dims[0] * H * W);
    const long d0 = lo[od], h0 = lo[OD + oh], w0 = lo[OD + OH + ow];
    // a window where nothing beats the lowest value reports its first in-bounds tap
    long best_at = (d0 * H + h0) * W + w0;
    int won = 0;
    key best = LOWEST;
    for (long d = d0; d < hi[od]; d += DD)
        for (long h = h0; h < hi[OD + oh]; h += DH)
            for (long w = w0; w < hi[OD + OH + ow]; w += DW) {
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
    index[i] = best_at;
#endif
}
