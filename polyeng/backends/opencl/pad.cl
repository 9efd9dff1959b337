// pad as words (common.cl's `word`, WORD_BYTES wide): the output is `rows` rows of `positions`
// positions of `inner` words, along the last padded dim of the op's reduced plan (pad.py); the
// mode is a build option (PAD_REFLECT, PAD_REPLICATE, else constant). Work item (i, r) writes
// words [i * per * 16, (i + 1) * per * 16) of row r: it finds the source row through the outer
// dims (none in constant mode where one falls outside x: the row is `fill`), moves the words
// that read the source in order 16 at a time, and maps the padded ones at the row's ends.
// Offsets are 64-bit.
inline long pad_source(long p, long n) {
#if defined(PAD_REFLECT)
    return p < 0 ? -p : (p >= n ? 2 * (n - 1) - p : p);
#else
    return p < 0 ? 0 : (p >= n ? n - 1 : p);
#endif
}

__kernel void pad_words(__global const word *x, __global word *y, const ulong rows, const ulong positions,
                        const ulong inner, const ulong per, const uint outer, __global const long *in_shape,
                        __global const long *out_shape, __global const long *left, __global const long *in_strides,
                        const word fill) {
    const size_t r = get_global_id(1);
    const ulong width = positions * inner;
    const ulong first = (ulong)get_global_id(0) * per * 16;
    if (r >= rows || first >= width) return;
    const ulong stop = min(width, first + per * 16);
    __global word *to = y + r * width;
    long base = 0, rest = (long)r;
    for (int d = (int)outer - 1; d >= 0; --d) {
        const long q = rest / out_shape[d];
        long p = rest - q * out_shape[d] - left[d];
        rest = q;
        if (p < 0 || p >= in_shape[d]) {
#if defined(PAD_REFLECT) || defined(PAD_REPLICATE)
            p = pad_source(p, in_shape[d]);
#else
            for (ulong i = first; i < stop; ++i) to[i] = fill;
            return;
#endif
        }
        base += p * in_strides[d];
    }
    const long n = in_shape[outer], shift = left[outer];
    // words [lo, hi) of the row read x in order: word i reads x[offset + i]
    const long lo_pos = clamp(shift, 0L, (long)positions), hi_pos = clamp(shift + n, lo_pos, (long)positions);
    const ulong lo = (ulong)lo_pos * inner, hi = (ulong)hi_pos * inner;
    const long offset = base - shift * (long)inner;
    ulong i = first;
    if (i < lo || stop > hi) {   // some words of this item map one by one
        for (; i < stop; ++i) {
            if (i >= lo && i < hi) {
                to[i] = x[offset + (long)i];
                continue;
            }
#if defined(PAD_REFLECT) || defined(PAD_REPLICATE)
            const ulong pos = i / inner;
            to[i] = x[base + pad_source((long)pos - shift, n) * (long)inner + (long)(i - pos * inner)];
#else
            to[i] = fill;
#endif
        }
        return;
    }
    for (; i + 16 <= stop; i += 16) vstore16(vload16(0, x + (offset + (long)i)), 0, to + i);
    for (; i < stop; ++i) to[i] = x[offset + (long)i];
}
