// One gru time step of every direction of a layer, after the recurrent GEMM: with the input
// projection (b_ih included) and b_hh, applies the gates and writes h and this step's output
// row. Work item (b, n, d): hidden units 16b .. 16b+15 of batch row n in direction d, as one
// realv (exp and tanh then run on whole vectors); the units past the last multiple of 16 go
// one by one. Direction 1 reads the sequence backwards.
// Buffers: gates (D, N, 3H) in `real`, each row r | z | n; bias_hh (D*3H) and the state h (from
// state_off: (D, N, H)) in `real`; projected (rows, D*3H) in `real` and y (rows, D*H) in `elem`
// (the caller's storage for the last layer, `real` for the others) are indexed by row
// t * time_stride + n * batch_stride, the caller's layout, so the sequence is never transposed.
// reset_after (PyTorch's GRU): the n part of gates holds w_hn h, and r scales it with b_hn.
// Otherwise gru_reset wrote r * h, and the n part holds w_hn (r * h).
#define GRU_SIGMOID(v) ((real)1 / ((real)1 + exp(-(v))))   // exp overflow gives 0, as BASIC

__kernel void gru_step(__global const real *gates, __global const real *projected,
                       __global const real *bias_hh, __global real *h, __global elem *y, const ulong state_off,
                       const ulong batch, const ulong hidden, const ulong directions, const ulong seq_len,
                       const ulong step, const ulong time_stride, const ulong batch_stride, const int reset_after) {
    const ulong j0 = get_global_id(0) * VLANES, n = get_global_id(1), d = get_global_id(2);
    if (j0 >= hidden || n >= batch || d >= directions) return;
    const ulong t = d == 0 ? step : seq_len - 1 - step;
    const ulong row = t * time_stride + n * batch_stride;
    __global const real *g = gates + (d * batch + n) * 3 * hidden;
    __global const real *p = projected + (row * directions + d) * 3 * hidden;
    __global const real *b = bias_hh + d * 3 * hidden;
    const ulong s = state_off + (d * batch + n) * hidden;
    const ulong o = (row * directions + d) * hidden;
    if (j0 + VLANES <= hidden) {
        const realv z_gate = GRU_SIGMOID(vload16(0, g + hidden + j0) + vload16(0, p + hidden + j0)
                                         + vload16(0, b + hidden + j0));
        realv recurrent = vload16(0, g + 2 * hidden + j0) + vload16(0, b + 2 * hidden + j0);
        if (reset_after)
            recurrent *= GRU_SIGMOID(vload16(0, g + j0) + vload16(0, p + j0) + vload16(0, b + j0));
        const realv n_gate = tanh(vload16(0, p + 2 * hidden + j0) + recurrent);
        const realv out = n_gate + z_gate * (vload16(0, h + s + j0) - n_gate);
        vstore16(out, 0, h + s + j0);
        VSTORE(y, o + j0, out);
        return;
    }
    for (ulong j = j0; j < hidden; ++j) {
        const real z_gate = GRU_SIGMOID(g[hidden + j] + p[hidden + j] + b[hidden + j]);
        real recurrent = g[2 * hidden + j] + b[2 * hidden + j];
        if (reset_after)
            recurrent *= GRU_SIGMOID(g[j] + p[j] + b[j]);
        const real n_gate = tanh(p[2 * hidden + j] + recurrent);
        const real out = n_gate + z_gate * (h[s + j] - n_gate);
        h[s + j] = out;
        STORE(y, o + j, out);
    }
}

// The first half of a step without reset_after: the r part of gates holds w_hr h; writes
// reset_h (D, N, H) = r * h, the left operand of the GEMM by w_hn that follows.
__kernel void gru_reset(__global const real *gates, __global const real *projected, __global const real *bias_hh,
                        __global const real *h, __global real *reset_h, const ulong state_off, const ulong batch,
                        const ulong hidden, const ulong directions, const ulong seq_len, const ulong step,
                        const ulong time_stride, const ulong batch_stride) {
    const ulong j0 = get_global_id(0) * VLANES, n = get_global_id(1), d = get_global_id(2);
    if (j0 >= hidden || n >= batch || d >= directions) return;
    const ulong t = d == 0 ? step : seq_len - 1 - step;
    const ulong row = t * time_stride + n * batch_stride;
    __global const real *g = gates + (d * batch + n) * 3 * hidden;
    __global const real *p = projected + (row * directions + d) * 3 * hidden;
    __global const real *b = bias_hh + d * 3 * hidden;
    const ulong s = state_off + (d * batch + n) * hidden;
    __global real *rh = reset_h + (d * batch + n) * hidden;
    if (j0 + VLANES <= hidden) {
        const realv r_gate = GRU_SIGMOID(vload16(0, g + j0) + vload16(0, p + j0) + vload16(0, b + j0));
        vstore16(r_gate * vload16(0, h + s + j0), 0, rh + j0);
        return;
    }
    for (ulong j = j0; j < hidden; ++j)
        rh[j] = GRU_SIGMOID(g[j] + p[j] + b[j]) * h[s + j];
}
