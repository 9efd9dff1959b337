// select: output element i takes then's word where cond's byte is nonzero, else else_'s; each
// operand is read through its own broadcast strides (in elements, 0 on broadcast axes), stored
// as three rows of ndim longs: cond, then, else_. Named select_words: select is an OpenCL builtin.
__kernel void select_words(__global const uchar *cond, __global const word *then, __global const word *other,
                           __global word *y, const ulong n, const int ndim,
                           __global const long *shape, __global const long *strides) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    ulong rem = i;
    long c = 0, t = 0, o = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        const ulong s = (ulong)shape[d];
        const long k = (long)(rem % s);
        rem /= s;
        c += k * strides[d];
        t += k * strides[ndim + d];
        o += k * strides[2 * ndim + d];
    }
    y[i] = cond[c] ? then[t] : other[o];
}
