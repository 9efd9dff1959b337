"""What lstm and gru share on NUMBA: the layer loop, the initial states, the input projection
of a layer (one BLAS call for every time step and direction, each 16-bit ``w_ih`` read as
stored), and the choice of reading 16-bit recurrent weights as stored (``stored_recurrence``).

The states, y and the layers' outputs are in the compute dtype: f32 for 16-bit storage (rounded
once by ``rounded``), else the storage dtype. Every layer writes its output over the previous
one's in ``y`` (its projection has consumed it), indexed in the caller's layout.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._blas_threads import blas_threads
from . import _gemm
from ._cast import converted
from ._f32_path import _to_f32


def compute_dtype(storage) -> np.dtype:
    return np.dtype(np.float32) if storage in dt.SIXTEEN_BIT_FLOATS else np.dtype(storage)


def run_layers(p, x, params, initial: tuple, layer):
    """y and the final states, in the compute dtype. ``initial`` holds each state the op
    carries (h0, and lstm's c0), None for zeros; ``layer(layer_input, entries, states, y_rows,
    dtype)`` runs one layer of every direction: ``layer_input`` (rows, in), ``entries`` its
    directions' params, ``states`` its slices (D, N, H) of each state, updated in place, and
    ``y_rows`` (rows, D*H) the output, in the caller's row order (``RecurrentShape.row_strides``)."""
    shape = p.geometry
    dtype = compute_dtype(p.dtype)
    batched = (shape.num_layers * shape.num_directions, shape.batch, shape.hidden_size)
    finals = [np.zeros(batched, dtype) if s is None else np.array(_to_f32(s), dtype).reshape(batched)
              for s in initial]
    y = np.empty(shape.output_shape, dtype)
    if y.size:
        layer_input = x.reshape(shape.seq_len * shape.batch, shape.input_size)
        y_rows = y.reshape(shape.seq_len * shape.batch, shape.num_directions * shape.hidden_size)
        for index in range(shape.num_layers):
            first = shape.param_index(index, 0)
            last = first + shape.num_directions
            layer(layer_input, params[first:last], [s[first:last] for s in finals], y_rows, dtype)
            layer_input = y_rows
    return y, [s.reshape(shape.state_shape) for s in finals]


def rounded(p, arrays):
    """``arrays`` in the call's storage dtype (16-bit storage is rounded once, here)."""
    if p.dtype not in dt.SIXTEEN_BIT_FLOATS:
        return arrays
    return [converted(a, p.dtype) for a in arrays]


def f32_entries(entries):
    return [tuple(None if a is None else _to_f32(a) for a in e) for e in entries]


def projection(layer_input, entries):
    """Every time step's input times every direction's w_ih.T (f32), each 16-bit w_ih read as stored."""
    parts = []
    for w_ih in (e[0] for e in entries):
        if _gemm.native(layer_input, w_ih):
            parts.append(_gemm.product_t(layer_input, w_ih, None, dt.float32))
        else:
            with blas_threads(layer_input.size * w_ih.shape[0], layer_input.shape[0] == 1):
                parts.append(np.matmul(_to_f32(layer_input), _to_f32(w_ih).T))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def stacked_projection(layer_input, entries, dtype):
    """``projection`` for weights already in the compute dtype (f32 or f64): one BLAS call for
    every direction, ``x @ [w_ih_fwd; w_ih_rev].T``."""
    w_ih_t = entries[0][0].T if len(entries) == 1 else np.concatenate([e[0] for e in entries]).T
    with blas_threads(layer_input.size * w_ih_t.shape[1], layer_input.shape[0] == 1):
        return np.matmul(_to_f32(layer_input) if dtype == dt.float32 else layer_input, w_ih_t)


def stacked_t(weights):
    """``w.T`` of every direction stacked (D, cols, rows), C-contiguous: as a BLAS right operand
    it makes the small per-step product markedly faster."""
    return np.ascontiguousarray(np.stack([w.T for w in weights]))


def stored_recurrence(entries, batch) -> bool:
    """Whether every w_hh is 16-bit and the per-step product has few enough rows to read it as stored."""
    return batch <= _gemm.GEMV_ROWS and all(e[1].dtype in dt.SIXTEEN_BIT_FLOATS for e in entries)
