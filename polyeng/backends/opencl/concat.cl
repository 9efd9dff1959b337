// concat: element i of a piece (rows of `width` elements) lands in row i / width of the
// output (rows of `total`), `offset` elements in; 64-bit indices.
__kernel void concat_piece(__global const word *x, __global word *y, const ulong n, const ulong width,
                           const ulong total, const ulong offset) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const ulong row = i / width;
    y[row * total + offset + (i - row * width)] = x[i];
}
