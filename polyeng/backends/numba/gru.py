"""gru on NUMBA: numpy's BLAS does the matrix products, JIT kernels per time step do the rest.

With ``reset_after=True`` in f32 and f64, where numpy's BLAS is OpenBLAS, a layer is instead one
compiled call, as lstm's (``_recurrence_loop.py``): each step split in parts of hidden units over
numba's threads (or the layer in lanes of batch rows and directions), a part's ``x_t @ w_ih.T``
and ``h @ w_hh.T`` for its r, z and n gates kept apart (r scales the second's n part).
``reset_after=False`` (r scales h before its product with ``w_hn``, a second product inside the
step) and 16-bit recurrent weights at small batches keep the step-by-step path described below.

As lstm (``lstm.py``, whose layer loop, projection and 16-bit handling are ``_recurrent``'s):
per layer, one BLAS call projects every time step's input for both directions at once; per
time step, one BLAS call multiplies the hidden states of every direction by their ``w_hh.T``
and ``_step`` fuses the rest: the projection and the biases, the gate activations, the new
state and the writes of ``h`` and ``y``, read and written in the caller's layout. The kernels
are serial for lstm's reason (they alternate with BLAS calls whose threads are still spinning).

With ``reset_after=False`` the reset gate scales h before its product with ``w_hn``, so a
step is two products: ``h @ [w_hr; w_hz].T``, then ``_reset`` (r and z; ``r * h``), then
``(r * h) @ w_hn.T`` and ``_update`` (n and the new state).

Biases: b_ih and the r and z parts of b_hh are summed into one vector added to the
projection; b_hn is added to ``w_hn h`` before r scales it (with ``reset_after=False``,
where r scales h instead, it is summed with the rest).
"""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ...engine import dtypes as dt
from .._blas_threads import blas_threads
from . import _gemm, _recurrence_loop
from ._f32_path import _to_f32
from ._gemv import gemv
from ._mathfn import sigmoid, tanh
from ._recurrent import f32_entries, projection, rounded, run_layers, stacked_projection, stacked_t, \
    stored_recurrence
from ._runtime import jit, launch
from ._storage import kernel_view


@jit
def _step(gates, projected, bias, bias_hn, h, y, step, seq_len, time_stride, batch_stride):
    """One time step of every direction. ``gates`` (D, N, 3H) holds ``h @ w_hh.T``;
    ``projected`` (rows, D*3H) and ``y`` (rows, D*H) are indexed by row
    ``t * time_stride + n * batch_stride``; direction 1 runs backwards in time."""
    directions, batch, three_hidden = gates.shape
    hidden = three_hidden // 3
    for item in range(directions * batch):
        d = item // batch
        n = item - d * batch
        t = step if d == 0 else seq_len - 1 - step
        row = t * time_stride + n * batch_stride
        g_row = gates[d, n]
        p_row = projected[row, d * three_hidden:(d + 1) * three_hidden]
        b_row = bias[d * three_hidden:(d + 1) * three_hidden]
        bn_row = bias_hn[d * hidden:(d + 1) * hidden]
        h_row = h[d, n]
        y_row = y[row, d * hidden:(d + 1) * hidden]
        # simple loops, each over few arrays, so that every one vectorizes (see lstm's _step)
        for k in range(2 * hidden):
            g_row[k] += p_row[k] + b_row[k]
        for j in range(hidden):
            g_row[2 * hidden + j] += bn_row[j]
        for j in range(hidden):
            r_gate = sigmoid(g_row[j])
            z_gate = sigmoid(g_row[hidden + j])
            n_gate = tanh(p_row[2 * hidden + j] + b_row[2 * hidden + j] + r_gate * g_row[2 * hidden + j])
            y_row[j] = n_gate + z_gate * (h_row[j] - n_gate)
        h[d, n] = y_row


@jit
def _reset(gates, projected, bias, h, reset_h, step, seq_len, time_stride, batch_stride):
    """The first half of a ``reset_after=False`` step: ``gates`` (D, N, 2H) holds
    ``h @ [w_hr; w_hz].T`` and receives the pre-activations of r and z; ``reset_h`` (D, N, H)
    receives ``r * h``."""
    directions, batch, two_hidden = gates.shape
    hidden = two_hidden // 2
    for item in range(directions * batch):
        d = item // batch
        n = item - d * batch
        t = step if d == 0 else seq_len - 1 - step
        row = t * time_stride + n * batch_stride
        g_row = gates[d, n]
        p_row = projected[row, d * 3 * hidden:d * 3 * hidden + two_hidden]
        b_row = bias[d * 3 * hidden:d * 3 * hidden + two_hidden]
        h_row = h[d, n]
        rh_row = reset_h[d, n]
        for k in range(two_hidden):
            g_row[k] += p_row[k] + b_row[k]
        for j in range(hidden):
            rh_row[j] = sigmoid(g_row[j]) * h_row[j]


@jit
def _update(gates, new_gates, projected, bias, h, y, step, seq_len, time_stride, batch_stride):
    """The second half of a ``reset_after=False`` step: ``new_gates`` (D, N, H) holds
    ``(r * h) @ w_hn.T``; n, the new h and this step's y from it and z's pre-activation."""
    directions, batch, two_hidden = gates.shape
    hidden = two_hidden // 2
    for item in range(directions * batch):
        d = item // batch
        n = item - d * batch
        t = step if d == 0 else seq_len - 1 - step
        row = t * time_stride + n * batch_stride
        g_row = gates[d, n]
        ng_row = new_gates[d, n]
        p_row = projected[row, d * 3 * hidden + two_hidden:(d + 1) * 3 * hidden]
        b_row = bias[d * 3 * hidden + two_hidden:(d + 1) * 3 * hidden]
        h_row = h[d, n]
        y_row = y[row, d * hidden:(d + 1) * hidden]
        for j in range(hidden):
            z_gate = sigmoid(g_row[hidden + j])
            n_gate = tanh(p_row[j] + b_row[j] + ng_row[j])
            y_row[j] = n_gate + z_gate * (h_row[j] - n_gate)
        h[d, n] = y_row


def _biases(entries, dtype, reset_after: bool):
    """(b_ih + b_hh, less b_hn when ``reset_after``) for every direction side by side (D*3H), and
    b_hn (D*H), zeros where absent."""
    three_hidden = entries[0][1].shape[0]
    hidden = three_hidden // 3
    bias = np.zeros(len(entries) * three_hidden, dtype)
    bias_hn = np.zeros(len(entries) * hidden, dtype)
    for d, (_, _, b_ih, b_hh) in enumerate(entries):
        if b_ih is not None:
            bias[d * three_hidden:(d + 1) * three_hidden] += _to_f32(b_ih)
        if b_hh is not None:
            b_hh = _to_f32(b_hh)
            summed = 3 * hidden if not reset_after else 2 * hidden
            bias[d * three_hidden:d * three_hidden + summed] += b_hh[:summed]
            bias_hn[d * hidden:(d + 1) * hidden] = b_hh[2 * hidden:]
    return bias, bias_hn


def _layer(shape, reset_after: bool):
    seq_len, batch = shape.seq_len, shape.batch
    time_stride, batch_stride = shape.row_strides
    rows = (seq_len, time_stride, batch_stride)

    def run(layer_input, entries, states, y_rows, dtype):
        (h,) = states
        dirs, hidden = len(entries), shape.hidden_size
        stored = dtype == dt.float32 and stored_recurrence(entries, batch)
        if stored:
            projected = projection(layer_input, entries)
            w_hh = [kernel_view(e[1]) for e in entries]
        else:
            if dtype == dt.float32:
                entries = f32_entries(entries)
            if reset_after and _recurrence_loop.available(dtype):
                return _recurrence_loop.run_layer(layer_input, entries, h, None, y_rows, dtype, shape, 3)
            projected = stacked_projection(layer_input, entries, dtype)
            w_hh = [e[1] for e in entries]
        bias, bias_hn = _biases(entries, dtype, reset_after)
        # one step's products: a BLAS call of their own on few threads (none for the JIT kernel)
        threads = nullcontext() if stored else blas_threads(dirs * batch * 3 * hidden * hidden, batch == 1)
        if reset_after:
            gates = np.empty((dirs, batch, 3 * hidden), dtype)
            product = _product(stored, h, w_hh, gates, batch)
            with threads:
                for step in range(seq_len):
                    product()
                    _step(gates, projected, bias, bias_hn, h, y_rows, step, *rows)
            return
        gates, new_gates = np.empty((dirs, batch, 2 * hidden), dtype), np.empty((dirs, batch, hidden), dtype)
        reset_h = np.empty((dirs, batch, hidden), dtype)
        gate_product = _product(stored, h, [w[:2 * hidden] for w in w_hh], gates, batch)
        new_product = _product(stored, reset_h, [w[2 * hidden:] for w in w_hh], new_gates, batch)
        with threads:
            for step in range(seq_len):
                gate_product()
                _reset(gates, projected, bias, h, reset_h, step, *rows)
                new_product()
                _update(gates, new_gates, projected, bias, h, y_rows, step, *rows)
    return run


def _product(stored: bool, left, weights, out, batch):
    """A call computing ``out[d] = left[d] @ weights[d].T`` for every direction d: 16-bit weights
    read as stored by the JIT matrix-vector kernel, the others by BLAS, each ``w.T`` stacked once."""
    if stored:
        busy = _gemm.work_bytes(batch * weights[0].size)

        def product():
            for d, w in enumerate(weights):
                launch(gemv, busy, left[d], w, out[d])
        return product
    transposed = stacked_t(weights)
    if len(weights) == 1:
        return lambda: np.matmul(left[0], transposed[0], out=out[0])
    return lambda: np.matmul(left, transposed, out=out)


def gru(p, x, params, h0, reset_after, **_):
    y, (h_n,) = run_layers(p, x, params, (h0,), _layer(p.geometry, reset_after))
    return tuple(rounded(p, [y, h_n]))
