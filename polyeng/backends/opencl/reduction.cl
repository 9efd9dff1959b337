// mean over the last axis of a contiguous (rows, n) view, summed in `real` (f32 for 16-bit
// storage). A run of elements is summed in blocks of BLOCK (16 lanes, BLOCK / 16 VLOADs, then a
// tree over the lanes) and the block totals are combined pairwise as they complete (a binary
// counter over a stack of subtotals), so the rounding error grows with log(n), not n, as in
// numpy's pairwise summation. 64-bit indices.
//
// mean_rows: one work item per row. For few long rows, partial_sums first sums chunks of a row
// (one work item each, CHUNK a power-of-two multiple of BLOCK) and mean_partials combines the
// chunk totals of a row pairwise.
#define STEPS 8
#define BLOCK (STEPS * VLANES)
#define DEPTH 64

// Push a finished subtotal: it absorbs the subtotals of its size below it (the counter's
// trailing one bits), so the stack holds at most one subtotal per power of two.
#define PUSH(stack, top, blocks, value) do {                     \
        real merged_ = (value);                                  \
        ++(blocks);                                              \
        for (ulong c_ = (blocks); !(c_ & 1); c_ >>= 1)           \
            merged_ += (stack)[--(top)];                         \
        (stack)[(top)++] = merged_;                              \
    } while (0)

inline real drain(real *stack, int top, real rest) {
    while (top) rest += stack[--top];   // smallest subtotals first
    return rest;
}

inline real pairwise_sum(__global const elem *x, const size_t start, const size_t count) {
    real stack[DEPTH];
    int top = 0;
    ulong blocks = 0;
    size_t k = 0;
    for (; k + BLOCK <= count; k += BLOCK) {
        realv acc = VLOAD(x, start + k);
        for (int s = 1; s < STEPS; ++s) acc += VLOAD(x, start + k + s * VLANES);
        PUSH(stack, top, blocks, hsum(acc));
    }
    realv acc = (realv)0;
    for (; k + VLANES <= count; k += VLANES) acc += VLOAD(x, start + k);
    real rest = hsum(acc);
    for (; k < count; ++k) rest += LOAD(x, start + k);
    return drain(stack, top, rest);
}

__kernel void mean_rows(__global const elem *x, __global elem *y, const ulong rows, const ulong n,
                        const real count) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    STORE(y, r, pairwise_sum(x, r * n, n) / count);
}

__kernel void partial_sums(__global const elem *x, __global real *partial, const ulong rows, const ulong n,
                           const ulong chunks, const ulong chunk) {
    const size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= chunks || r >= rows) return;
    const size_t start = c * chunk;
    partial[r * chunks + c] = pairwise_sum(x, r * n + start, min((size_t)chunk, (size_t)n - start));
}

__kernel void mean_partials(__global const real *partial, __global elem *y, const ulong rows,
                            const ulong chunks, const real count) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    real stack[DEPTH];
    int top = 0;
    ulong blocks = 0;
    for (size_t c = 0; c < chunks; ++c) PUSH(stack, top, blocks, partial[r * chunks + c]);
    STORE(y, r, drain(stack, top, (real)0) / count);
}

// sum of integers (ITYPE, the input's type) over the last axis of a contiguous (rows, n) view, in
// 64-bit unsigned words: they wrap around where long would overflow, with the bits numpy's int64
// sum has. The order of the additions cannot change an integer sum, so there are no blocks.
#ifdef ITYPE
inline ulong int_sum(__global const ITYPE *x, const size_t start, const size_t count) {
    ulong16 acc = (ulong16)0;
    size_t k = 0;
    for (; k + 16 <= count; k += 16) acc += as_ulong16(convert_long16(vload16(0, x + start + k)));
    const ulong8 a = acc.lo + acc.hi;
    const ulong4 b = a.lo + a.hi;
    const ulong2 c = b.lo + b.hi;
    ulong total = c.lo + c.hi;
    for (; k < count; ++k) total += (ulong)(long)x[start + k];
    return total;
}

__kernel void int_sum_rows(__global const ITYPE *x, __global long *y, const ulong rows, const ulong n) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    y[r] = as_long(int_sum(x, r * n, n));
}

__kernel void int_partial_sums(__global const ITYPE *x, __global ulong *partial, const ulong rows, const ulong n,
                               const ulong chunks, const ulong chunk) {
    const size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= chunks || r >= rows) return;
    const size_t start = c * chunk;
    partial[r * chunks + c] = int_sum(x, r * n + start, min((size_t)chunk, (size_t)n - start));
}

__kernel void int_sum_partials(__global const ulong *partial, __global long *y, const ulong rows,
                               const ulong chunks) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    ulong total = 0;
    for (size_t c = 0; c < chunks; ++c) total += partial[r * chunks + c];
    y[r] = as_long(total);
}
#endif
