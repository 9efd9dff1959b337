// permute_contiguous: output element i reads the input element at the offset its
// coordinates give through the permuted input strides (in elements); 64-bit offsets.
__kernel void permute(__global const word *x, __global word *y, const ulong n, const int ndim,
                      __global const long *shape, __global const long *strides) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    ulong rem = i;
    long offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        const ulong s = (ulong)shape[d];
        offset += (long)(rem % s) * strides[d];
        rem /= s;
    }
    y[i] = x[offset];
}
