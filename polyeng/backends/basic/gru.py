"""gru in numpy: per layer and direction, one matmul projects every time step's input, then
a loop over time steps applies the recurrence to the whole batch at once (``_recurrent``)."""
import numpy as np

from .._blas_threads import blas_threads
from ._recurrent import run_layers, sigmoid, steps


def _direction(reset_after: bool):
    def run(projected, entry, states, reverse: bool, out):
        """One direction's recurrence; ``out`` (L, N, H) receives every step's h. Returns the last h."""
        _, w_hh, b_ih, b_hh = entry
        if b_ih is not None:
            projected += b_ih
        (h,) = states
        hidden = h.shape[-1]
        w_hh_t = w_hh.T
        b_hh = np.zeros(3 * hidden, w_hh.dtype) if b_hh is None else b_hh
        with blas_threads(h.size * w_hh.shape[0], h.shape[0] == 1):   # one step's product
            for t in steps(projected.shape[0], reverse):
                x_part = projected[t]
                if reset_after:   # PyTorch's: r scales the recurrent product, its bias included
                    h_part = h @ w_hh_t + b_hh
                    r = sigmoid(x_part[:, :hidden] + h_part[:, :hidden])
                    z = sigmoid(x_part[:, hidden:2 * hidden] + h_part[:, hidden:2 * hidden])
                    n = np.tanh(x_part[:, 2 * hidden:] + r * h_part[:, 2 * hidden:])
                else:             # r scales h before the product
                    h_part = h @ w_hh_t[:, :2 * hidden] + b_hh[:2 * hidden]
                    r = sigmoid(x_part[:, :hidden] + h_part[:, :hidden])
                    z = sigmoid(x_part[:, hidden:2 * hidden] + h_part[:, hidden:])
                    n = np.tanh(x_part[:, 2 * hidden:] + ((r * h) @ w_hh_t[:, 2 * hidden:] + b_hh[2 * hidden:]))
                h = n + z * (h - n)   # (1 - z) * n + z * h, as PyTorch writes it
                out[t] = h
        return (h,)
    return run


def gru(p, x, params, h0, batch_first, bidirectional, reset_after):
    y, (h_n,) = run_layers(p.geometry, x, params, (h0,), _direction(reset_after))
    return y, h_n
