"""The load budget of an ONNX model: no tensor the loader would make at load time may be larger than
``max_bytes`` (8 GiB unless ``polyeng.onnx.load(..., max_bytes=)`` says otherwise).

Checked on the file as it is, before ONNX's shape inference or any folding runs, so that a model of
a few hundred bytes cannot make either take the memory:

- an initializer or Constant whose dims claim more than the budget;
- a ConstantOfShape, Range, Expand or Tile whose shape or bounds are known at load time (constants,
  or small integer arithmetic on constants, evaluated here) and ask for more; a negative size or a
  Range without an end;
- shape inference's data propagation, which holds each element of a 1-D integer value it can
  compute as a protobuf message (about 200 bytes an element): it is turned off when such a value
  could have more than ``PROPAGATED`` elements. Only shape-like values need it, and those are short.

Each refusal is a ValueError naming the node or tensor and the size. The builder checks every
folded result against the same budget before it computes it (``Builder.limit``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.signal_safe import quietly

MAX_BYTES = 8 << 30
PROPAGATED = 1 << 16    # the most elements of a 1-D integer value shape inference may propagate
_SMALL = 64             # the most elements of a value evaluated here, as a shape or a bound
# The ops whose outputs ONNX's shape inference computes element by element (data propagation).
_PROPAGATING = {"Add", "Cast", "Concat", "Gather", "Mul", "Size", "Slice", "Squeeze", "Sub", "Unsqueeze", "Shape"}
_MAKERS = {"ConstantOfShape", "Range", "Expand", "Tile"}


@dataclass(frozen=True)
class Found:
    limit: int                  # the budget in bytes
    propagation_is_small: bool  # whether shape inference may propagate values (data_prop=True)


def limit(max_bytes) -> int:
    """The budget ``max_bytes`` sets (``MAX_BYTES`` for None); ValueError for a negative one."""
    budget = MAX_BYTES if max_bytes is None else int(max_bytes)
    if budget < 0:
        raise ValueError(f"max_bytes={max_bytes}: expected a size in bytes >= 0")
    return budget


def check(proto, max_bytes, where: str) -> Found:
    budget = limit(max_bytes)
    graph = proto.graph
    small = {}          # name -> values of a small constant-derived tensor
    sizes = {}          # name -> element count of a constant-derived tensor, None when unknown
    for init in graph.initializer:
        nbytes = _tensor_bytes(init, f"{where}: initializer {init.name!r}")
        if nbytes > budget:
            raise ValueError(f"{where}: initializer {init.name!r} of shape {list(init.dims)} takes {nbytes} bytes, "
                             f"over the load budget of {budget} (max_bytes=)")
        sizes[init.name] = math.prod(init.dims)
        _remember(small, init.name, init)
    propagation_small = all(len(init.dims) > 1 or sizes[init.name] <= PROPAGATED for init in graph.initializer)
    for node in graph.node:
        label = f"{where}: {node.op_type} {node.name or (node.output[0] if node.output else '?')!r}"
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.HasField("t"):
                    nbytes = _tensor_bytes(attr.t, label)
                    if nbytes > budget:
                        raise ValueError(f"{label}: a constant of {nbytes} bytes, over the load budget of {budget}")
                    if node.output:
                        sizes[node.output[0]] = math.prod(attr.t.dims)
                        _remember(small, node.output[0], attr.t)
                        propagation_small &= sizes[node.output[0]] <= PROPAGATED or len(attr.t.dims) > 1
            if node.output and node.output[0] not in sizes:
                sizes[node.output[0]] = 1
            continue
        from_constants = all(name == "" or name in sizes for name in node.input)
        count = _elements_asked(node, small, sizes, label)
        if count is not None and count * 4 > budget:   # at least 4 bytes an element once computed in f32
            raise ValueError(f"{label}: asks for {count} elements ({count * 4} bytes or more), over the load "
                             f"budget of {budget} (max_bytes=)")
        if node.op_type in _PROPAGATING and from_constants:
            if any(sizes.get(name) is None or sizes[name] > PROPAGATED for name in node.input if name):
                propagation_small = False
        if not from_constants:
            continue
        if node.op_type in _MAKERS:
            for name in node.output:
                sizes[name] = count
        else:
            for name in node.output:
                sizes[name] = None
            _evaluate(node, small, sizes)
    return Found(budget, propagation_small)


def _tensor_bytes(tensor, label: str) -> int:
    if any(d < 0 for d in tensor.dims):
        raise ValueError(f"{label}: negative dim in its shape {list(tensor.dims)}")
    from onnx import helper
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except Exception:
        itemsize = 1
    return math.prod(tensor.dims) * itemsize


def _remember(small: dict, name: str, tensor) -> None:
    """Keep a small tensor's values (shapes and bounds are small); nothing for larger ones."""
    if math.prod(tensor.dims) > _SMALL:
        return
    from onnx import numpy_helper
    try:
        small[name] = np.asarray(numpy_helper.to_array(tensor)).reshape(-1)
    except Exception:
        pass


def _evaluate(node, small: dict, sizes: dict) -> None:
    """The values of small integer arithmetic on known values (how exporters compute shapes and bounds)."""
    values = [small.get(name) for name in node.input]
    if not values or any(v is None for v in values) or not node.output:
        return
    op, out = node.op_type, node.output[0]
    try:
        if op in ("Add", "Sub", "Mul", "Div") and len(values) == 2:
            a, b = values
            if op == "Div" and np.any(b == 0):
                return
            function = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
                        "Div": np.floor_divide if a.dtype.kind in "iu" else np.divide}[op]
            result = quietly(function, a, b, all="ignore")
        elif op in ("Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape", "Flatten"):
            result = values[0]
        elif op == "Concat":
            result = np.concatenate(values)
        else:
            return
    except (ValueError, TypeError):
        return
    if result.size <= _SMALL:
        small[out] = np.asarray(result).reshape(-1)
        sizes[out] = int(result.size)


def _elements_asked(node, small: dict, sizes: dict, label: str):
    """How many elements a ConstantOfShape, Expand, Tile or Range with known inputs makes, or None."""
    op, inputs = node.op_type, list(node.input)
    if op in ("ConstantOfShape", "Expand") and len(inputs) >= (1 if op == "ConstantOfShape" else 2):
        shape = small.get(inputs[0] if op == "ConstantOfShape" else inputs[1])
        if shape is None:
            return None
        if np.any(shape < 0) and op == "ConstantOfShape":
            raise ValueError(f"{label}: negative size in its shape {shape.tolist()}")
        return math.prod(int(max(d, 1)) for d in shape.tolist()) if op == "Expand" else math.prod(shape.tolist())
    if op == "Tile" and len(inputs) == 2:
        repeats, size = small.get(inputs[1]), sizes.get(inputs[0])
        if repeats is None or size is None:
            return None
        return size * math.prod(max(int(r), 0) for r in repeats.tolist())
    if op == "Range" and len(inputs) == 3:
        bounds = [small.get(name) for name in inputs]
        if any(b is None or b.size != 1 for b in bounds):
            return None
        start, limit, delta = (float(b[0]) for b in bounds)
        if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
            raise ValueError(f"{label}: Range with delta {delta} from {start} to {limit} has no end")
        return max(math.ceil((limit - start) / delta), 0)
    return None
