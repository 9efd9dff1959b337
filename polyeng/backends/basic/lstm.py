"""lstm in numpy: per layer and direction, one matmul projects every time step's input, then
a loop over time steps applies the recurrence to the whole batch at once (``_recurrent``)."""
import numpy as np

from .._blas_threads import blas_threads
from ._recurrent import run_layers, sigmoid, steps


def _run_direction(projected, entry, states, reverse: bool, out):
    """The recurrence of one direction; ``out`` (L, N, H) receives every step's h. Returns the last (h, c)."""
    _, w_hh, b_ih, b_hh = entry
    for bias in (b_ih, b_hh):
        if bias is not None:
            projected += bias
    h, c = states
    hidden = h.shape[-1]
    w_hh_t = w_hh.T
    with blas_threads(h.size * w_hh.shape[0], h.shape[0] == 1):   # one step's product
        for t in steps(projected.shape[0], reverse):
            gates = projected[t] + h @ w_hh_t
            i = sigmoid(gates[:, :hidden])
            f = sigmoid(gates[:, hidden:2 * hidden])
            g = np.tanh(gates[:, 2 * hidden:3 * hidden])
            o = sigmoid(gates[:, 3 * hidden:])
            c = f * c + i * g
            h = o * np.tanh(c)
            out[t] = h
    return h, c


def lstm(p, x, params, h0, c0, batch_first, bidirectional):
    y, (h_n, c_n) = run_layers(p.geometry, x, params, (h0, c0), _run_direction)
    return y, (h_n, c_n)
