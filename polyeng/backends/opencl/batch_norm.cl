// batch_norm (inference): y = x * scale[c] + shift[c] for the plane's channel c, in `real`, rounded
// once to the storage type. A work item takes one element; dimension 1 is the plane (n, c).
__kernel void batch_norm(__global const elem *x, __global elem *y, __global const real *scale,
                         __global const real *shift, const ulong size, const uint channels) {
    const size_t i = get_global_id(0), plane = get_global_id(1);
    if (i >= size) return;
    const uint c = plane % channels;
    const size_t at = plane * size + i;
    STORE(y, at, LOAD(x, at) * scale[c] + shift[c]);
}
