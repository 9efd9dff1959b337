"""The layer loop lstm and gru share in numpy: per layer and direction, one matmul projects every
time step's input, then the op's recurrence runs over the time steps on the whole batch at once."""
import numpy as np

from .._blas_threads import blas_threads


def sigmoid(v):
    # exp(-v) overflows to inf for very negative v, and 1 / (1 + inf) = 0 is the right answer
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-v))


def steps(seq_len: int, reverse: bool):
    return range(seq_len - 1, -1, -1) if reverse else range(seq_len)


def run_layers(shape, x, params, initial: tuple, direction):
    """y and the final states of every layer and direction, in the caller's layout.

    ``initial`` holds each state the op carries (h0, and lstm's c0), None for zeros;
    ``direction(projected, entry, states, reverse, out)`` runs one direction's recurrence:
    ``projected`` (L, N, gates*H) is ``x_t @ w_ih.T`` (no bias), ``entry`` that direction's
    ``(w_ih, w_hh, b_ih, b_hh)``, ``states`` its initial states (N, H); it writes every step's
    h into ``out`` (L, N, H) and returns the final states."""
    dtype = x.dtype
    seq = x[:, None, :] if shape.unbatched else x
    axes = shape.time_major_axes
    if axes is not None:
        seq = seq.transpose(axes)
    # states as (layers * directions, N, H), whatever the caller's layout
    batched_state = (shape.num_layers * shape.num_directions, shape.batch, shape.hidden_size)
    initial = [np.zeros(batched_state, dtype) if s is None else s.reshape(batched_state) for s in initial]
    final = [np.empty(batched_state, dtype) for _ in initial]
    hidden = shape.hidden_size
    layer_input = seq
    for layer in range(shape.num_layers):
        layer_out = np.empty((shape.seq_len, shape.batch, shape.num_directions * hidden), dtype)
        for d in range(shape.num_directions):
            k = shape.param_index(layer, d)
            w_ih = params[k][0]
            with blas_threads(layer_input.size * w_ih.shape[0], shape.batch == 1):
                projected = layer_input @ w_ih.T
            out = layer_out[:, :, d * hidden:(d + 1) * hidden]
            ends = direction(projected, params[k], [s[k] for s in initial], d == 1, out)
            for state, end in zip(final, ends):
                state[k] = end
        layer_input = layer_out
    y = layer_input
    if axes is not None:
        y = np.ascontiguousarray(y.transpose(axes))
    if shape.unbatched:
        y, final = y[:, 0, :], [s[:, 0, :] for s in final]
    return y, final
