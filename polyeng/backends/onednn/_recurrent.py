"""What lstm and gru share on ONEDNN: one RNN primitive per layer (L = 1, both directions in one
primitive, ``bidirectional_concat``), the layers stacked here, each layer's output the next
one's input.

- x is read as it lies when its rows are dense: time-major as oneDNN's ``tnc``, batch-first as
  ``ntc`` (no transpose is made); y is written the same way, straight into the result.
- The weights are given in PyTorch's gate-major layout (``ldgoi``: one row copy per call, the
  gates put in oneDNN's order) and the primitive chooses its own layout (``format_tag::any``):
  one reorder per call, or once for weights that cannot change (read-only, as a graph's
  constants are), kept as ``backends/_constant.Derived`` keeps derived values.
- The biases are folded into oneDNN's (one bias per gate; lbr_gru's extra row is b_hn), f32.
- f32 data under a bf16 fp math mode: oneDNN's bf16 RNN (f32 accumulation, f32 bias and cell
  state) takes x, the weights and h in bf16 and gives y and h in bf16 (3.2 has no f32 dst_layer
  or dst_iter with bf16 weights): y and h_n are bf16 values returned as f32, c_n is f32. 16-bit
  storage computes on f32 and is rounded once, at the end.
- f32 calls on two or more threads may run with the batch split into lanes (``_recurrent_lanes``).
- Zero-size calls (no step, no batch row) need no primitive: an empty y, the initial states.
"""
from __future__ import annotations


import numpy as np

from ...engine import dtypes as dt
from . import _constants as C
from . import _fpmath, _recurrent_lanes
from ._convert import converted
from .._constant import Derived, constant
from ._primitive import Attr, Primitive, aligned_empty, cached, desc, desc_any, reorder
from ._threads import threads_for

F32 = np.dtype(np.float32)
BF16 = np.dtype(dt.bfloat16)
SIXTEEN = (np.dtype(dt.bfloat16), np.dtype(dt.float16))

CREATE = {"lstm": "dnnl_lstm_forward_primitive_desc_create",
          "gru": "dnnl_gru_forward_primitive_desc_create",
          "lbr_gru": "dnnl_lbr_gru_forward_primitive_desc_create"}
ALGORITHM = {"lstm": C.VANILLA_LSTM, "gru": C.VANILLA_GRU, "lbr_gru": C.LBR_GRU}
GATES = {"lstm": 4, "gru": 3, "lbr_gru": 3}
# oneDNN's gate order as indices into PyTorch's: lstm i, f, g, o (the same); gru u(z), r, o(n) from r, z, n
ORDER = {"lstm": (0, 1, 2, 3), "gru": (1, 0, 2), "lbr_gru": (1, 0, 2)}


def rule(kind_of):
    """The ``accepts`` of lstm (``kind_of(args) -> "lstm"``) or gru: float64 (and any type
    but f32, bf16, f16) turned down; otherwise each layer's primitive is built now."""
    def accepts(call):
        args = call.args
        arrays = [args["x"]] + [a for entry in args["params"] for a in entry if a is not None] \
            + [s for name in ("h0", "c0") if (s := args.get(name)) is not None]
        odd = sorted({str(a.dtype) for a in arrays} - {"float32", "bfloat16", "float16"})
        if odd:
            return f"oneDNN's RNN primitives take f32, bf16 and f16 data, not {', '.join(odd)}"
        shape = call.prepared.geometry
        if shape.seq_len == 0 or shape.batch == 0:
            return None
        try:
            for layer in range(shape.num_layers):
                _layer_prim(kind_of(args), shape, layer, _compute(call.prepared.dtype))
        except Exception as exc:
            return f"oneDNN has no {kind_of(args)} for this call: {exc}"
        return None
    return accepts


def _compute(dtype) -> str:
    return _fpmath.compute() if np.dtype(dtype) == F32 else "f32"


def _layout(shape) -> str:
    return "ntc" if shape.batch_first and not shape.unbatched else "tnc"


def _seq_desc(dims_tnc, dtype, layout):
    t, n, c = dims_tnc
    strides = (n * c, c, 1) if layout == "tnc" else (c, t * c, 1)
    return desc(dims_tnc, dtype, strides)


class _Layer:
    """One layer's primitive (every direction) and the types it takes."""
    __slots__ = ("prim", "data", "layer_in")

    def __init__(self, prim, data, layer_in):
        self.prim, self.data, self.layer_in = prim, data, layer_in


def _layer_prim(kind, shape, layer, compute) -> _Layer:
    dirs, hidden = shape.num_directions, shape.hidden_size
    layer_in = max(shape.input_size, 1) if layer == 0 else dirs * hidden
    seq, batch, layout = shape.seq_len, shape.batch, _layout(shape)
    data = BF16 if compute == "bf16" else F32
    key = ("rnn", kind, seq, batch, layer_in, hidden, dirs, layout, compute)

    def build():
        gates = GATES[kind]
        src = _seq_desc((seq, batch, layer_in), data, layout)
        dst = _seq_desc((seq, batch, dirs * hidden), data, layout)
        state = state_in = desc((1, dirs, batch, hidden), data)
        w_layer = desc_any((1, dirs, layer_in, gates, hidden), data)
        w_iter = desc_any((1, dirs, hidden, gates, hidden), data)
        bias = desc((1, dirs, gates + (kind == "lbr_gru"), hidden), F32)
        attr = Attr(compute)
        direction = C.BIDIRECTIONAL_CONCAT if dirs == 2 else C.UNIDIRECTIONAL_LEFT2RIGHT
        if kind == "lstm":
            cell = desc((1, dirs, batch, hidden), F32)
            args = (src.handle, state_in.handle, cell.handle, w_layer.handle, w_iter.handle, None, None,
                    bias.handle, dst.handle, state.handle, cell.handle)
        else:
            cell = None
            args = (src.handle, state_in.handle, w_layer.handle, w_iter.handle, bias.handle, dst.handle,
                    state.handle)
        prim = Primitive(CREATE[kind], C.FORWARD_INFERENCE, direction, *args, C.RNN_FLAGS_UNDEF, attr.handle,
                         keep=(src, dst, state, w_layer, w_iter, bias, cell, attr))
        return _Layer(prim, data, layer_in)
    return cached(key, build)


# --- weights: PyTorch's (G*H, in) per direction -> the primitive's layout --------------------------

MAX_PACKED = 256
_packed = Derived(limit=MAX_PACKED)   # by primitive, weights_layer or weights_iter, and the weights
stats = {"reorders": 0}


def _gate_major(kind, weights, layer_in, hidden, data):
    """The directions' weights stacked as (1, D, G, H, in) (oneDNN's ``ldgoi``), gates in oneDNN's
    order, in ``data``; the input dimension zero-padded to ``layer_in``."""
    gates = GATES[kind]
    out = np.zeros((1, len(weights), gates, hidden, layer_in), data)
    for d, w in enumerate(weights):
        blocks = w.reshape(gates, hidden, w.shape[1])
        for g, src in enumerate(ORDER[kind]):
            out[0, d, g, :, :w.shape[1]] = blocks[src]
    return out


def _reordered(prim, index, kind, weights, layer_in, hidden, data):
    """``weights`` (one per direction) in the layout the primitive chose for weights_layer (index 0)
    or weights_iter (1): a byte buffer."""
    plain = _gate_major(kind, weights, layer_in, hidden, data)
    _, dirs, gates, _, inner = plain.shape
    source = desc((1, dirs, inner, gates, hidden), data,
                  (dirs * gates * hidden * inner, gates * hidden * inner, 1, hidden * inner, inner))
    target = prim.md(C.QUERY_WEIGHTS_MD, index)
    buffer = aligned_empty(target.size)
    step = reorder(source, target)
    step.run({C.ARG_FROM: plain, C.ARG_TO: buffer}, threads_for(plain.size))
    stats["reorders"] += 1
    return buffer


def weights_of(layer: _Layer, kind, index, weights, hidden):
    """``_reordered``, once per weight set that cannot change (kept, bounded), else on every call."""
    layer_in = layer.layer_in if index == 0 else hidden
    return _packed.get(weights, (layer.prim, index),
                       lambda: _reordered(layer.prim, index, kind, weights, layer_in, hidden, layer.data))


_biases = Derived(limit=MAX_PACKED)   # by kind and the biases


def bias_of(kind, entries, hidden):
    """``_bias``, once per set of biases that cannot change (kept, bounded), else on every call."""
    return _biases.get([b for _, _, b_ih, b_hh in entries for b in (b_ih, b_hh)], (kind, hidden),
                       lambda: _bias(kind, entries, hidden))


def _bias(kind, entries, hidden):
    """oneDNN's bias (1, D, G(+1), H) in f32 from each direction's (b_ih, b_hh) (None: zeros)."""
    gates = GATES[kind]
    out = np.zeros((1, len(entries), gates + (kind == "lbr_gru"), hidden), F32)
    for d, (_, _, b_ih, b_hh) in enumerate(entries):
        for which, b in enumerate((b_ih, b_hh)):
            if b is None:
                continue
            blocks = np.asarray(b, F32).reshape(gates, hidden)
            for g, src in enumerate(ORDER[kind]):
                if kind == "lbr_gru" and which == 1 and src == 2:
                    out[0, d, gates] = blocks[src]   # b_hn: inside r * (W_hn h + b_hn)
                else:
                    out[0, d, g] += blocks[src]
    return out


# --- the layer loop --------------------------------------------------------------------------------

def _f32(a):
    return a if a.dtype == F32 else converted(a, F32)


def run_layers(kind, p, x, params, initial: tuple):
    """y and the final states (h_n, and lstm's c_n) in the call's shapes and dtype."""
    shape = p.geometry
    dirs, hidden = shape.num_directions, shape.hidden_size
    batched = (shape.num_layers * dirs, shape.batch, hidden)
    finals = [np.zeros(batched, F32) if s is None else np.array(_f32(s), F32, order="C").reshape(batched)
              for s in initial]
    storage = np.dtype(p.dtype)
    if shape.seq_len == 0 or shape.batch == 0:
        y = np.empty(shape.output_shape, storage)
        return y, [s.reshape(shape.state_shape).astype(storage, copy=False) for s in finals]
    compute = _compute(storage)
    seq = x.reshape(shape.seq_len, 1, shape.input_size) if shape.unbatched else x
    if storage != F32:
        seq = _f32(seq)
    if shape.input_size == 0:   # oneDNN needs a feature: one zero column, zero weights for it
        seq = np.zeros(seq.shape[:-1] + (1,), F32)
    budget = threads_for(_work(kind, shape, max(shape.input_size, 1)))
    lanes = _recurrent_lanes.lane_count(shape, budget) if compute == "f32" else 0
    if lanes > 1:   # the batch in lanes of one thread, or whole, as the first calls ran faster
        key = id(_layer_prim(kind, shape, 0, compute).prim)
        y = _recurrent_lanes.run(kind, shape, params, seq, finals, lanes, budget, key,
                                 lambda: _whole(kind, shape, params, seq, finals, compute))
    else:
        y = _whole(kind, shape, params, seq, finals, compute)
    y = _f32(y).reshape(shape.output_shape)
    results = [y] + [s.reshape(shape.state_shape) for s in finals]
    if storage != F32:
        results = [converted(a, storage) for a in results]
    return results[0], results[1:]


def _work(kind, shape, layer_in: int) -> int:
    """The multiply-adds of a layer reading ``layer_in`` features (``threads_for``'s measure)."""
    return shape.seq_len * shape.batch * shape.num_directions * GATES[kind] * shape.hidden_size * (
        layer_in + shape.hidden_size)


def _whole(kind, shape, params, seq, finals, compute):
    """y of every layer's primitive on the whole batch (the last layer's, in its data type);
    ``finals`` written with the final states."""
    dirs, hidden = shape.num_directions, shape.hidden_size
    y = None
    for index in range(shape.num_layers):
        layer = _layer_prim(kind, shape, index, compute)
        first = shape.param_index(index, 0)
        entries = params[first:first + dirs]
        src = np.ascontiguousarray(seq)
        if src.dtype != layer.data:
            src = converted(src, layer.data)
        out = np.empty(seq.shape[:-1] + (dirs * hidden,), layer.data)
        states = [s[first:first + dirs] for s in finals]   # updated in place: the final states
        # the primitive reads a copy of the initial states (the final ones are written over them)
        h_in = states[0].copy() if layer.data == F32 else converted(states[0], layer.data)
        h_out = states[0] if layer.data == F32 else np.empty(states[0].shape, layer.data)
        args = {C.ARG_SRC_LAYER: src, C.ARG_SRC_ITER: h_in,
                C.ARG_WEIGHTS_LAYER: weights_of(layer, kind, 0, [e[0] for e in entries], hidden),
                C.ARG_WEIGHTS_ITER: weights_of(layer, kind, 1, [e[1] for e in entries], hidden),
                C.ARG_BIAS: bias_of(kind, entries, hidden), C.ARG_DST_LAYER: out, C.ARG_DST_ITER: h_out}
        if kind == "lstm":
            args[C.ARG_SRC_ITER_C], args[C.ARG_DST_ITER_C] = states[1].copy(), states[1]
        layer.prim.run(args, threads_for(_work(kind, shape, layer.layer_in)))
        if h_out is not states[0]:
            states[0][...] = converted(h_out, F32)
        seq = y = out
    return y


def note(call) -> str:
    """For ``graph.explain``: the layers whose weights are constant, reordered once."""
    fixed = [i for i, layer in enumerate(call.args["params"]) if all(constant(w) for w in layer[:2])]
    if not fixed:
        return ""
    return "weights reordered once (constant)" + ("" if len(fixed) == len(call.args["params"]) else
                                                  f" in params {', '.join(map(str, fixed))}")
