// softmax and log_softmax over n of an (outer, n, inner) view, in three passes (max, sum of
// exps, write). fmax ignores NaN, but a NaN anywhere reaches the sum, so the row becomes NaN,
// as it does for an all -inf row (-inf - -inf) and one holding +inf (inf - inf): as BASIC.
//
// softmax_rows (inner == 1): one work item per row, 16 contiguous elements at a time (VLOAD),
// the rest of the row one by one.
// softmax_lanes (inner > 1): one work item per VLANES adjacent lanes of one outer index,
// reading the 16 lanes at once at every step along n (lanes past inner one by one). When N
// is defined (small n), the loops have a fixed count and unroll.
#ifdef N
#define COUNT N
#else
#define COUNT n
#endif

inline real finish(real v, real m, real scale, int log_form) {
    return log_form ? (v - m) - scale : exp(v - m) * scale;
}

__kernel void softmax_rows(__global const elem *x, __global elem *y, const ulong rows, const ulong n,
                           const int log_form) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    const size_t base = r * COUNT, full = COUNT / VLANES * VLANES;
    real m = -INFINITY;
    if (full) {
        realv mv = VLOAD(x, base);
        for (size_t j = VLANES; j < full; j += VLANES) mv = fmax(mv, VLOAD(x, base + j));
        m = hmax(mv);
    }
    for (size_t j = full; j < COUNT; ++j) m = fmax(m, LOAD(x, base + j));
    realv tv = (realv)0;
    for (size_t j = 0; j < full; j += VLANES) tv += exp(VLOAD(x, base + j) - m);
    real total = hsum(tv);
    for (size_t j = full; j < COUNT; ++j) total += exp(LOAD(x, base + j) - m);
    const real scale = log_form ? log(total) : (real)1 / total;
    for (size_t j = 0; j < full; j += VLANES) {
        const realv v = VLOAD(x, base + j);
        VSTORE(y, base + j, log_form ? (v - m) - scale : exp(v - m) * scale);
    }
    for (size_t j = full; j < COUNT; ++j) STORE(y, base + j, finish(LOAD(x, base + j), m, scale, log_form));
}

__kernel void softmax_lanes(__global const elem *x, __global elem *y, const ulong outer, const ulong n,
                            const ulong inner) {
    const size_t block = get_global_id(0), o = get_global_id(1);
    const size_t lane = block * VLANES;
    if (lane >= inner || o >= outer) return;
    const size_t base = o * COUNT * inner + lane;
    if (lane + VLANES <= inner) {
        realv m = VLOAD(x, base);
        for (size_t j = 1; j < COUNT; ++j) m = fmax(m, VLOAD(x, base + j * inner));
        realv total = (realv)0;
        for (size_t j = 0; j < COUNT; ++j) total += exp(VLOAD(x, base + j * inner) - m);
#ifdef LOG_FORM
        const realv scale = log(total);
        for (size_t j = 0; j < COUNT; ++j) VSTORE(y, base + j * inner, (VLOAD(x, base + j * inner) - m) - scale);
#else
        const realv scale = (realv)1 / total;
        for (size_t j = 0; j < COUNT; ++j) VSTORE(y, base + j * inner, exp(VLOAD(x, base + j * inner) - m) * scale);
#endif
        return;
    }
    for (size_t l = base; l < base + (inner - lane); ++l) {   // the last lanes, fewer than VLANES
        real m = LOAD(x, l);
        for (size_t j = 1; j < COUNT; ++j) m = fmax(m, LOAD(x, l + j * inner));
        real total = (real)0;
        for (size_t j = 0; j < COUNT; ++j) total += exp(LOAD(x, l + j * inner) - m);
#ifdef LOG_FORM
        const real scale = log(total);
        for (size_t j = 0; j < COUNT; ++j) STORE(y, l + j * inner, (LOAD(x, l + j * inner) - m) - scale);
#else
        const real scale = (real)1 / total;
        for (size_t j = 0; j < COUNT; ++j) STORE(y, l + j * inner, exp(LOAD(x, l + j * inner) - m) * scale);
#endif
    }
}
