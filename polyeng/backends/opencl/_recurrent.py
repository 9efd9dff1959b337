"""What lstm and gru share on OPENCL: the states and results around the layers, and each layer's
weights transposed on the device into the compute type (f32, or f64 for f64 input).

16-bit storage computes in f32 as BASIC does (which works on f32 copies): the input is read as
stored, the weights' transposed copies, the states and the layers' outputs are f32, and only y
and the final states are rounded to the storage type, once, at the end.
"""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue, _runtime as runtime
from ._gemm import convert_into, transpose_into
from ._tensor import OpenCLTensor


def fill_zero(t: OpenCLTensor) -> None:
    import pyopencl as cl
    if t.size:
        cl.enqueue_fill_buffer(runtime.state().queue, t.buffer, np.zeros(1, t.dtype), 0, t.nbytes)


def _set_state(state: OpenCLTensor, value) -> None:
    """The recurrence's state (layers * directions, N, H) in the compute type from h0 or c0
    (converted; the caller's array is never written), or zeros."""
    if value is None:
        fill_zero(state)
        return
    convert_into(enqueue.on_device(value)[0], state)


def run(p, x, params, initial: tuple, queue_layers):
    """y and the final states (one per entry of ``initial``: h0, and lstm's c0; None for zeros).
    ``queue_layers(x, params, shape, y, states, compute)`` queues every layer, reading and
    updating ``states`` (each (layers * directions, N, H) in the compute type) and writing y."""
    shape = p.geometry
    stay = any(isinstance(t, OpenCLTensor) for t in [x, *initial] + [a for entry in params for a in entry])
    storage = np.dtype(x.dtype)
    compute = enqueue.compute_dtype(storage)
    y = enqueue.empty(shape.output_shape, storage, not stay)
    finals = [enqueue.empty(shape.state_shape, storage, not stay) for _ in initial]
    if storage == compute:
        states = finals
    else:
        batched = (shape.num_layers * shape.num_directions, shape.batch, shape.hidden_size)
        states = [enqueue.empty(batched, compute) for _ in initial]
    # every launch holds its arguments until enqueue.result has waited (enqueue.guarded on errors)
    if states[0].size:
        for state, value in zip(states, initial):
            _set_state(state, value)
    if y.size:
        queue_layers(enqueue.on_device(x)[0], params, shape, y, states, compute)
    if states[0] is not finals[0] and finals[0].size:
        for state, final in zip(states, finals):
            convert_into(state, final)
    return enqueue.result(y, stay), [enqueue.result(final, stay) for final in finals]


def layer_weights(entries, compute, sum_biases: bool = True):
    """(w_ih.T of every direction side by side (in, D*gH), w_hh.T stacked (D, H, gH), the biases
    (D*gH) or None, b_hh (D*gH) or None), in the compute type, built on the device (gH: gates *
    hidden size). ``sum_biases``: b_ih + b_hh in the third, None in the fourth; else b_ih in the
    third and b_hh (zeros where absent) in the fourth."""
    dirs = len(entries)
    gates_hidden, layer_in = entries[0][0].shape
    hidden = entries[0][1].shape[1]
    w_ih_t = enqueue.empty((layer_in, dirs * gates_hidden), compute)
    w_hh_t = enqueue.empty((dirs, hidden, gates_hidden), compute)
    roles = (2, 3) if sum_biases else (2,)
    has_bias = any(entry[r] is not None for entry in entries for r in roles)
    bias = enqueue.empty((dirs * gates_hidden,), compute) if has_bias else None
    bias_hh = None if sum_biases else enqueue.empty((dirs * gates_hidden,), compute)
    for target in (bias, bias_hh):
        if target is not None:
            fill_zero(target)
    for d, entry in enumerate(entries):
        w_ih, w_hh = enqueue.on_device(entry[0])[0], enqueue.on_device(entry[1])[0]
        transpose_into(w_ih, w_ih_t, dirs * gates_hidden, d * gates_hidden)
        transpose_into(w_hh, w_hh_t, gates_hidden, d * hidden * gates_hidden)
        for role, b in ((2, entry[2]), (3, entry[3])):
            if b is not None:
                target = bias if role in roles else bias_hh
                convert_into(enqueue.on_device(b)[0], target, d * gates_hidden, accumulate=True)
    return w_ih_t, w_hh_t, bias, bias_hh
