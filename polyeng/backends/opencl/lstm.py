"""lstm on OPENCL: the GEMM of ``_gemm.py`` for the products, lstm.cl for the gates, all on the device.

Per layer, the weights are transposed into the compute type (f32, or f64 for f64 input):
every direction's ``w_ih.T`` side by side, so one GEMM projects every time step's input for
both directions at once with the summed biases added; ``w_hh.T`` stacked per direction.
Per time step, one batched GEMM (the batch is the direction) multiplies every direction's
hidden state by its ``w_hh.T``, and ``lstm_step`` fuses the rest: the projection, the gate
activations, the cell update, the writes of h, c and the output row. The projection and
the output are indexed in the caller's layout (time-major, batch-first or unbatched), so
the sequence is never transposed; every launch is queued back to back and ``enqueue.result``
waits for them once. The states, the results and the weights' layout are ``_recurrent``'s,
shared with gru.

16-bit storage computes in f32 as BASIC does; under a bf16/f16/tf32 fp math mode it computes
f32 (registered compute types f32 and f64), which the mode allows. Not supported: f64 on a
device without cl_khr_fp64 (rejected); the weights are transposed on every call (nothing is
cached between calls).
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue
from ._gemm import gemm, gemm_launch
from ._recurrent import layer_weights, run


def _queue_layers(tx, params, shape, y, states, compute) -> None:
    """Queue every layer: the projection GEMM, then per step the recurrent GEMM and lstm_step.
    The last layer writes ``y`` (storage); the ones before it a compute-type buffer."""
    h_state, c_state = states
    seq_len, batch, hidden, dirs = shape.seq_len, shape.batch, shape.hidden_size, shape.num_directions
    four_hidden, rows = 4 * hidden, seq_len * batch
    time_stride, batch_stride = shape.row_strides
    # each layer's output overwrites the previous one's, which its projection has consumed
    work = y if y.dtype == compute else enqueue.empty((rows, dirs * hidden), compute)
    projected = enqueue.empty((rows, dirs * four_hidden), compute)
    gates = enqueue.empty((dirs, batch, four_hidden), compute)
    blocks = -(-hidden // 16)   # lstm.cl's work items each take 16 hidden units
    u = np.uint64
    layer_input = tx
    for layer in range(shape.num_layers):
        first = shape.param_index(layer, 0)
        w_ih_t, w_hh_t, bias, _ = layer_weights(params[first:first + dirs], compute)
        layer_in = layer_input.shape[-1]
        gemm(layer_input, w_ih_t, projected, rows, dirs * four_hidden, layer_in, lda=layer_in,
             ldb=dirs * four_hidden, ldc=dirs * four_hidden, acc=compute, bias=bias)
        out = y if layer == shape.num_layers - 1 else work
        state_off = first * batch * hidden
        recurrent = gemm_launch(h_state, w_hh_t, gates, batch, four_hidden, hidden, lda=hidden, ldb=four_hidden,
                                ldc=four_hidden, acc=compute, offsets=(state_off, 0, 0), batch=(1, dirs),
                                a_strides=(0, batch * hidden), b_strides=(0, hidden * four_hidden),
                                c_strides=(0, batch * four_hidden))
        update = enqueue.Launch("lstm.cl", "lstm_step", enqueue.float_options(out.dtype), (blocks, batch, dirs),
                                (min(blocks, 16), 1, 1), gates.buffer, projected.buffer, h_state.buffer,
                                c_state.buffer, out.buffer, u(state_off), u(batch), u(hidden), u(dirs), u(seq_len),
                                u(0), u(time_stride), u(batch_stride))
        for step in range(seq_len):
            recurrent.enqueue()
            update.args[_STEP_ARG] = u(step)
            update.enqueue()
        layer_input = work


def lstm(p, x, params, h0, c0, batch_first, bidirectional):
    y, (h_n, c_n) = run(p, x, params, (h0, c0), _queue_layers)
    return y, (h_n, c_n)


_STEP_ARG = 10   # lstm_step's argument `step`
