// layer_norm of a (rows, features) view, one work item per row, 16 contiguous elements at a
// time (VLOAD) and the rest of the row one by one: a pass for the mean, a pass for the biased
// variance of the centred values (two-pass, so a large mean costs no accuracy), and a pass
// writing (x - mean) / sqrt(var + eps) * weight + bias.
// weight and bias are in the compute type (f32, f64 for f64 x); absent ones are skipped, so
// y's signed zeros are kept. eps arrives rounded to `real`, as BASIC rounds it to the compute dtype.
__kernel void layer_norm(__global const elem *x, __global elem *y, const ulong rows, const ulong features,
                         __global const real *weight, __global const real *bias, const int has_weight,
                         const int has_bias, const real eps) {
    const size_t r = get_global_id(0);
    if (r >= rows) return;
    const size_t base = r * features, full = features / VLANES * VLANES;
    const real count = (real)features;
    // Summing x - x[0] makes the mean exact for a constant row (centred is then exactly 0,
    // not rounding noise that 1 / sqrt(eps) would amplify) and tighter in general.
    const real pivot = LOAD(x, base);
    realv tv = (realv)0;
    for (size_t j = 0; j < full; j += VLANES) tv += VLOAD(x, base + j) - pivot;
    real total = hsum(tv);
    for (size_t j = full; j < features; ++j) total += LOAD(x, base + j) - pivot;
    const real mean = pivot + total / count;
    realv sv = (realv)0;
    for (size_t j = 0; j < full; j += VLANES) {
        const realv centred = VLOAD(x, base + j) - mean;
        sv += centred * centred;
    }
    real square = hsum(sv);
    for (size_t j = full; j < features; ++j) {
        const real centred = LOAD(x, base + j) - mean;
        square += centred * centred;
    }
    const real std = sqrt(square / count + eps);
    for (size_t j = 0; j < full; j += VLANES) {
        realv v = (VLOAD(x, base + j) - mean) / std;
        if (has_weight) v *= vload16(0, weight + j);
        if (has_bias) v += vload16(0, bias + j);
        VSTORE(y, base + j, v);
    }
    for (size_t j = full; j < features; ++j) {
        real v = (LOAD(x, base + j) - mean) / std;
        if (has_weight) v *= weight[j];
        if (has_bias) v += bias[j];
        STORE(y, base + j, v);
    }
}
