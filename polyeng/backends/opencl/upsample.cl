// upsample_nearest over (N*C, D, H, W) with output sizes od/oh/ow and input sizes id/ih/iw:
// each output word copies the input word at the source indices the host tables give
// (int64, one table per spatial dim); 64-bit indices.
__kernel void upsample_nearest(__global const word *x, __global word *y, const ulong n,
                               const ulong od, const ulong oh, const ulong ow,
                               const ulong id, const ulong ih, const ulong iw,
                               __global const long *d_index, __global const long *h_index,
                               __global const long *w_index) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    ulong rem = i;
    const ulong w = rem % ow; rem /= ow;
    const ulong h = rem % oh; rem /= oh;
    const ulong d = rem % od; rem /= od;
    y[i] = x[((rem * id + (ulong)d_index[d]) * ih + (ulong)h_index[h]) * iw + (ulong)w_index[w]];
}
