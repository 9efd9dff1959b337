"""Comparisons, logic, Max/Min, ReduceSum/ReduceMax/ReduceMin, GatherElements and GatherND: what
transformers' exports build their masks and position buckets with.

Each runs as polyeng's op (``equal``, ``greater``, ``logical_and``, ``isnan``, ``maximum``,
``sum``, ...) where a tensor polyeng computes (``data``) goes in, and otherwise on the host
(``onnx.compare``, ``onnx.logical``, ...) on shape values and the masks built from them, folded
at load time where every input is known. ``Where(Equal(shape, -1), 1, shape)``, PyTorch's idiom
for expand's target, keeps its per-element known ints, so a shape that is fixed folds.
GatherElements and GatherND run on the host (numpy indexing); in these models they pick
positions out of a buffer and rows of the attention mask, never activations.
"""
from __future__ import annotations

import numpy as np

from .builder import Unsupported, Val
from .context import OnnxNode, positive_axis
from .ops_math import _any_data, _check_dtype, _known, _settle
from .registry import converter

COMPARE = {"Equal": "equal", "Greater": "greater", "GreaterOrEqual": "greater_equal", "Less": "less",
           "LessOrEqual": "less_equal"}
KNOWN_COMPARE = {"equal": lambda x, y: x == y, "greater": lambda x, y: x > y, "greater_equal": lambda x, y: x >= y,
                 "less": lambda x, y: x < y, "less_equal": lambda x, y: x <= y}
SAME_COMPARE = {"equal": 1, "greater": 0, "greater_equal": 1, "less": 0, "less_equal": 1}   # a named dim with itself
LOGICAL = {"And": "and", "Or": "or", "Xor": "xor", "Not": "not"}


def _known_pairs(ka, kb, function, same):
    """Per-element results of ``function`` on two 1-D host values' known elements: ints where both
    are ints, ``same(x)`` where both are the same named dim, None elsewhere (or None overall)."""
    if ka is None or kb is None or not (len(ka) == len(kb) or 1 in (len(ka), len(kb))):
        return None
    width = max(len(ka), len(kb))
    ka, kb = (ka * width if len(ka) == 1 else ka), (kb * width if len(kb) == 1 else kb)
    return tuple(int(function(x, y)) if type(x) is int and type(y) is int else
                 same(x) if isinstance(x, str) and x == y else None for x, y in zip(ka, kb))


@converter("Equal")
@converter("Greater")
@converter("GreaterOrEqual")
@converter("Less")
@converter("LessOrEqual")
def compare(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    op = COMPARE[n.op_type]
    if _any_data(a, b):
        n.emit(op, {"a": a, "b": b})
        return
    n.emit("onnx.compare", {"a": a, "b": b, "op": op}, dtype="bool",
           known=_known_pairs(_known(a), _known(b), KNOWN_COMPARE[op], lambda _: SAME_COMPARE[op]))
    _settle(n)


@converter("And")
@converter("Or")
@converter("Xor")
@converter("Not")
def logical(n: OnnxNode) -> None:
    op = LOGICAL[n.op_type]
    values = [n.need(0, "A" if op != "not" else "X")] + ([] if op == "not" else [n.need(1, "B")])
    if any(np.dtype(v.dtype) != np.bool_ for v in values):
        raise ValueError(f"{n.op_type} takes bool inputs; got {', '.join(np.dtype(v.dtype).name for v in values)}")
    if _any_data(*values):
        n.emit(f"logical_{op}", {"x": values[0]} if op == "not" else {"a": values[0], "b": values[1]})
        return
    n.emit("onnx.logical", {"values": values, "op": op}, dtype="bool")


@converter("IsNaN")
@converter("IsInf")
def is_special(n: OnnxNode) -> None:
    x = n.need(0, "X")
    _check_dtype(n, x)
    if np.dtype(x.dtype).kind != "f":
        raise ValueError(f"{n.op_type} takes a floating-point input; got {np.dtype(x.dtype).name}")
    if n.op_type == "IsNaN":
        n.emit("isnan" if x.kind == "data" else "onnx.isnan", {"x": x}, dtype="bool")
        return
    negative, positive = int(n.attr("detect_negative", 1)), int(n.attr("detect_positive", 1))
    if x.kind == "data" and negative and positive:
        n.emit("isinf", {"x": x})
    elif x.kind == "data":
        raise Unsupported(f"detect_negative={negative}, detect_positive={positive} on a tensor polyeng computes "
                          f"(only both 1, polyeng's isinf)")
    else:
        n.emit("onnx.isinf", {"x": x, "negative": negative, "positive": positive}, dtype="bool")


@converter("Max")
@converter("Min")
def extremum(n: OnnxNode) -> None:
    values = [n.b.get(name) for name in n.input_names if name]
    if not values:
        raise ValueError(f"{n.op_type} has no inputs")
    _check_dtype(n, *values)
    op = "max" if n.op_type == "Max" else "min"
    if _any_data(*values):
        if len(values) == 1:
            n.set(0, values[0])
            return
        out = values[0]
        for i, v in enumerate(values[1:], start=1):
            name = n.output_names[0] if i == len(values) - 1 else f"{n.name}.{op}{i}"
            types = [(n.out_type(0)[0], n.out_type(0)[1] if i == len(values) - 1 else None)]
            (out,) = n.b.emit("maximum" if op == "max" else "minimum", {"a": out, "b": v}, types, names=[name],
                              node_name=n.name if i == len(values) - 1 else None)
        n.set(0, out)
        return
    known = None
    if all(_known(v) is not None for v in values):
        function = max if op == "max" else min
        known = _known(values[0])
        for v in values[1:]:
            known = _known_pairs(known, _known(v), function, lambda name: name)
    n.emit("onnx.extremum", {"values": values, "op": op}, dtype=values[0].dtype, known=known)
    _settle(n)


def _reduce_axes(n: OnnxNode, x: Val):
    """The axes of a Reduce* node (an attribute before opset 18, an input from 18; ReduceSum's
    from 13), or None for every axis; ``...`` when the node is the identity (noop_with_empty_axes)."""
    if n.op_type == "ReduceSum" or n.opset >= 18:
        axes = n.ints(1, "axes")
    else:
        axes = n.attr("axes")
        axes = None if axes is None else [int(a) for a in axes]
    if not axes:
        return ... if int(n.attr("noop_with_empty_axes", 0)) else None
    axes = tuple(positive_axis(int(a), x.rank, "axes") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes={list(axes)} names an axis twice")
    return axes


@converter("ReduceSum")
@converter("ReduceMax")
@converter("ReduceMin")
def reduce(n: OnnxNode) -> None:
    x = n.need(0, "data")
    _check_dtype(n, x)
    axes = _reduce_axes(n, x)
    if axes is ...:
        n.set(0, x)
        return
    keepdims = bool(int(n.attr("keepdims", 1)))
    op = {"ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}[n.op_type]
    if x.kind == "data" and np.dtype(x.dtype).kind == "f":
        n.emit({"sum": "sum", "max": "amax", "min": "amin"}[op], {"x": x, "axis": axes, "keepdims": keepdims})
        return
    if x.kind == "data" and np.dtype(x.dtype).kind == "b":
        raise Unsupported(f"{n.op_type} of a bool tensor")
    n.emit("onnx.reduce", {"x": x, "axes": axes, "keepdims": keepdims, "op": op}, dtype=x.dtype)


@converter("GatherElements")
def gather_elements(n: OnnxNode) -> None:
    data, indices = n.need(0, "data"), n.need(1, "indices")
    if data.rank is not None and indices.rank is not None and data.rank != indices.rank:
        raise ValueError(f"indices have rank {indices.rank}; GatherElements needs data's rank {data.rank}")
    axis = positive_axis(int(n.attr("axis", 0)), data.rank)
    n.emit("onnx.gather_elements", {"data": data, "indices": indices, "axis": axis}, dtype=data.dtype)


@converter("GatherND")
def gather_nd(n: OnnxNode) -> None:
    data, indices = n.need(0, "data"), n.need(1, "indices")
    batch_dims = int(n.attr("batch_dims", 0))
    if data.rank is not None and not 0 <= batch_dims < data.rank:
        raise ValueError(f"batch_dims={batch_dims} is out of range for data of rank {data.rank}")
    n.emit("onnx.gather_nd", {"data": data, "indices": indices, "batch_dims": batch_dims}, dtype=data.dtype)
