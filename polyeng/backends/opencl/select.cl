// select: y = cond ? then : else_, word by word, each operand read through its own strides
// (0 along broadcast axes) in the layout of strided.py: i < width (range dimension 0),
// j < height (dimension 1), r < rows (dimension 2).
// Named select_words: select is an OpenCL builtin. 64-bit offsets.
__kernel void select_words(__global const uchar *cond, __global const word *then, __global const word *other,
                           __global word *y, const ulong width, const ulong height, const ulong rows,
                           const long cs0, const long cs1, __global const long *cb,
                           const long ts0, const long ts1, __global const long *tb,
                           const long es0, const long es1, __global const long *eb,
                           const long ys0, const long ys1, __global const long *yb) {
    const size_t i = get_global_id(0), j = get_global_id(1), r = get_global_id(2);
    if (i >= width || j >= height || r >= rows) return;
    const long c = cb[r] + (long)j * cs1 + (long)i * cs0, t = tb[r] + (long)j * ts1 + (long)i * ts0;
    const long e = eb[r] + (long)j * es1 + (long)i * es0;
    y[yb[r] + (long)j * ys1 + (long)i * ys0] = cond[c] ? then[t] : other[e];
}

// The same when every operand steps by 0 or 1 along the width and the output by 1: one work
// item picks 16 words at once (an operand stepping by 0 is one word broadcast).
inline uchar16 cond16(__global const uchar *p, long step) {
    return step ? vload16(0, p) : (uchar16)(p[0]);
}
inline wordv words16(__global const word *p, long step) {
    return step ? vload16(0, p) : (wordv)(p[0]);
}

__kernel void select_words16(__global const uchar *cond, __global const word *then, __global const word *other,
                             __global word *y, const ulong width, const ulong height, const ulong rows,
                             const long cs0, const long cs1, __global const long *cb,
                             const long ts0, const long ts1, __global const long *tb,
                             const long es0, const long es1, __global const long *eb,
                             const long ys0, const long ys1, __global const long *yb) {
    const size_t i = get_global_id(0) * 16, j = get_global_id(1), r = get_global_id(2);
    if (i >= width || j >= height || r >= rows) return;
    const long c = cb[r] + (long)j * cs1 + (long)i * cs0, t = tb[r] + (long)j * ts1 + (long)i * ts0;
    const long e = eb[r] + (long)j * es1 + (long)i * es0, o = yb[r] + (long)j * ys1 + (long)i;
    if (i + 16 <= width) {
        const wordmask pick = to_wordmask(cond16(cond + c, cs0) != (uchar16)0);
        vstore16(select(words16(other + e, es0), words16(then + t, ts0), pick), 0, y + o);
        return;
    }
    for (size_t k = 0; k < width - i; ++k)
        y[o + k] = cond[c + k * cs0] ? then[t + k * ts0] : other[e + k * es0];
}
