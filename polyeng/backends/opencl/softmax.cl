// softmax and log_softmax over n of an (outer, n, inner) view: one work item per
// (outer, inner) lane, three passes over its n elements (max, sum of exps, write).
// fmax ignores NaN, but a NaN anywhere reaches the sum, so the lane becomes NaN, as it does
// for an all -inf lane (-inf - -inf) and one holding +inf (inf - inf): as BASIC.
__kernel void softmax(__global const elem *x, __global elem *y, const ulong outer, const ulong n,
                      const ulong inner, const int log_form) {
    const size_t lane = get_global_id(0);
    if (lane >= outer * inner) return;
    const size_t base = (lane / inner) * n * inner + lane % inner;
    real m = LOAD(x, base);
    for (size_t j = 1; j < n; ++j) m = fmax(m, LOAD(x, base + j * inner));
    real total = (real)0;
    for (size_t j = 0; j < n; ++j) total += exp(LOAD(x, base + j * inner) - m);
    if (log_form) {
        const real log_total = log(total);
        for (size_t j = 0; j < n; ++j) {
            const size_t i = base + j * inner;
            STORE(y, i, (LOAD(x, i) - m) - log_total);
        }
    } else {
        for (size_t j = 0; j < n; ++j) {
            const size_t i = base + j * inner;
            STORE(y, i, exp(LOAD(x, i) - m) / total);
        }
    }
}
