"""lstm in numpy: per layer and direction, one matmul projects every time step's input, then
a loop over time steps applies the recurrence to the whole batch at once."""
import numpy as np

from .._blas_threads import blas_threads


def _sigmoid(v):
    # exp(-v) overflows to inf for very negative v, and 1 / (1 + inf) = 0 is the right answer
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-v))


def _run_direction(projected, w_hh, h, c, reverse: bool, out):
    """The recurrence of one direction. ``projected`` is (L, N, 4H): x_t @ w_ih.T + biases;
    ``out`` (L, N, H) receives every step's h. Returns the last (h, c)."""
    hidden = h.shape[-1]
    w_hh_t = w_hh.T
    steps = range(projected.shape[0] - 1, -1, -1) if reverse else range(projected.shape[0])
    with blas_threads(h.size * w_hh.shape[0], h.shape[0] == 1):   # one step's product
        for t in steps:
            gates = projected[t] + h @ w_hh_t
            i = _sigmoid(gates[:, :hidden])
            f = _sigmoid(gates[:, hidden:2 * hidden])
            g = np.tanh(gates[:, 2 * hidden:3 * hidden])
            o = _sigmoid(gates[:, 3 * hidden:])
            c = f * c + i * g
            h = o * np.tanh(c)
            out[t] = h
    return h, c


def lstm(p, x, params, h0, c0, batch_first, bidirectional):
    shape = p.geometry
    dtype = x.dtype
    seq = x[:, None, :] if shape.unbatched else x
    axes = shape.time_major_axes
    if axes is not None:
        seq = seq.transpose(axes)
    # states as (layers * directions, N, H), whatever the caller's layout
    batched_state = (shape.num_layers * shape.num_directions, shape.batch, shape.hidden_size)
    h0 = np.zeros(batched_state, dtype) if h0 is None else h0.reshape(batched_state)
    c0 = np.zeros(batched_state, dtype) if c0 is None else c0.reshape(batched_state)
    h_n = np.empty(batched_state, dtype)
    c_n = np.empty(batched_state, dtype)
    hidden = shape.hidden_size
    layer_input = seq
    for layer in range(shape.num_layers):
        layer_out = np.empty((shape.seq_len, shape.batch, shape.num_directions * hidden), dtype)
        for direction in range(shape.num_directions):
            k = shape.param_index(layer, direction)
            w_ih, w_hh, b_ih, b_hh = params[k]
            with blas_threads(layer_input.size * w_ih.shape[0], shape.batch == 1):
                projected = layer_input @ w_ih.T
            for bias in (b_ih, b_hh):
                if bias is not None:
                    projected += bias
            out = layer_out[:, :, direction * hidden:(direction + 1) * hidden]
            h_n[k], c_n[k] = _run_direction(projected, w_hh, h0[k], c0[k], direction == 1, out)
        layer_input = layer_out
    y = layer_input
    if axes is not None:
        y = np.ascontiguousarray(y.transpose(axes))
    if shape.unbatched:
        y, h_n, c_n = y[:, 0, :], h_n[:, 0, :], c_n[:, 0, :]
    return y, (h_n, c_n)
