"""lstm on OPENCL: the GEMM of ``_gemm.py`` for the products, lstm.cl for the gates, all on the device.

Per layer, the weights are transposed into the compute type (f32, or f64 for f64 input):
every direction's ``w_ih.T`` side by side, so one GEMM projects every time step's input for
both directions at once with the summed biases added; ``w_hh.T`` stacked per direction.
Per time step, one batched GEMM (the batch is the direction) multiplies every direction's
hidden state by its ``w_hh.T``, and ``lstm_step`` fuses the rest: the projection, the gate
activations, the cell update, the writes of h, c and the output row. The projection and
the output are indexed in the caller's layout (time-major, batch-first or unbatched), so
the sequence is never transposed; every launch is queued back to back and ``enqueue.result``
waits for them once.

16-bit storage computes in f32 as BASIC does (which works on f32 copies): the input is read as
stored, the weights' transposed copies, the states and the layers' outputs are f32, and
only y, h_n and c_n are rounded to the storage type, once, at the end. Under a bf16/f16/tf32
fp math mode it computes f32 (registered compute types f32 and f64), which the mode allows.
Not supported: f64 on a device without cl_khr_fp64 (rejected); the weights are transposed
on every call (nothing is cached between calls).
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue, _runtime as runtime
from ._gemm import convert_into, gemm, gemm_launch, transpose_into
from ._tensor import OpenCLTensor


def _fill_zero(t: OpenCLTensor) -> None:
    import pyopencl as cl
    if t.size:
        cl.enqueue_fill_buffer(runtime.state().queue, t.buffer, np.zeros(1, t.dtype), 0, t.nbytes)


def _set_state(state: OpenCLTensor, value) -> None:
    """The recurrence's state (layers * directions, N, H) in the compute type from h0 or c0
    (converted; the caller's array is never written), or zeros."""
    if value is None:
        _fill_zero(state)
        return
    convert_into(enqueue.on_device(value)[0], state)


def _layer_weights(entries, compute):
    """(w_ih.T of every direction side by side (in, D*4H), w_hh.T stacked (D, H, 4H), the summed
    biases (D*4H) or None), in the compute type, built on the device."""
    dirs = len(entries)
    four_hidden, layer_in = entries[0][0].shape
    hidden = entries[0][1].shape[1]
    w_ih_t = enqueue.empty((layer_in, dirs * four_hidden), compute)
    w_hh_t = enqueue.empty((dirs, hidden, four_hidden), compute)
    has_bias = any(b is not None for entry in entries for b in entry[2:])
    bias = enqueue.empty((dirs * four_hidden,), compute) if has_bias else None
    if bias is not None:
        _fill_zero(bias)
    for d, (w_ih, w_hh, b_ih, b_hh) in enumerate(entries):
        w_ih, w_hh = enqueue.on_device(w_ih)[0], enqueue.on_device(w_hh)[0]
        transpose_into(w_ih, w_ih_t, dirs * four_hidden, d * four_hidden)
        transpose_into(w_hh, w_hh_t, four_hidden, d * hidden * four_hidden)
        for b in (b_ih, b_hh):
            if b is not None:
                convert_into(enqueue.on_device(b)[0], bias, d * four_hidden, accumulate=True)
    return w_ih_t, w_hh_t, bias


def _queue_layers(tx, params, shape, y, h_state, c_state, compute) -> None:
    """Queue every layer: the projection GEMM, then per step the recurrent GEMM and lstm_step.
    The last layer writes ``y`` (storage); the ones before it a compute-type buffer."""
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
        w_ih_t, w_hh_t, bias = _layer_weights(params[first:first + dirs], compute)
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
    shape = p.geometry
    stay = any(isinstance(t, OpenCLTensor) for t in [x, h0, c0] + [a for entry in params for a in entry])
    storage = np.dtype(x.dtype)
    compute = enqueue.compute_dtype(storage)
    y = enqueue.empty(shape.output_shape, storage, not stay)
    h_n = enqueue.empty(shape.state_shape, storage, not stay)
    c_n = enqueue.empty(shape.state_shape, storage, not stay)
    if storage == compute:
        h_state, c_state = h_n, c_n
    else:
        states = (shape.num_layers * shape.num_directions, shape.batch, shape.hidden_size)
        h_state, c_state = enqueue.empty(states, compute), enqueue.empty(states, compute)
    # every launch holds its arguments until enqueue.result has waited (enqueue.guarded on errors)
    if h_state.size:
        _set_state(h_state, h0)
        _set_state(c_state, c0)
    if y.size:
        _queue_layers(enqueue.on_device(x)[0], params, shape, y, h_state, c_state, compute)
    if h_state is not h_n and h_n.size:
        convert_into(h_state, h_n)
        convert_into(c_state, c_n)
    return enqueue.result(y, stay), (enqueue.result(h_n, stay), enqueue.result(c_n, stay))


_STEP_ARG = 10   # lstm_step's argument `step`
