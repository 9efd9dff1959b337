"""Shape plumbing and data movement: Constant, Identity, Shape, Gather, Slice, Squeeze, Unsqueeze,
Reshape, Flatten, Expand, ConstantOfShape and Range.

Where the values these compute are fixed at load time they fold into constants; where they depend
on named dims they stay as ``onnx.*`` host nodes. On data tensors, reshapes with a fixed target are
polyeng ``reshape`` nodes (the device keeps the tensor), slicing with fixed bounds an indexing node.

Past opset 21 these ops only gained dtypes (4-bit and 2-bit types, float8e8m0, which polyeng's
ops refuse as they refuse float8), except Range, whose opset 27 adds float16 and bfloat16 with
a ``stash_type``.
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from .builder import Unsupported, Val, const
from .context import OnnxNode, positive_axis
from .ops_math import _settle
from .registry import converter


@converter("Constant")
def constant(n: OnnxNode) -> None:
    attrs = n.attrs
    if "value" in attrs:
        n.set_const(0, np.array(attrs["value"]))
    elif "value_float" in attrs:
        n.set_const(0, np.array(attrs["value_float"], dtype=np.float32))
    elif "value_floats" in attrs:
        n.set_const(0, np.array(attrs["value_floats"], dtype=np.float32))
    elif "value_int" in attrs:
        n.set_const(0, np.array(attrs["value_int"], dtype=np.int64))
    elif "value_ints" in attrs:
        n.set_const(0, np.array(attrs["value_ints"], dtype=np.int64))
    else:
        raise Unsupported(f"a constant given as {', '.join(sorted(attrs)) or 'nothing'} (strings and sparse "
                          f"tensors are not supported)")


@converter("Identity")
def identity(n: OnnxNode) -> None:
    n.set(0, n.need(0, "input"))


@converter("Shape")
def shape(n: OnnxNode) -> None:
    x = n.need(0, "data")
    start, end = int(n.attr("start", 0)), n.attr("end")
    if x.shape is not None:
        dims = x.shape[start:None if end is None else int(end)]
        known = tuple(d if type(d) is int else None for d in dims)
        if all(k is not None for k in known):
            n.set_const(0, np.array(known, dtype=np.int64))
            return
    else:
        known = None
    n.emit("onnx.shape", {"x": x, "start": start, "end": None if end is None else int(end)},
           dtype=np.int64, known=known)


@converter("Gather")
def gather(n: OnnxNode) -> None:
    data, indices = n.need(0, "data"), n.need(1, "indices")
    axis = int(n.attr("axis", 0))
    if np.dtype(indices.dtype).kind not in "iu":
        raise Unsupported("indices are not integers")
    if data.is_const and data.array.ndim == 2 and axis == 0 and data.array.dtype.kind == "f" \
            and not indices.is_const:
        rows = data.array.shape[0]
        (ids,) = n.b.emit("onnx.wrap_indices", {"ids": indices, "rows": rows}, [(indices.dtype, indices.shape)],
                          names=[f"{n.name}.ids"])
        n.emit("embedding", {"ids": ids, "weight": data})
        return
    rank = data.rank
    if rank is not None:
        axis = positive_axis(axis, rank)
    known = None
    if indices.is_const and data.kind == "host" and rank == 1 and data.known is not None:
        picks = [data.known[int(i)] for i in indices.array.reshape(-1)]
        known = tuple(picks)
    if data.kind == "data" and indices.is_const and indices.array.ndim == 0 and rank is not None:
        key = (slice(None),) * axis + (int(indices.array),)
        n.emit("onnx.getitem", {"x": data, "key": key if axis else key[0]})
        return
    n.emit("onnx.gather", {"data": data, "indices": indices, "axis": axis}, dtype=data.dtype, known=known)
    _settle(n)


@converter("Slice")
def slice_(n: OnnxNode) -> None:
    data = n.need(0, "data")
    inputs = {name: n.val(i) for i, name in enumerate(("data", "starts", "ends", "axes", "steps"))}
    if all(v is None or v.is_const for k, v in inputs.items() if k != "data"):
        starts, ends = n.ints(1, "starts"), n.ints(2, "ends")
        axes = n.ints(3, "axes") if n.has(3) else list(range(len(starts)))
        steps = n.ints(4, "steps") if n.has(4) else [1] * len(starts)
        if data.rank is None:
            raise Unsupported("the input's rank is unknown")
        key = [slice(None)] * data.rank
        for start, end, axis, step in zip(starts, ends, axes, steps):
            if step == 0:
                raise Unsupported("a step is 0")
            key[positive_axis(axis, data.rank, "axes")] = slice(start, end, step)
        if data.kind == "host" and data.known is not None and data.rank == 1:
            known = tuple(np.array(data.known, dtype=object)[key[0]])
            n.emit("onnx.slice", {"x": data, "starts": starts, "ends": ends, "axes": axes, "steps": steps},
                   dtype=data.dtype, known=known)
            _settle(n)
            return
        if data.kind == "data":
            while key and key[-1] == slice(None):
                key.pop()
            n.emit("onnx.getitem", {"x": data, "key": tuple(key)})
            return
        n.emit("onnx.slice", {"x": data, "starts": starts, "ends": ends, "axes": axes, "steps": steps},
               dtype=data.dtype)
        return
    args = {"x": data, "starts": inputs["starts"], "ends": inputs["ends"], "axes": inputs["axes"],
            "steps": inputs["steps"]}
    n.emit("onnx.slice", args, dtype=data.dtype)


def _reshape_to(n: OnnxNode, x: Val, target: tuple) -> None:
    n.emit("reshape", {"x": x, "shape": tuple(int(d) for d in target)})


def _axes_input(n: OnnxNode, what="axes"):
    if n.has(1):
        return n.ints(1, what)
    axes = n.attr("axes")
    return None if axes is None else [int(a) for a in axes]


@converter("Unsqueeze")
def unsqueeze(n: OnnxNode) -> None:
    x = n.need(0, "data")
    axes = _axes_input(n)
    if axes is None:
        raise Unsupported("no axes")
    static = x.static_shape()
    if x.kind == "data" and static is not None:
        have = list(static)
        for axis in sorted(a + len(have) + len(axes) if a < 0 else a for a in axes):
            have.insert(axis, 1)
        _reshape_to(n, x, tuple(have))
        return
    known = x.known if x.kind == "host" else None
    if known is None and x.is_const and x.array.ndim == 0 and x.array.dtype.kind in "iu":
        known = (int(x.array),)
    n.emit("onnx.unsqueeze", {"x": x, "axes": tuple(axes)}, dtype=x.dtype,
           known=known if x.rank in (0, 1) and len(axes) == 1 else None)
    _settle(n)


@converter("Squeeze")
def squeeze(n: OnnxNode) -> None:
    x = n.need(0, "data")
    axes = _axes_input(n)
    static = x.static_shape()
    if x.kind == "data" and static is not None:
        drop = [positive_axis(a, len(static)) for a in axes] if axes is not None else \
            [i for i, d in enumerate(static) if d == 1]
        for a in drop:
            if static[a] != 1:
                raise Unsupported(f"dim {a} of the input (shape {static}) is not 1")
        _reshape_to(n, x, tuple(d for i, d in enumerate(static) if i not in drop))
        return
    source = getattr(x, "unsqueezed", None)
    if source is not None and axes is not None and tuple(axes) == source[1]:
        n.set(0, source[0])   # undoes the unsqueeze that made x (an LSTM output's direction axis)
        return
    n.emit("onnx.squeeze", {"x": x, "axes": None if axes is None else tuple(axes)}, dtype=x.dtype,
           known=x.known if x.kind == "host" else None)
    _settle(n)


@converter("Reshape")
def reshape(n: OnnxNode) -> None:
    x, target = n.need(0, "data"), n.need(1, "shape")
    allowzero = int(n.attr("allowzero", 0))
    if target.is_const:
        wanted = [int(d) for d in target.array.reshape(-1)]
        if not allowzero and x.shape is not None:
            for i, d in enumerate(wanted):
                if d == 0 and i < len(x.shape) and type(x.shape[i]) is int:
                    wanted[i] = x.shape[i]
        if x.kind == "data" and (allowzero or 0 not in wanted) and wanted.count(-1) <= 1:
            _reshape_to(n, x, tuple(wanted))
            return
        target = const(np.array(wanted, dtype=np.int64))
    n.emit("onnx.reshape", {"x": x, "shape": target, "allowzero": allowzero}, dtype=x.dtype)


@converter("Flatten")
def flatten(n: OnnxNode) -> None:
    x = n.need(0, "input")
    axis = int(n.attr("axis", 1))
    static = x.static_shape()
    if x.kind == "data" and static is not None:
        axis = axis + len(static) if axis < 0 else axis
        _reshape_to(n, x, (int(np.prod(static[:axis], dtype=np.int64)), int(np.prod(static[axis:], dtype=np.int64))))
        return
    if x.kind == "data" and x.shape is not None:
        a = axis + len(x.shape) if axis < 0 else axis
        tail = x.shape[a:]
        if a >= 1 and all(type(d) is int for d in tail) and all(type(d) is int for d in x.shape[1:a]):
            # only the leading dims before the axis may vary: -1 stands for them
            _reshape_to(n, x, (-1, int(np.prod(tail, dtype=np.int64))))
            return
    n.emit("onnx.flatten", {"x": x, "axis": axis}, dtype=x.dtype)


@converter("Expand")
def expand(n: OnnxNode) -> None:
    x, target = n.need(0, "input"), n.need(1, "shape")
    kind = "host" if x.kind != "data" and np.dtype(x.dtype).kind in "iub" else "data"
    n.emit("onnx.expand", {"x": x, "shape": target}, dtype=x.dtype, zero=x.zero, kind=kind)


@converter("ConstantOfShape")
def constant_of_shape(n: OnnxNode) -> None:
    target = n.need(0, "input")
    value = n.attr("value")
    value = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(-1)[0]
    value = np.asarray(value)
    n.emit("onnx.constant_of_shape", {"shape": target, "value": value[()]}, dtype=value.dtype,
           zero=not value.any(), kind="data")


@converter("Range")
def range_(n: OnnxNode) -> None:
    start, limit, delta = n.need(0, "start"), n.need(1, "limit"), n.need(2, "delta")
    if np.dtype(start.dtype) in (np.dtype(np.float16), np.dtype(dt.bfloat16)):
        # opset 27's stash_type 1 computes in float32 and rounds once, as the host's wider arithmetic does;
        # any other stash_type would compute in the 16-bit type itself
        n.refuse_attrs(stash_type=1)
    n.emit("onnx.range", {"start": start, "limit": limit, "delta": delta}, dtype=start.dtype)
