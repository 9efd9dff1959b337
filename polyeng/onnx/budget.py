"""The load budget of an ONNX model: no tensor the loader would make at load time may be larger than
``max_bytes`` (8 GiB unless ``polyeng.onnx.load(..., max_bytes=)`` says otherwise).

Checked on the file as it is, before ONNX's shape inference or any folding runs, so that a model of
a few hundred bytes cannot make either take the memory: an initializer whose dims claim more; a
ConstantOfShape, Range or Expand whose shape or bounds are constants and ask for more; and a
negative size anywhere in those. Each refusal is a ValueError naming the node or tensor and the size.
"""
from __future__ import annotations

import math

import numpy as np

MAX_BYTES = 8 << 30
_SMALL = 64   # the most elements a constant may have to be read here as a shape or a bound


def check(proto, max_bytes, where: str) -> None:
    budget = MAX_BYTES if max_bytes is None else int(max_bytes)
    graph = proto.graph
    known = {}
    for init in graph.initializer:
        nbytes = _tensor_bytes(init, f"{where}: initializer {init.name!r}")
        if nbytes > budget:
            raise ValueError(f"{where}: initializer {init.name!r} of shape {list(init.dims)} takes {nbytes} bytes, "
                             f"over the load budget of {budget} (max_bytes=)")
        known[init.name] = init
    for node in graph.node:
        label = f"{where}: {node.op_type} {node.name or (node.output[0] if node.output else '?')!r}"
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.HasField("t"):
                    nbytes = _tensor_bytes(attr.t, label)
                    if nbytes > budget:
                        raise ValueError(f"{label}: a constant of {nbytes} bytes, over the load budget of {budget}")
                    if node.output:
                        known[node.output[0]] = attr.t
            continue
        count = _elements_asked(node, known, label)
        if count is not None and count * 4 > budget:   # at least 4 bytes an element once computed in f32
            raise ValueError(f"{label}: asks for {count} elements ({count * 4} bytes or more), over the load "
                             f"budget of {budget} (max_bytes=)")


def _tensor_bytes(tensor, label: str) -> int:
    if any(d < 0 for d in tensor.dims):
        raise ValueError(f"{label}: negative dim in its shape {list(tensor.dims)}")
    from onnx import helper
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except Exception:
        itemsize = 1
    return math.prod(tensor.dims) * itemsize


def _value(known: dict, name: str):
    """A small constant's values, or None (not a constant, or too large to be a shape or a bound)."""
    tensor = known.get(name)
    if tensor is None or math.prod(tensor.dims) > _SMALL:
        return None
    from onnx import numpy_helper
    try:
        return np.asarray(numpy_helper.to_array(tensor)).reshape(-1)
    except Exception:
        return None


def _elements_asked(node, known: dict, label: str):
    """How many elements a ConstantOfShape, Expand or Range with constant inputs makes, or None."""
    op, inputs = node.op_type, list(node.input)
    if op in ("ConstantOfShape", "Expand") and len(inputs) >= (1 if op == "ConstantOfShape" else 2):
        shape = _value(known, inputs[0] if op == "ConstantOfShape" else inputs[1])
        if shape is None:
            return None
        if np.any(shape < 0) and op == "ConstantOfShape":
            raise ValueError(f"{label}: negative size in its shape {shape.tolist()}")
        return math.prod(int(max(d, 1)) for d in shape.tolist()) if op == "Expand" else math.prod(shape.tolist())
    if op == "Range" and len(inputs) == 3:
        bounds = [_value(known, name) for name in inputs]
        if any(b is None or b.size != 1 for b in bounds):
            return None
        start, limit, delta = (float(b[0]) for b in bounds)
        if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
            raise ValueError(f"{label}: Range with delta {delta} from {start} to {limit} has no end")
        return max(math.ceil((limit - start) / delta), 0)
    return None
