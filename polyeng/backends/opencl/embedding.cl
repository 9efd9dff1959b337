// embedding: y[i, :] = weight[ids[i], :], rows moved as words (exact for every dtype). Work item
// (c, i) moves the words [CHUNK c, CHUNK (c + 1)) of row i, 16 at a time (the last ones of a
// row one by one): enough per item that a CPU device's per-item cost does not dominate.
// ID is the ids' type (int or long); ids were range-checked before the call. 64-bit offsets.
#define CHUNK 256

__kernel void embedding_rows(__global const ID *ids, __global const word *weight, __global word *y,
                             const ulong count, const ulong dim) {
    const size_t start = get_global_id(0) * CHUNK, i = get_global_id(1);
    if (start >= dim || i >= count) return;
    __global const word *from = weight + (long)ids[i] * (long)dim;
    __global word *to = y + (long)i * (long)dim;
    const size_t end = min((size_t)dim, start + CHUNK);
    size_t j = start;
    for (; j + 16 <= end; j += 16) vstore16(vload16(0, from + j), 0, to + j);
    for (; j < end; ++j) to[j] = from[j];
}
