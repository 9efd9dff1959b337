"""lstm on NUMBA: numpy's BLAS does the matrix products, one JIT kernel per time step does the rest.

Per layer, one BLAS call projects every time step's input for both directions at once
(``x @ [w_ih_fwd; w_ih_rev].T``). Per time step, one BLAS call multiplies the hidden states
of every direction by their ``w_hh.T`` into a preallocated buffer, and ``_step`` fuses what
follows: adding the projection and the biases, the gate activations, the cell update, and
the writes of ``h``, ``c`` and ``y``. The kernel reads the projection and writes ``y`` in
the caller's layout (time-major, batch-first or unbatched) through a row index, so no
transpose of the sequence is ever made, and each layer writes its output over the previous
one (the projection has already consumed it).

The step kernel is serial on purpose: it alternates with BLAS calls whose worker threads
are still spinning when it starts, and a parallel launch there contends with them (measured
several times slower on two cores than the serial kernel, which costs less than the step's
BLAS product).

With 16-bit storage the layer computes on f32 (h, c and the layer outputs stay f32; y, h_n
and c_n are rounded once at the end). Each 16-bit ``w_ih`` is read as stored by ``_gemm``; at
batch <= ``_gemm.GEMV_ROWS`` each 16-bit ``w_hh`` is too, by the JIT matrix-vector kernel
(``_gemv``) instead of BLAS, which halves the bytes every step reads. That kernel runs in
parallel: with no BLAS call between the steps, nothing else spins on the cores. Larger batches
and small weights widen the weights to f32 once per call and keep the BLAS steps.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._blas_threads import blas_threads
from . import _gemm
from ._cast import converted
from ._f32_path import _to_f32
from ._gemv import gemv
from ._mathfn import sigmoid, tanh
from ._runtime import jit, launch
from ._storage import kernel_view


@jit
def _step(gates, projected, bias, h, c, y, step, seq_len, time_stride, batch_stride):
    """One time step of every direction. ``gates`` (D, N, 4H) holds ``h @ w_hh.T``;
    ``projected`` (rows, D*4H) and ``y`` (rows, D*H) are indexed by row
    ``t * time_stride + n * batch_stride``; direction 1 runs backwards in time."""
    directions, batch, four_hidden = gates.shape
    hidden = four_hidden // 4
    for item in range(directions * batch):
        d = item // batch
        n = item - d * batch
        t = step if d == 0 else seq_len - 1 - step
        row = t * time_stride + n * batch_stride
        g_row = gates[d, n]
        p_row = projected[row, d * four_hidden:(d + 1) * four_hidden]
        b_row = bias[d * four_hidden:(d + 1) * four_hidden]
        c_row = c[d, n]
        y_row = y[row, d * hidden:(d + 1) * hidden]
        # three simple loops instead of one: each touches few enough arrays that LLVM's
        # runtime alias checks stay under its limit and every loop vectorizes
        for k in range(four_hidden):
            g_row[k] += p_row[k] + b_row[k]
        for j in range(hidden):
            i_gate = sigmoid(g_row[j])
            f_gate = sigmoid(g_row[hidden + j])
            g_gate = tanh(g_row[2 * hidden + j])
            o_gate = sigmoid(g_row[3 * hidden + j])
            cell = f_gate * c_row[j] + i_gate * g_gate
            c_row[j] = cell
            y_row[j] = o_gate * tanh(cell)
        h[d, n] = y_row


def _layer_weights(entries, dtype):
    """(w_ih.T for every direction side by side, w_hh.T stacked per direction, summed biases)."""
    w_ih_t = entries[0][0].T if len(entries) == 1 else np.concatenate([e[0] for e in entries]).T
    # a C-contiguous (H, 4H) right operand makes the small per-step product markedly faster in BLAS
    w_hh_t = np.ascontiguousarray(np.stack([e[1].T for e in entries]))
    return w_ih_t, w_hh_t, _bias(entries, dtype)


def _bias(entries, dtype):
    four_hidden = entries[0][1].shape[0]
    bias = np.zeros(len(entries) * four_hidden, dtype)
    for d, (_, _, b_ih, b_hh) in enumerate(entries):
        for b in (b_ih, b_hh):
            if b is not None:
                bias[d * four_hidden:(d + 1) * four_hidden] += _to_f32(b)
    return bias


def _projection(layer_input, entries):
    """Every time step's input times every direction's w_ih.T (f32), each 16-bit w_ih read as stored."""
    parts = []
    for w_ih in (e[0] for e in entries):
        if _gemm.native(layer_input, w_ih):
            parts.append(_gemm.product_t(layer_input, w_ih, None, dt.float32))
        else:
            with blas_threads(layer_input.size * w_ih.shape[0], layer_input.shape[0] == 1):
                parts.append(np.matmul(_to_f32(layer_input), _to_f32(w_ih).T))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _stored_recurrence(entries, batch) -> bool:
    """Whether every w_hh is 16-bit and the per-step product has few enough rows to read it as stored."""
    return batch <= _gemm.GEMV_ROWS and all(e[1].dtype in dt.SIXTEEN_BIT_FLOATS for e in entries)


def _lstm(p, x, params, h0, c0, **_):
    """y, h_n and c_n in the compute dtype (f32 for 16-bit storage, rounded by ``lstm``)."""
    shape = p.geometry
    dtype = np.dtype(np.float32) if p.dtype in dt.SIXTEEN_BIT_FLOATS else p.dtype
    seq_len, batch, hidden, dirs = shape.seq_len, shape.batch, shape.hidden_size, shape.num_directions
    states = (shape.num_layers * dirs, batch, hidden)
    h_n = np.zeros(states, dtype) if h0 is None else np.array(_to_f32(h0), dtype).reshape(states)
    c_n = np.zeros(states, dtype) if c0 is None else np.array(_to_f32(c0), dtype).reshape(states)
    y = np.empty(shape.output_shape, dtype)
    if y.size == 0:
        return y, (h_n.reshape(shape.state_shape), c_n.reshape(shape.state_shape))
    time_stride, batch_stride = shape.row_strides
    layer_input = x.reshape(seq_len * batch, shape.input_size)
    y_rows = y.reshape(seq_len * batch, dirs * hidden)
    gates = np.empty((dirs, batch, 4 * hidden), dtype)
    for layer in range(shape.num_layers):
        first = shape.param_index(layer, 0)
        entries = params[first:first + dirs]
        h, c = h_n[first:first + dirs], c_n[first:first + dirs]
        if dtype == dt.float32 and _stored_recurrence(entries, batch):
            projected, bias = _projection(layer_input, entries), _bias(entries, dtype)
            w_hh = [kernel_view(e[1]) for e in entries]
            busy = _gemm.work_bytes(batch * w_hh[0].size)
            for step in range(seq_len):
                for d in range(dirs):
                    launch(gemv, busy, h[d], w_hh[d], gates[d])
                _step(gates, projected, bias, h, c, y_rows, step, seq_len, time_stride, batch_stride)
        else:
            if dtype == dt.float32:
                entries = [tuple(None if a is None else _to_f32(a) for a in e) for e in entries]
            w_ih_t, w_hh_t, bias = _layer_weights(entries, dtype)
            with blas_threads(layer_input.size * w_ih_t.shape[1], layer_input.shape[0] == 1):
                projected = np.matmul(_to_f32(layer_input) if dtype == dt.float32 else layer_input, w_ih_t)
            with blas_threads(gates.size * hidden, batch == 1):   # one step's product: a call of its own
                for step in range(seq_len):
                    if dirs == 1:
                        np.matmul(h[0], w_hh_t[0], out=gates[0])
                    else:
                        np.matmul(h, w_hh_t, out=gates)
                    _step(gates, projected, bias, h, c, y_rows, step, seq_len, time_stride, batch_stride)
        layer_input = y_rows
    return y, (h_n.reshape(shape.state_shape), c_n.reshape(shape.state_shape))


def lstm(p, **kwargs):
    y, (h_n, c_n) = _lstm(p, **kwargs)
    if p.dtype not in dt.SIXTEEN_BIT_FLOATS:
        return y, (h_n, c_n)
    return converted(y, p.dtype), (converted(h_n, p.dtype), converted(c_n, p.dtype))
