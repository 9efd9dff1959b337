// Strided copy: y[yb[r] + j*ys1 + i*ys0] = x[xb[r] + j*xs1 + i*xs0] for i < width, j < height
// and r < rows (range dimensions 0, 1, 2); row offsets come from host tables (strided.py).
// The unit-stride case is spelled out so the compiler sees contiguous accesses. 64-bit offsets.
__kernel void strided_copy(__global const word *x, __global word *y, const ulong width, const ulong height,
                           const ulong rows, const long xs0, const long xs1, __global const long *xb,
                           const long ys0, const long ys1, __global const long *yb) {
    const size_t i = get_global_id(0), j = get_global_id(1), r = get_global_id(2);
    if (i >= width || j >= height || r >= rows) return;
    if (xs0 == 1 && ys0 == 1)
        y[yb[r] + (long)j * ys1 + (long)i] = x[xb[r] + (long)j * xs1 + (long)i];
    else
        y[yb[r] + (long)j * ys1 + (long)i * ys0] = x[xb[r] + (long)j * xs1 + (long)i * xs0];
}

// The same copy when both operands are contiguous along the width: one work item moves 16
// words with one vector load and store (the last item of a row fewer, one by one).
__kernel void strided_copy16(__global const word *x, __global word *y, const ulong width, const ulong height,
                             const ulong rows, const long xs0, const long xs1, __global const long *xb,
                             const long ys0, const long ys1, __global const long *yb) {
    const size_t i = get_global_id(0) * 16, j = get_global_id(1), r = get_global_id(2);
    if (i >= width || j >= height || r >= rows) return;
    __global const word *from = x + xb[r] + (long)j * xs1;
    __global word *to = y + yb[r] + (long)j * ys1;
    if (i + 16 <= width) {
        vstore16(vload16(0, from + i), 0, to + i);
        return;
    }
    for (size_t k = i; k < width; ++k) to[k] = from[k];
}
