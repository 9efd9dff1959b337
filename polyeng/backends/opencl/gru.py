"""gru on OPENCL: the GEMM of ``_gemm.py`` for the products, gru.cl for the gates, all on the device.

As lstm (``lstm.py``; the states, the results and the weights' layout are ``_recurrent``'s):
per layer, one GEMM projects every time step's input for both directions at once with b_ih
added; per time step, one batched GEMM (the batch is the direction) multiplies every
direction's hidden state by its ``w_hh.T``, and ``gru_step`` fuses the rest: b_hh, the gate
activations, the new state, the writes of h and the output row, in the caller's layout. Every
launch is queued back to back and ``enqueue.result`` waits for them once.

With ``reset_after=False`` the reset gate scales h before its product with ``w_hn``: per step,
the GEMM by ``[w_hr; w_hz].T`` fills the r and z parts of the gates, ``gru_reset`` writes
``r * h``, the GEMM by ``w_hn.T`` fills the n part, and ``gru_step`` finishes.

16-bit storage computes in f32 as BASIC does; under a bf16/f16/tf32 fp math mode it computes
f32, which the mode allows. Not supported: f64 on a device without cl_khr_fp64 (rejected);
the weights are transposed on every call (nothing is cached between calls).
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue
from ._gemm import gemm, gemm_launch
from ._recurrent import layer_weights, run


def _layer_launches(reset_after: bool, h_state, w_hh_t, gates, reset_h, shape, state_off: int, compute) -> list:
    """The GEMM launches of one step, in order; with ``reset_after=False`` ``gru_reset`` goes between them."""
    batch, hidden, dirs = shape.batch, shape.hidden_size, shape.num_directions
    three_hidden = 3 * hidden
    common = dict(ldb=three_hidden, ldc=three_hidden, acc=compute, batch=(1, dirs),
                  b_strides=(0, hidden * three_hidden), c_strides=(0, batch * three_hidden))
    if reset_after:
        return [gemm_launch(h_state, w_hh_t, gates, batch, three_hidden, hidden, lda=hidden,
                            offsets=(state_off, 0, 0), a_strides=(0, batch * hidden), **common)]
    return [gemm_launch(h_state, w_hh_t, gates, batch, 2 * hidden, hidden, lda=hidden,
                        offsets=(state_off, 0, 0), a_strides=(0, batch * hidden), **common),
            gemm_launch(reset_h, w_hh_t, gates, batch, hidden, hidden, lda=hidden,
                        offsets=(0, 2 * hidden, 2 * hidden), a_strides=(0, batch * hidden), **common)]


def _queue_layers(reset_after: bool):
    def queue(tx, params, shape, y, states, compute) -> None:
        """Queue every layer: the projection GEMM, then per step the recurrent GEMMs and kernels.
        The last layer writes ``y`` (storage); the ones before it a compute-type buffer."""
        (h_state,) = states
        seq_len, batch, hidden, dirs = shape.seq_len, shape.batch, shape.hidden_size, shape.num_directions
        three_hidden, rows = 3 * hidden, seq_len * batch
        time_stride, batch_stride = shape.row_strides
        # each layer's output overwrites the previous one's, which its projection has consumed
        work = y if y.dtype == compute else enqueue.empty((rows, dirs * hidden), compute)
        projected = enqueue.empty((rows, dirs * three_hidden), compute)
        gates = enqueue.empty((dirs, batch, three_hidden), compute)
        reset_h = None if reset_after else enqueue.empty((dirs, batch, hidden), compute)
        blocks = -(-hidden // 16)   # gru.cl's work items each take 16 hidden units
        items, local = (blocks, batch, dirs), (min(blocks, 16), 1, 1)
        u = np.uint64
        layer_input = tx
        for layer in range(shape.num_layers):
            first = shape.param_index(layer, 0)
            w_ih_t, w_hh_t, bias, bias_hh = layer_weights(params[first:first + dirs], compute, sum_biases=False)
            layer_in = layer_input.shape[-1]
            gemm(layer_input, w_ih_t, projected, rows, dirs * three_hidden, layer_in, lda=layer_in,
                 ldb=dirs * three_hidden, ldc=dirs * three_hidden, acc=compute, bias=bias)
            out = y if layer == shape.num_layers - 1 else work
            state_off = first * batch * hidden
            products = _layer_launches(reset_after, h_state, w_hh_t, gates, reset_h, shape, state_off, compute)
            geometry = (u(state_off), u(batch), u(hidden), u(dirs), u(seq_len), u(0), u(time_stride),
                        u(batch_stride))
            update = enqueue.Launch("gru.cl", "gru_step", enqueue.float_options(out.dtype), items, local,
                                    gates.buffer, projected.buffer, bias_hh.buffer, h_state.buffer, out.buffer,
                                    *geometry, np.int32(reset_after))
            reset = None if reset_after else enqueue.Launch(
                "gru.cl", "gru_reset", enqueue.float_options(compute), items, local, gates.buffer,
                projected.buffer, bias_hh.buffer, h_state.buffer, reset_h.buffer, *geometry)
            for step in range(seq_len):
                products[0].enqueue()
                if reset is not None:
                    reset.args[_STEP_ARG] = u(step)
                    reset.enqueue()
                    products[1].enqueue()
                update.args[_STEP_ARG] = u(step)
                update.enqueue()
            layer_input = work
    return queue


def gru(p, x, params, h0, batch_first, bidirectional, reset_after):
    y, (h_n,) = run(p, x, params, (h0,), _queue_layers(reset_after))
    return y, h_n


_STEP_ARG = 10   # the argument `step` of gru_step and gru_reset
