// gelu, exact (erf) or tanh form; one work item per 16 elements (VLOAD), the last item taking
// what is left one by one; 64-bit indices.
// The tanh form is computed as v / (1 + exp(-2u)), the same value as 0.5 v (1 + tanh(u)): it
// reaches exact 0 and v where tanh saturates (a vector tanh that stops short of -1 would leave
// 1 + tanh(u) as rounding noise) and gives NaN for v = -inf as BASIC does.
#ifdef TANH_FORM
#define GELU(v) ((v) / ((real)1 + exp((real)-1.5957691216057308 * ((v) + (real)0.044715 * (v) * (v) * (v)))))
#else
#define GELU(v) ((real)0.5 * (v) * ((real)1 + erf((v) * (real)0.7071067811865476)))
#endif

__kernel void gelu(__global const elem *x, __global elem *y, const ulong n) {
    const size_t i = get_global_id(0) * VLANES;
    if (i >= n) return;
    if (i + VLANES <= n) {
        const realv v = VLOAD(x, i);
        VSTORE(y, i, GELU(v));
        return;
    }
    for (size_t k = i; k < n; ++k) {
        const real v = LOAD(x, k);
        STORE(y, k, GELU(v));
    }
}
