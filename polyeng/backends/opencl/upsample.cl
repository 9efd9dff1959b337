// upsample_nearest and upsample_bilinear2d over 3-D ranges: dimension 0 counts runs of RUN
// adjacent output columns, dimension 1 rows, dimension 2 planes (N*C, times the output depth
// for nearest). A work item first settles what is the same for its whole run (source row,
// plane, row weights), then walks the run: that per-row work, which a CPU device would
// repeat for every work item, is paid once per RUN outputs, and the walk reads the column
// tables (or applies the column rule) and writes the output contiguously. No per-element division.
// Source positions come from the host (polyeng.ops.upsample): for bilinear as tables, one
// entry per output position along each dim (int32: a spatial dim is below 2**31); for nearest
// as each dim's rule, computed here (a table would outgrow the output for a long 1-D row).
// 64-bit offsets.
#define RUN 16

// nearest: each output word copies the input word at the rules' source positions. `depth` is
// the output depth (1 for 1 and 2 spatial dims); an input plane holds `in_plane` words, a
// depth slice `in_slice`, a row `iw`. REPEAT (1, 2 or 4; 0 otherwise) says the columns are
// `w / REPEAT`: a whole run is then one vector load, a shuffle and one vector store.
#if WORD_BYTES == 8
typedef ulong16 word16;
#elif WORD_BYTES == 4
typedef uint16 word16;
#elif WORD_BYTES == 2
typedef ushort16 word16;
#else
typedef uchar16 word16;
#endif

// The input position output `i` copies along a dim, as NearestAxis.sources: i >> shift for
// shift >= 0, else min(floor(i * step), last) with i and the product in f32 (correctly rounded
// in OpenCL C, so the same positions as numpy's). `last` is the largest position the dim reads.
inline size_t source(const size_t i, const float step, const int shift, const uint last) {
    return shift >= 0 ? i >> shift : min((size_t)floor((float)i * step), (size_t)last);
}

__kernel void upsample_nearest(__global const word *restrict x, __global word *restrict y,
                               const ulong ow, const ulong oh, const ulong depth, const ulong planes,
                               const ulong iw, const ulong in_slice, const ulong in_plane,
                               const float d_step, const int d_shift, const uint d_last,
                               const float h_step, const int h_shift, const uint h_last,
                               const float w_step, const int w_shift, const uint w_last) {
    const size_t start = get_global_id(0) * RUN, h = get_global_id(1), z = get_global_id(2);
    if (start >= ow || h >= oh || z >= planes) return;
    const size_t p = depth == 1 ? z : z / depth, d = z - p * depth;
    __global const word *src = x + p * in_plane + source(d, d_step, d_shift, d_last) * in_slice
                               + source(h, h_step, h_shift, h_last) * iw;
    __global word *dst = y + (z * oh + h) * ow;
#if REPEAT
    if (start + RUN <= ow) {
        __global const word *from = src + start / REPEAT;
#if REPEAT == 1
        vstore16(vload16(0, from), 0, dst + start);
#elif REPEAT == 2
        vstore16(shuffle(vload8(0, from), (word16)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)), 0, dst + start);
#else
        vstore16(shuffle(vload4(0, from), (word16)(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)), 0, dst + start);
#endif
        return;
    }
#endif
    const size_t end = min(start + RUN, (size_t)ow);
    for (size_t w = start; w < end; ++w)
        dst[w] = src[source(w, w_step, w_shift, w_last)];
}

// bilinear in two passes, BASIC's (and torch's) order and rounding: the source rows any output
// reads, interpolated along W into `rows` (`real`: f32, f64 for f64 data), then pairs of
// those rows interpolated along H into the output. No contraction into fused multiply-adds,
// so every product and sum rounds as numpy's do.
// `index` holds the used source rows (`used` entries), each output row's two slots among
// them (oh entries each), then the source columns w0, w1 (ow each); `weight` holds lh0, lh1
// (oh each) then lw0, lw1 (ow each).
#pragma OPENCL FP_CONTRACT OFF

__kernel void bilinear_rows(__global const elem *restrict x, __global real *restrict rows,
                            const ulong ow, const ulong oh, const ulong used, const ulong planes,
                            const ulong iw, const ulong in_plane,
                            __global const int *restrict index, __global const real *restrict weight) {
    const size_t start = get_global_id(0) * RUN, r = get_global_id(1), p = get_global_id(2);
    if (start >= ow || r >= used || p >= planes) return;
    const size_t src = p * in_plane + (size_t)index[r] * iw;
    __global real *dst = rows + (p * used + r) * ow;
    __global const int *w0 = index + used + 2 * oh, *w1 = w0 + ow;
    __global const real *a0 = weight + 2 * oh, *a1 = a0 + ow;
    const size_t end = min(start + RUN, (size_t)ow);
    for (size_t w = start; w < end; ++w)
        dst[w] = LOAD(x, src + (size_t)w0[w]) * a0[w] + LOAD(x, src + (size_t)w1[w]) * a1[w];
}

__kernel void bilinear_cols(__global const real *restrict rows, __global elem *restrict y,
                            const ulong ow, const ulong oh, const ulong used, const ulong planes,
                            __global const int *restrict index, __global const real *restrict weight) {
    const size_t start = get_global_id(0) * RUN, h = get_global_id(1), p = get_global_id(2);
    if (start >= ow || h >= oh || p >= planes) return;
    __global const real *top = rows + (p * used + (size_t)index[used + h]) * ow;
    __global const real *bottom = rows + (p * used + (size_t)index[used + oh + h]) * ow;
    const size_t out = (p * oh + h) * ow;
    const real b0 = weight[h], b1 = weight[oh + h];
    const size_t end = min(start + RUN, (size_t)ow);
    for (size_t w = start; w < end; ++w)
        STORE(y, out + w, top[w] * b0 + bottom[w] * b1);
}
