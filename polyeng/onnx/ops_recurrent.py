"""Converters of LSTM and GRU to polyeng's lstm and gru: the weights reordered from ONNX's gate
order to PyTorch's, the states and outputs moved between ONNX's layouts and polyeng's. Opset 22
only added bfloat16 to both."""
from __future__ import annotations

import numpy as np

from .builder import Unsupported, Val, const
from .context import OnnxNode
from .registry import converter

# ONNX orders LSTM gates i, o, f, c; polyeng (as PyTorch) i, f, g, o with g ONNX's c.
LSTM_GATES_FROM_ONNX = (0, 2, 3, 1)
# ONNX orders GRU gates z, r, h; polyeng (as PyTorch) r, z, n with n ONNX's h.
GRU_GATES_FROM_ONNX = (1, 0, 2)


@converter("LSTM")
def lstm(n: OnnxNode) -> None:
    x, W, R, B, direction, hidden, layout = _inputs(n, 4)
    dirs = 2 if direction == "bidirectional" else 1
    _refuse_attrs(n, ("Sigmoid", "Tanh", "Tanh"), dirs)
    if int(n.attr("input_forget", 0)):
        raise Unsupported("input_forget=1 is not supported")
    if n.has(7):
        peephole = n.const(7, "P")
        if np.any(peephole):
            raise Unsupported("peephole weights (P) are not supported")
    params = []
    for d in range(dirs):
        w_ih, w_hh = _reordered(W[d], hidden, LSTM_GATES_FROM_ONNX), _reordered(R[d], hidden, LSTM_GATES_FROM_ONNX)
        b = None
        if B is not None:
            b = _reordered(B[d, :4 * hidden], hidden, LSTM_GATES_FROM_ONNX) + \
                _reordered(B[d, 4 * hidden:], hidden, LSTM_GATES_FROM_ONNX)
        params.append((const(w_ih, f"{n.name}.w_ih{d}"), const(w_hh, f"{n.name}.w_hh{d}"),
                       None if b is None else const(b.astype(W.dtype), f"{n.name}.b{d}"), None))
    args = {"params": params, "h0": _state(n, 5, layout), "c0": _state(n, 6, layout)}
    _emit(n, "lstm", x, args, direction, hidden, layout, ["h", "c"])


@converter("GRU")
def gru(n: OnnxNode) -> None:
    x, W, R, B, direction, hidden, layout = _inputs(n, 3)
    dirs = 2 if direction == "bidirectional" else 1
    _refuse_attrs(n, ("Sigmoid", "Tanh"), dirs)
    params = []
    for d in range(dirs):
        w_ih, w_hh = _reordered(W[d], hidden, GRU_GATES_FROM_ONNX), _reordered(R[d], hidden, GRU_GATES_FROM_ONNX)
        b_ih = b_hh = None
        if B is not None:   # kept apart: b_hn is inside the reset gate's product with linear_before_reset
            b_ih = const(_reordered(B[d, :3 * hidden], hidden, GRU_GATES_FROM_ONNX), f"{n.name}.b_ih{d}")
            b_hh = const(_reordered(B[d, 3 * hidden:], hidden, GRU_GATES_FROM_ONNX), f"{n.name}.b_hh{d}")
        params.append((const(w_ih, f"{n.name}.w_ih{d}"), const(w_hh, f"{n.name}.w_hh{d}"), b_ih, b_hh))
    args = {"params": params, "h0": _state(n, 5, layout), "reset_after": bool(n.attr("linear_before_reset", 0))}
    _emit(n, "gru", x, args, direction, hidden, layout, ["h"])


def _inputs(n: OnnxNode, gates: int):
    """(X, W, R, B, direction, hidden_size, layout), W and R reshaped as checked; sequence_lens
    must be the full length."""
    x = n.need(0, "X")
    W, R = n.const(1, "W"), n.const(2, "R")
    if W is None or R is None:
        raise Unsupported("W and R are needed")
    B = n.const(3, "B")
    direction = n.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ValueError(f"direction={direction!r}: expected forward, reverse or bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    if n.attr("hidden_size") is None:
        raise ValueError("attribute 'hidden_size' is missing (the runtimes need it)")
    hidden = int(n.attr("hidden_size"))
    rows = gates * hidden
    if W.ndim != 3 or R.ndim != 3 or W.shape[:2] != (dirs, rows) or R.shape != (dirs, rows, hidden):
        raise ValueError(f"W {list(W.shape)} and R {list(R.shape)} do not fit hidden_size={hidden} and "
                         f"direction={direction!r}: expected W [{dirs}, {rows}, input] and R "
                         f"[{dirs}, {rows}, {hidden}]")
    if B is not None and B.shape != (dirs, 2 * rows):
        raise ValueError(f"B {list(B.shape)} does not fit hidden_size={hidden} and direction={direction!r}: "
                         f"expected [{dirs}, {2 * rows}]")
    layout = int(n.attr("layout", 0))
    if n.has(4):
        _check_full_lengths(n, x, layout)
    return x, W, R, B, direction, hidden, layout


def _refuse_attrs(n: OnnxNode, activations: tuple, dirs: int) -> None:
    """Unsupported for clip and for ``activations`` other than the defaults (per direction)."""
    if n.attr("clip") is not None:
        raise Unsupported(f"clip={n.attr('clip')} is not supported")
    given = n.attr("activations")
    if given is not None and [a.lower() for a in given] != [a.lower() for a in activations] * dirs:
        raise Unsupported(f"activations={list(given)} (polyeng computes {', '.join(activations)})")
    for name in ("activation_alpha", "activation_beta"):
        if n.attr(name) is not None:
            raise Unsupported(f"{name} is not supported")


def _check_full_lengths(n: OnnxNode, x: Val, layout: int) -> None:
    lengths = n.const(4, "sequence_lens")
    if lengths is None:
        return
    seq = None if x.shape is None else x.shape[1 if layout else 0]
    if type(seq) is not int:
        raise Unsupported("sequence_lens on a model whose sequence length varies (only full lengths are "
                          "supported, and they cannot be checked here)")
    if np.any(lengths != seq):
        raise Unsupported(f"sequence_lens={lengths.tolist()} are not all the full length {seq}")


def _reordered(weights: np.ndarray, hidden: int, order: tuple) -> np.ndarray:
    blocks = [weights[g * hidden:(g + 1) * hidden] for g in range(len(order))]
    return np.ascontiguousarray(np.concatenate([blocks[g] for g in order], axis=0))


def _state(n: OnnxNode, i: int, layout: int):
    v = n.val(i)
    if v is None or v.zero:
        return None
    if layout:
        shape = None if v.shape is None else (v.shape[1], v.shape[0], v.shape[2])
        (v,) = n.b.emit("permute_contiguous", {"x": v, "dims": (1, 0, 2)}, [(v.dtype, shape)],
                        names=[f"{n.name}.state{i}"])
    return v


def _flip(n: OnnxNode, v: Val, axis: int, what: str) -> Val:
    key = (slice(None),) * axis + (slice(None, None, -1),)
    (flipped,) = n.b.emit("onnx.getitem", {"x": v, "key": key if axis else key[0]}, [(v.dtype, v.shape)],
                          names=[f"{n.name}.{what}"])
    return flipped


def _emit(n: OnnxNode, op: str, x: Val, args: dict, direction: str, hidden: int, layout: int, states: list) -> None:
    """Run ``op`` (``args`` less x and the layout flags) and bind Y and the final states (Y_h, and
    LSTM's Y_c) in ONNX's shapes. A reverse direction alone runs forward over the flipped sequence."""
    dirs = 2 if direction == "bidirectional" else 1
    time_axis = 1 if layout else 0
    if direction == "reverse":
        x = _flip(n, x, time_axis, "X_reversed")
    dtype = np.dtype(x.dtype)
    y_shape = h_shape = None
    if x.shape is not None:
        first, second = x.shape[0], x.shape[1]
        y_shape, h_shape = (first, second, dirs * hidden), (dirs, first if layout else second, hidden)
    results = n.b.emit(op, {"x": x, **args, "batch_first": bool(layout), "bidirectional": dirs == 2},
                       [(dtype, y_shape)] + [(dtype, h_shape)] * len(states),
                       names=[f"{n.name}.y"] + [f"{n.name}.{s}" for s in states],
                       out=(0, tuple(range(1, len(states) + 1))) if len(states) > 1 else (0, 1), node_name=n.name)
    y = results[0]
    if direction == "reverse":
        y = _flip(n, y, time_axis, "y_in_order")
    if n.used(0):
        n.set(0, _onnx_y(n, y, y_shape, dirs, hidden, layout, dtype))
    for i, state in enumerate(results[1:], start=1):
        if n.used(i):
            if layout:
                (state,) = n.b.emit("permute_contiguous", {"x": state, "dims": (1, 0, 2)}, [n.out_type(i, dtype)],
                                    names=[n.output_names[i]])
            n.set(i, state)


def _onnx_y(n: OnnxNode, y: Val, y_shape, dirs: int, hidden: int, layout: int, dtype) -> Val:
    """y (L, N, D*H) ((N, L, D*H) with layout 1) as ONNX's Y: (L, D, N, H) ((N, L, D, H))."""
    if dirs == 1:
        axis = 2 if layout else 1
        (Y,) = n.b.emit("onnx.unsqueeze", {"x": y, "axes": (axis,)}, [n.out_type(0, dtype)],
                        names=[n.output_names[0]])
        Y.unsqueezed = (y, (axis,))
        return Y
    target = const(np.array([0, 0, 2, hidden], dtype=np.int64))
    split_shape = None if y_shape is None else tuple(y_shape[:2]) + (2, hidden)
    (Y,) = n.b.emit("onnx.reshape", {"x": y, "shape": target, "allowzero": 0}, [(dtype, split_shape)],
                    names=[f"{n.name}.y4"])
    if not layout:
        (Y,) = n.b.emit("permute_contiguous", {"x": Y, "dims": (0, 2, 1, 3)}, [n.out_type(0, dtype)],
                        names=[n.output_names[0]])
    return Y
