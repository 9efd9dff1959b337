// gelu, exact (erf) or tanh form, one work item per element; 64-bit indices.
__kernel void gelu(__global const elem *x, __global elem *y, const ulong n, const int tanh_form) {
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const real v = LOAD(x, i);
    real r;
    if (tanh_form) {
        const real k = (real)0.7978845608028654;   // sqrt(2 / pi)
        r = (real)0.5 * v * ((real)1 + tanh(k * (v + (real)0.044715 * v * v * v)));
    } else {
        r = (real)0.5 * v * ((real)1 + erf(v * (real)0.7071067811865476));
    }
    STORE(y, i, r);
}
