"""Converters of Conv and BatchNormalization, and the fold of a BatchNormalization into the Conv
before it.

- **Conv** (1-D and 2-D) is polyeng's conv1d/conv2d. ONNX's ``pads`` ([begin..., end...]) become
  polyeng's four sides (two for conv1d); ``auto_pad`` SAME_UPPER/SAME_LOWER pads as ONNX says
  (the odd pad at the end or at the beginning), from the input's spatial sizes, which must then be
  fixed; VALID is no padding.
- **BatchNormalization** in inference form (``training_mode`` 0) is polyeng's batch_norm.
- **Fold** (``conv_batch_norm_fold``): a Conv with constant weights whose only reader is a
  BatchNormalization with constant statistics becomes one conv2d with the statistics folded into
  its weights and bias, ``W * s`` and ``(b - mean) * s + beta`` with ``s = gamma / sqrt(var +
  eps)``, computed in float64 and rounded once to the weights' dtype. The node is named
  ``conv+batch_norm`` after both, so ``print(graph)`` shows the fold.
"""
from __future__ import annotations

import numpy as np

from .builder import Unsupported, const
from .context import OnnxNode
from .fusion_graph import FusionGraph, node_attributes
from .registry import converter, pattern


def conv_arguments(n: OnnxNode) -> dict:
    """The conv1d/conv2d arguments of a Conv node (weights as Vals), or Unsupported/ValueError."""
    x, w = n.need(0, "X"), n.need(1, "W")
    if w.rank not in (3, 4):
        raise Unsupported(f"a {w.rank}-D weight; polyeng convolves 1-D and 2-D inputs (3-D or 4-D weights)")
    if x.rank is not None and x.rank != w.rank:
        raise ValueError(f"X has {x.rank} dims but W has {w.rank}")
    spatial = w.rank - 2
    kernel = tuple(w.shape[2:]) if w.shape is not None else None
    if n.attr("kernel_shape") is not None:
        given = n.sizes("kernel_shape", spatial, 1)
        if kernel is not None and all(type(k) is int for k in kernel) and given != kernel:
            raise ValueError(f"kernel_shape={list(given)} does not match W's shape {list(w.shape)}")
        kernel = given
    strides = n.sizes("strides", spatial, 1)
    dilations = n.sizes("dilations", spatial, 1)
    group = int(n.attr("group", 1))
    if group < 1:
        raise ValueError(f"group={group}: expected >= 1")
    begin, end = begin_end_pads(n, x, spatial, kernel, strides, dilations)
    padding = tuple(p for pair in zip(begin, end) for p in pair)   # (top, bottom, left, right)
    bias = n.val(2)
    return {"x": x, "weight": w, "bias": bias, "stride": strides, "padding": padding, "dilation": dilations,
            "groups": group}


def begin_end_pads(n: OnnxNode, x, spatial: int, kernel, strides, dilations) -> tuple:
    """(begin, end) per spatial dim of a Conv or a pool: its ``pads`` (absent or empty: none), or
    what auto_pad SAME_UPPER, SAME_LOWER or VALID says."""
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = n.sizes("pads", 2 * spatial, 0, minimum=0) if n.attr("pads") else (0,) * (2 * spatial)
    elif auto_pad == "VALID":
        pads = (0,) * (2 * spatial)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_pads(x, kernel, strides, dilations, auto_pad)
    else:
        raise ValueError(f"auto_pad={auto_pad!r}: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    return tuple(pads[:spatial]), tuple(pads[spatial:])


def same_pads(x, kernel, strides, dilations, auto_pad: str) -> tuple:
    """ONNX's SAME padding: outputs ceil(size / stride), the odd pad at the end (UPPER) or the
    beginning (LOWER); the input's spatial sizes must be fixed."""
    sizes = None if x.shape is None else x.shape[2:]
    if sizes is None or kernel is None or any(type(s) is not int for s in sizes) or \
            any(type(k) is not int for k in kernel):
        raise Unsupported(f"auto_pad={auto_pad} on spatial sizes not fixed at load time")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return tuple(begin) + tuple(end)


@converter("Conv")
def conv(n: OnnxNode) -> None:
    args = conv_arguments(n)
    op = "conv2d" if args["weight"].rank == 4 else "conv1d"
    if op == "conv1d":
        args["padding"] = args["padding"][:2]
    n.emit(op, args)


def _batch_norm_inputs(n: OnnxNode) -> tuple:
    if int(n.attr("training_mode", 0)) != 0:
        raise Unsupported("training_mode=1 (polyeng runs batch normalization in inference form)")
    if any(n.used(i) for i in (1, 2)):
        raise Unsupported("the running mean and variance outputs are computed in training mode only")
    return (n.need(0, "X"), n.need(1, "scale"), n.need(2, "B"), n.need(3, "input_mean"), n.need(4, "input_var"),
            float(n.attr("epsilon", 1e-5)))


@converter("BatchNormalization")
def batch_normalization(n: OnnxNode) -> None:
    x, scale, bias, mean, var, eps = _batch_norm_inputs(n)
    n.emit("batch_norm", {"x": x, "running_mean": mean, "running_var": var, "weight": scale, "bias": bias,
                          "eps": eps})


@pattern("Conv", name="conv_batch_norm_fold")
def conv_batch_norm_fold(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """Conv with constant weights, then BatchNormalization with constant statistics: one conv."""
    j = plan.next(n.output_names[0], "BatchNormalization")
    if j is None:
        return False
    w, b = n.val(1), n.val(2)
    if w is None or not w.is_const or (b is not None and not b.is_const):
        return False
    bn_node = plan.nodes[j]
    names = list(bn_node.input) + [""] * 5
    stats = [plan.b.values.get(name) for name in names[1:5]]
    if any(v is None or not v.is_const for v in stats) or len([o for o in bn_node.output if o]) != 1:
        return False
    bn = OnnxNode(bn_node, bn_node.name or f"BatchNormalization_{j}", node_attributes(bn_node), plan.b, n.opset)
    if int(bn.attr("training_mode", 0)) != 0:
        return False
    gamma, beta, mean, var = (v.array.astype(np.float64).reshape(-1) for v in stats)
    out_channels = w.array.shape[0]
    if not all(a.size == out_channels for a in (gamma, beta, mean, var)):
        return False
    try:
        args = conv_arguments(n)
    except (Unsupported, ValueError):
        return False   # the converter reports it
    s = gamma / np.sqrt(var + float(bn.attr("epsilon", 1e-5)))
    dtype = w.array.dtype
    folded_w = (w.array.astype(np.float64) * s.reshape((-1,) + (1,) * (w.array.ndim - 1))).astype(dtype)
    bias0 = np.zeros(out_channels) if b is None else b.array.astype(np.float64).reshape(-1)
    folded_b = ((bias0 - mean) * s + beta).astype(dtype)
    args["weight"] = const(folded_w, name=f"{w.name or n.name}.folded")
    args["bias"] = const(folded_b, name=f"{n.name}.folded_bias")
    op = "conv2d" if folded_w.ndim == 4 else "conv1d"
    if op == "conv1d":
        args["padding"] = args["padding"][:2]
    out = bn_node.output[0]
    dtype_out, shape = plan.b.types.dtype(out), plan.b.types.shape(out)
    x = args["x"]
    (y,) = plan.b.emit(op, args, [(np.dtype(dtype_out or x.dtype), shape)], names=[out],
                       node_name=f"{n.name}+{bn.name}")
    plan.b.set(out, y)
    plan.skip([j])
    return True
