// One lstm time step of every direction of a layer, after the recurrent GEMM: adds the input
// projection (biases included) to h @ w_hh.T, applies the gates, updates the cell and
// writes h, c and this step's output row. Work item (b, n, d): hidden units 16b .. 16b+15
// of batch row n in direction d, as one realv (exp and tanh then run on whole vectors);
// the units past the last multiple of 16 go one by one. Direction 1 reads the sequence
// backwards.
// Buffers: gates (D, N, 4H) and the states h, c (from state_off: (D, N, H)) in `real`;
// projected (rows, D*4H) in `real` and y (rows, D*H) in `elem` (the caller's storage for the
// last layer, `real` for the others) are indexed by row t * time_stride + n * batch_stride,
// the caller's layout, so the sequence is never transposed.
#define LSTM_SIGMOID(v) ((real)1 / ((real)1 + exp(-(v))))   // exp overflow gives 0, as BASIC

__kernel void lstm_step(__global const real *gates, __global const real *projected, __global real *h,
                        __global real *c, __global elem *y, const ulong state_off, const ulong batch,
                        const ulong hidden, const ulong directions, const ulong seq_len, const ulong step,
                        const ulong time_stride, const ulong batch_stride) {
    const ulong j0 = get_global_id(0) * VLANES, n = get_global_id(1), d = get_global_id(2);
    if (j0 >= hidden || n >= batch || d >= directions) return;
    const ulong t = d == 0 ? step : seq_len - 1 - step;
    const ulong row = t * time_stride + n * batch_stride;
    __global const real *g = gates + (d * batch + n) * 4 * hidden;
    __global const real *p = projected + (row * directions + d) * 4 * hidden;
    const ulong s = state_off + (d * batch + n) * hidden;
    const ulong o = (row * directions + d) * hidden;
    if (j0 + VLANES <= hidden) {
        const realv i_gate = LSTM_SIGMOID(vload16(0, g + j0) + vload16(0, p + j0));
        const realv f_gate = LSTM_SIGMOID(vload16(0, g + hidden + j0) + vload16(0, p + hidden + j0));
        const realv g_gate = tanh(vload16(0, g + 2 * hidden + j0) + vload16(0, p + 2 * hidden + j0));
        const realv o_gate = LSTM_SIGMOID(vload16(0, g + 3 * hidden + j0) + vload16(0, p + 3 * hidden + j0));
        const realv cell = f_gate * vload16(0, c + s + j0) + i_gate * g_gate;
        const realv out = o_gate * tanh(cell);
        vstore16(cell, 0, c + s + j0);
        vstore16(out, 0, h + s + j0);
        VSTORE(y, o + j0, out);
        return;
    }
    for (ulong j = j0; j < hidden; ++j) {
        const real i_gate = LSTM_SIGMOID(g[j] + p[j]);
        const real f_gate = LSTM_SIGMOID(g[hidden + j] + p[hidden + j]);
        const real g_gate = tanh(g[2 * hidden + j] + p[2 * hidden + j]);
        const real o_gate = LSTM_SIGMOID(g[3 * hidden + j] + p[3 * hidden + j]);
        const real cell = f_gate * c[s + j] + i_gate * g_gate;
        const real out = o_gate * tanh(cell);
        c[s + j] = cell;
        h[s + j] = out;
        STORE(y, o + j, out);
    }
}
