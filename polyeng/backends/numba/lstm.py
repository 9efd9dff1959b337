"""lstm on NUMBA: numpy's BLAS does the matrix products, one JIT kernel per time step does the rest.

In f32 and f64, where numpy's BLAS is OpenBLAS, a layer is instead one compiled call that runs
its time loop with the products called from compiled code, each step split over numba's threads,
or each thread running whole lanes (a direction and a share of the batch rows) of the layer
(``_recurrence_loop.py``). What follows describes the step-by-step path that
16-bit recurrent weights at small batches, and other BLAS libraries, keep.

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
and c_n are rounded once at the end). The layer loop, the projection and the states are
``_recurrent``'s, shared with gru. Each 16-bit ``w_ih`` is read as stored by ``_gemm``; at
batch <= ``_gemm.GEMV_ROWS`` each 16-bit ``w_hh`` is too, by the JIT matrix-vector kernel
(``_gemv``) instead of BLAS, which halves the bytes every step reads. That kernel runs in
parallel: with no BLAS call between the steps, nothing else spins on the cores. Larger batches
and small weights widen the weights to f32 once per call and keep the BLAS steps.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._blas_threads import blas_threads
from . import _gemm, _recurrence_loop
from ._recurrence_loop import cell_update
from ._f32_path import _to_f32
from ._gemv import gemv
from ._recurrent import f32_entries, projection, rounded, run_layers, stacked_projection, stacked_t, \
    stored_recurrence
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
        cell_update(g_row, c_row, c_row, y_row, hidden)
        h[d, n] = y_row


def _bias(entries, dtype):
    four_hidden = entries[0][1].shape[0]
    bias = np.zeros(len(entries) * four_hidden, dtype)
    for d, (_, _, b_ih, b_hh) in enumerate(entries):
        for b in (b_ih, b_hh):
            if b is not None:
                bias[d * four_hidden:(d + 1) * four_hidden] += _to_f32(b)
    return bias


def _layer(shape):
    seq_len, batch = shape.seq_len, shape.batch
    time_stride, batch_stride = shape.row_strides

    def run(layer_input, entries, states, y_rows, dtype):
        h, c = states
        dirs, hidden = len(entries), shape.hidden_size
        gates = np.empty((dirs, batch, 4 * hidden), dtype)
        if dtype == dt.float32 and stored_recurrence(entries, batch):
            projected, bias = projection(layer_input, entries), _bias(entries, dtype)
            w_hh = [kernel_view(e[1]) for e in entries]
            busy = _gemm.work_bytes(batch * w_hh[0].size)
            for step in range(seq_len):
                for d in range(dirs):
                    launch(gemv, busy, h[d], w_hh[d], gates[d])
                _step(gates, projected, bias, h, c, y_rows, step, seq_len, time_stride, batch_stride)
            return
        if dtype == dt.float32:
            entries = f32_entries(entries)
        if _recurrence_loop.available(dtype):
            return _recurrence_loop.run_layer(layer_input, entries, h, c, y_rows, dtype, shape, 4)
        projected, bias = stacked_projection(layer_input, entries, dtype), _bias(entries, dtype)
        w_hh_t = stacked_t([e[1] for e in entries])
        with blas_threads(gates.size * hidden, batch == 1):   # one step's product: a call of its own
            for step in range(seq_len):
                if dirs == 1:
                    np.matmul(h[0], w_hh_t[0], out=gates[0])
                else:
                    np.matmul(h, w_hh_t, out=gates)
                _step(gates, projected, bias, h, c, y_rows, step, seq_len, time_stride, batch_stride)
    return run


def lstm(p, x, params, h0, c0, **_):
    y, states = run_layers(p, x, params, (h0, c0), _layer(p.geometry))
    y, h_n, c_n = rounded(p, [y, *states])
    return y, (h_n, c_n)
