"""Shape plumbing and data movement: Constant, Identity, Shape, Gather, Slice, Squeeze, Unsqueeze,
Reshape, Flatten, Expand, ConstantOfShape, Range, Pad and Dropout (inference: an identity).

Where the values these compute are fixed at load time they fold into constants; where they depend
on named dims they stay as ``onnx.*`` host nodes. On data tensors, reshapes with a fixed target are
polyeng ``reshape`` nodes (the device keeps the tensor), slicing with fixed bounds an indexing node.

Past opset 21 these ops only gained dtypes (4-bit and 2-bit types, float8e8m0, which polyeng's
ops refuse as they refuse float8), except Range, whose opset 27 adds float16 and bfloat16 with
a ``stash_type``, and Pad, whose opsets 18 and 19 add the ``axes`` input and the ``wrap`` mode.
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from .builder import Unsupported, Val, const
from .context import OnnxNode, positive_axis
from .ops_math import _check_dtype, _settle
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
        known = tuple(d if type(d) is int or (isinstance(d, str) and d) else None for d in dims)
        if all(type(k) is int for k in known):
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
    if x.rank is not None:
        rank = x.rank + len(axes)
        normal = [a + rank if a < 0 else a for a in axes]
        if any(not 0 <= a < rank for a in normal) or len(set(normal)) != len(normal):
            raise ValueError(f"axes={list(axes)}: expected distinct axes in [-{rank}, {rank}) for the "
                             f"{rank}-D result")
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
    fixed = _fixed_target(x, target, allowzero)
    if fixed is not None:
        target = const(fixed)
    if target.is_const:
        wanted = [int(d) for d in target.array.reshape(-1)]
        if any(d < -1 for d in wanted) or wanted.count(-1) > 1:
            raise ValueError(f"shape={wanted}: each size is >= 0, or -1 once (inferred)")
        if not allowzero and x.shape is not None:
            for i, d in enumerate(wanted):
                if d == 0 and i < len(x.shape) and type(x.shape[i]) is int:
                    wanted[i] = x.shape[i]
        if x.kind == "data" and (allowzero or 0 not in wanted) and wanted.count(-1) <= 1:
            _reshape_to(n, x, tuple(wanted))
            return
        target = const(np.array(wanted, dtype=np.int64))
    n.emit("onnx.reshape", {"x": x, "shape": target, "allowzero": allowzero}, dtype=x.dtype)


def _fixed_target(x: Val, target: Val, allowzero: int):
    """A Reshape target computed at run time as a fixed one, where each element is an int or a
    named dim: a named dim in the input's place copies it (0), one other stands for the rest (-1)."""
    known = target.known if target.kind == "host" else None
    if known is None or allowzero or any(k is None for k in known):
        return None
    wanted, inferred = [], 0
    for i, k in enumerate(known):
        if type(k) is int:
            inferred += k == -1
            wanted.append(k)
        elif x.shape is not None and i < len(x.shape) and x.shape[i] == k:
            wanted.append(0)
        else:
            inferred += 1
            wanted.append(-1)
    return None if inferred > 1 else np.array(wanted, dtype=np.int64)


@converter("Flatten")
def flatten(n: OnnxNode) -> None:
    x = n.need(0, "input")
    axis = int(n.attr("axis", 1))
    rank = x.rank
    if rank is not None:
        if not -rank <= axis <= rank:
            raise Unsupported(f"axis={axis} is out of range for rank {rank} (expected {-rank} to {rank})")
        axis = axis + rank if axis < 0 else axis
    static = x.static_shape()
    if x.kind == "data" and static is not None:
        _reshape_to(n, x, (int(np.prod(static[:axis], dtype=np.int64)), int(np.prod(static[axis:], dtype=np.int64))))
        return
    if x.kind == "data" and rank is not None:
        head, tail = x.shape[:axis], x.shape[axis:]
        # the named dims all on one side of the axis: -1 stands for their product
        if all(type(d) is int for d in tail) and int(np.prod(tail, dtype=np.int64)) > 0:
            _reshape_to(n, x, (-1, int(np.prod(tail, dtype=np.int64))))
            return
        if all(type(d) is int for d in head) and int(np.prod(head, dtype=np.int64)) > 0:
            _reshape_to(n, x, (int(np.prod(head, dtype=np.int64)), -1))
            return
    n.emit("onnx.flatten", {"x": x, "axis": axis}, dtype=x.dtype, kind="data" if x.kind == "data" else None)


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


PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


@converter("Pad")
def pad(n: OnnxNode) -> None:
    """ONNX's pads ``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]`` over every axis (or over
    ``axes``, opset 18 on) become polyeng's, last dim first; edge is replicate. A negative pad crops
    first, as onnxruntime does: the same as polyeng's (PyTorch's) reading of the input's own edge
    except where a reflection would reach into the cropped part, which is refused."""
    x = n.need(0, "data")
    _check_dtype(n, x)
    mode = n.attr("mode", "constant")
    if mode not in PAD_MODES:
        raise Unsupported(f"mode={mode!r} is not supported (constant, reflect and edge are)")
    pads = n.ints(1, "pads")
    if pads is None:
        raise Unsupported("input 1 (pads) is missing")
    axes = n.ints(3, "axes") if n.has(3) else None
    rank = x.rank if axes is not None or x.rank is not None else len(pads) // 2
    if rank is None:
        raise Unsupported("the input's rank is unknown, and axes are given")
    if axes is None:
        axes = list(range(rank))
    axes = [positive_axis(a, rank, "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise Unsupported(f"axes={axes} repeats an axis")
    if len(pads) != 2 * len(axes):
        raise Unsupported(f"pads has {len(pads)} values; expected 2 per axis ({2 * len(axes)})")
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[len(axes) + i]
    if mode == "reflect":
        _reflect_fits(x, begin, end)
    value = 0
    if mode == "constant" and n.has(2):
        constant = n.const(2, "constant_value")
        if constant.size > 1:
            raise Unsupported(f"constant_value has {constant.size} values; expected one")
        if constant.size:
            item = constant.reshape(-1)[0]
            value = bool(item) if constant.dtype == np.bool_ else \
                int(item) if constant.dtype.kind in "iu" else float(item)
    first = next((a for a in range(rank) if begin[a] or end[a]), rank)
    if first == rank:   # nothing padded or cropped
        n.set(0, x)
        return
    torch_pads = tuple(p for a in range(rank - 1, first - 1, -1) for p in (begin[a], end[a]))
    shape = None
    if x.shape is not None:   # what the pads make of each fixed dim (ONNX inference may not say)
        shape = tuple(d + begin[a] + end[a] if type(d) is int else (d if not (begin[a] or end[a]) else None)
                      for a, d in enumerate(x.shape))
    n.emit("pad", {"x": x, "pads": torch_pads, "mode": PAD_MODES[mode], "value": value},
           **({} if shape is None or n.out_type(0)[1] is not None else {"shape": shape}))


def _reflect_fits(x: Val, begin: list, end: list) -> None:
    """Unsupported where polyeng's reflect (about the input's own edge, PyTorch's) would differ from
    ONNX's (onnxruntime crops first, then reflects the cropped part), or where a pad reaches past the
    other end (numpy's reflect repeats the reflection; PyTorch's and polyeng's pads stay below the size)."""
    shape = x.shape or (None,) * len(begin)
    for a, (b, e) in enumerate(zip(begin, end)):
        if not (b or e):
            continue
        size = shape[a] if type(shape[a]) is int else None
        if size is None:
            if (b < 0 < e) or (e < 0 < b):
                raise Unsupported(f"reflect pads ({b}, {e}) crop one end of axis {a} and pad the other, and "
                                  f"the axis' size is not fixed at load time")
            continue
        kept = size + min(b, 0) + min(e, 0)
        if max(b, e) >= kept:
            raise Unsupported(f"reflect pads ({b}, {e}) on axis {a} of size {size}: each pad must be less than "
                              f"the size left after cropping ({kept}), as polyeng reflects once")


@converter("Dropout")
def dropout(n: OnnxNode) -> None:
    """Inference: the output is the input (``ratio`` is ignored); the mask, if used, is all true."""
    x = n.need(0, "data")
    if n.has(2):
        training = n.const(2, "training_mode")
        if np.asarray(training).any():
            raise Unsupported("training_mode is true; polyeng runs Dropout for inference only, as an identity")
    n.set(0, x)
    if n.used(1):
        static = x.static_shape()
        if static is None:
            raise Unsupported("its mask output is used and the input's shape is not fixed at load time")
        n.set_const(1, np.ones(static, np.bool_))
