"""The nodes an imported ONNX model keeps for what polyeng has no op for: shape arithmetic that
depends on dims known only at run time, and data movement whose target shape follows from them.

Each runs on the host with numpy on small integer values, except the reshapes (``onnx.reshape``,
``onnx.squeeze``, ``onnx.unsqueeze``, ``onnx.flatten``), which compute their target from the input's
shape and then call ``polyeng.reshape``, so a device tensor stays on its device. They only move or
relabel values: the mixed precision pass treats them as FOLLOW without a warning.

This module is the run-time half of an imported model (the converters are the load-time half):
a saved graph with ``onnx.*`` nodes runs through it, so it imports neither the ``onnx`` package
nor the converters.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import dtypes as dt
from ..engine.api import host_array as _host


def _ints(value) -> list:
    """``value`` (an array, list or number) as a flat list of Python ints. ``tolist`` makes them
    in one call: converting numpy's scalars one by one cost microseconds per shape."""
    flat = np.asarray(value).reshape(-1)
    if flat.dtype.kind in "iu":
        return flat.tolist()
    return [int(v) for v in flat.tolist()]


def _axes(axes, ndim: int) -> list:
    return sorted(a + ndim if a < 0 else a for a in _ints(axes))


# --- shape values ------------------------------------------------------------------------------

def shape(x, start=0, end=None):
    return np.array(tuple(x.shape)[start:end], dtype=np.int64)


def gather(data, indices, axis=0):
    data, indices = _host(data), _host(indices)
    return np.take(data, indices.astype(np.int64), axis=axis)


def concat(values, axis=0):
    return np.concatenate([_host(v) for v in values], axis=axis)


def binary(a, b, op):
    a, b = _host(a), _host(b)
    if op == "add":
        return np.add(a, b)
    if op == "sub":
        return np.subtract(a, b)
    if op == "mul":
        return np.multiply(a, b)
    if op == "div":
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":   # ONNX integer division truncates toward zero
            if np.any(b == 0):
                raise ValueError("integer division by zero")
            return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
        return np.divide(a, b)
    raise ValueError(f"onnx.binary: unknown op {op!r}")


COMPARE = {"equal": np.equal, "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
           "less_equal": np.less_equal}
LOGICAL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}


def compare(a, b, op):
    if op not in COMPARE:
        raise ValueError(f"onnx.compare: unknown op {op!r}")
    return COMPARE[op](_host(a), _host(b))


def logical(values, op):
    """And, Or, Xor of two bool values, Not of one."""
    values = [_host(v) for v in values]
    if op == "not":
        return np.logical_not(values[0])
    a, b = values
    if a.size == 1 and a.ndim <= b.ndim and a.dtype == b.dtype == np.bool_ and op in LOGICAL:
        return _with_scalar(bool(a.reshape(-1)[0]), b, op)
    if b.size == 1 and b.ndim <= a.ndim and a.dtype == b.dtype == np.bool_ and op in LOGICAL:
        return _with_scalar(bool(b.reshape(-1)[0]), a, op)
    return LOGICAL[op](a, b)


def _with_scalar(scalar: bool, other: np.ndarray, op: str) -> np.ndarray:
    """``other`` (bool) and, or or xor one bool: a copy, all False, all True or its negation.
    numpy's loop broadcasting a 0-d bool took 12 us for a 128x128 causal mask, a copy 0.7 us."""
    if op == "and":
        return other.copy() if scalar else np.zeros(other.shape, np.bool_)
    if op == "or":
        return np.ones(other.shape, np.bool_) if scalar else other.copy()
    return np.logical_not(other) if scalar else other.copy()


def isnan(x):
    return np.isnan(_host(x))


def isinf(x, negative=1, positive=1):
    x = _host(x)
    return np.isinf(x) & ((x < 0) if not positive else True) & ((x > 0) if not negative else True)


def extremum(values, op):
    """Max or Min of one or more values, broadcast together; NaN propagates."""
    values = [_host(v) for v in values]
    function = np.maximum if op == "max" else np.minimum
    out = values[0]
    for v in values[1:]:
        out = function(out, v)
    return np.array(out, copy=True) if len(values) == 1 else out


def reduce(x, axes, keepdims, op):
    x = _host(x)
    if x.size == 0 and op != "sum":
        raise ValueError(f"Reduce{op.title()} of an empty tensor")
    out = REDUCE[op](x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims))
    return np.asarray(out).astype(x.dtype, copy=False)   # numpy's sum widens small integers; ONNX keeps the type


def _wrapped(indices, size, what: str):
    """Negative indices counted from the end; an index outside [-size, size) is a ValueError."""
    indices = indices.astype(np.int64)
    if indices.size and (indices.min() < -size or indices.max() >= size):
        bad = indices[(indices < -size) | (indices >= size)].reshape(-1)[0]
        raise ValueError(f"{what}: index {int(bad)} is out of range for a dim of {size}")
    return np.where(indices < 0, indices + size, indices)


def gather_elements(data, indices, axis=0):
    data, indices = _host(data), _host(indices)
    axis = axis + data.ndim if axis < 0 else axis
    return np.take_along_axis(data, _wrapped(indices, data.shape[axis], "GatherElements"), axis=axis)


def gather_nd(data, indices, batch_dims=0):
    """ONNX GatherND: the last dim of ``indices`` (k) indexes data's first k dims after ``batch_dims``.
    The checked index of read-only ``indices`` (shape arithmetic a host program keeps, such as an
    attention mask's positions) is kept per data shape: later calls only gather."""
    data, indices = _host(data), _host(indices)
    b, k = int(batch_dims), indices.shape[-1]
    key = (id(indices), data.shape[:b + k], b)
    found = _nd_index.get(key) if not indices.flags.writeable else None
    if found is None or found[0] is not indices:
        batch = int(np.prod(data.shape[:b], dtype=np.int64))
        picks = indices.reshape((batch, -1, k))
        columns = [_wrapped(picks[..., j], data.shape[b + j], "GatherND") for j in range(k)]
        found = (indices, batch, (np.arange(batch)[:, None],) + tuple(columns))
        if not indices.flags.writeable:
            if len(_nd_index) >= 64:
                _nd_index.clear()
            _nd_index[key] = found   # the indices held beside it: no other array takes their id
    _, batch, index = found
    out = data.reshape((batch,) + data.shape[b:])[index]
    return out.reshape(indices.shape[:-1] + data.shape[b + k:])


_nd_index: dict = {}   # (id of read-only indices, data's indexed shape, batch_dims) -> (indices, batch, index)


def range_(start, limit, delta):
    start, limit, delta = (_host(v).reshape(()) for v in (start, limit, delta))
    dtype = np.result_type(start, limit, delta)
    if delta == 0:
        raise ValueError("Range: delta is 0")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return (start + np.arange(count) * delta).astype(dtype)


def constant_of_shape(shape, value):
    return np.full(tuple(_ints(shape)), value, dtype=np.asarray(value).dtype)


def expand(x, shape):
    x = _host(x)
    out = broadcast_shape(x.shape, tuple(_ints(shape)))
    if out == x.shape:   # a read-only view, as numpy's broadcast_to gives
        view = x.view()
        view.flags.writeable = False
        return view
    result = np.empty(out, x.dtype)
    np.copyto(result, x)
    return result


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of ``shapes`` (tuples of ints), or ValueError naming them; in Python, as
    ``np.broadcast_shapes`` took 1.6 us on two 4-d shapes."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, rank - len(s)):
            if d != out[i]:
                if out[i] == 1:
                    out[i] = d
                elif d != 1:
                    raise ValueError(f"shapes {', '.join(map(str, shapes))} do not broadcast together")
    return tuple(out)


def slice_(x, starts, ends, axes=None, steps=None):
    x = _host(x)
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else _ints(axes)
    steps = [1] * len(starts) if steps is None else _ints(steps)
    key = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise ValueError("Slice: a step is 0")
        key[axis + x.ndim if axis < 0 else axis] = slice(start, end, step)
    return x[tuple(key)]


def astype(x, dtype):
    return _host(x).astype(dt.as_dtype(dtype) if isinstance(dtype, str) else dtype)


def where(then, else_, cond):
    then, else_, cond = _host(then), _host(else_), _host(cond)
    if (then.size == 1 and else_.size == 1 and then.dtype == else_.dtype and then.dtype.itemsize in _UINTS
            and not then.dtype.hasobject and then.dtype.isnative and cond.dtype == np.bool_
            and max(then.ndim, else_.ndim) <= cond.ndim):
        return _select(then, else_, cond)
    return np.where(cond, then, else_)


_UINTS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _select(then, else_, cond):
    """``np.where(cond, then, else_)`` of one value each, bit for bit: the bits of ``else_``, xor
    ``cond`` times the bits that differ in ``then`` (an attention mask of 0 and the lowest float:
    np.where took 11.6-17 us at 128x128, this 6-9 us)."""
    bits = _UINTS[then.dtype.itemsize]
    t, e = then.reshape(-1).view(bits)[0], else_.reshape(-1).view(bits)[0]
    out = np.empty(cond.shape, then.dtype)
    word = out.reshape(-1).view(bits).reshape(cond.shape)
    np.copyto(word, cond, casting="unsafe")   # 0 or 1
    word *= t ^ e
    word ^= e
    return out


# --- reshapes on the input's device ------------------------------------------------------------

def _reshape(x, target):
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x).reshape(target)
    from ..ops import reshape as polyeng_reshape
    return polyeng_reshape(x, target)


def reshape_target(have, shape, allowzero=0) -> tuple:
    """ONNX Reshape's target: 0 copies the input's dim at that position unless ``allowzero``."""
    target = _ints(shape)
    if not allowzero:
        for i, d in enumerate(target):
            if d == 0:
                if i >= len(have):
                    raise ValueError(f"Reshape: shape {tuple(target)} copies dim {i} of an input of rank {len(have)}")
                target[i] = have[i]
    elif 0 in target and -1 in target:
        raise ValueError(f"Reshape: shape {tuple(target)} has both 0 (allowzero) and -1")
    return tuple(target)


def reshape(x, shape, allowzero=0):
    return _reshape(x, reshape_target(tuple(x.shape), shape, allowzero))


def unsqueeze(x, axes):
    have = list(x.shape)
    for axis in _axes(axes, len(have) + len(_ints(axes))):
        have.insert(axis, 1)
    return _reshape(x, tuple(have))


def squeeze(x, axes=None):
    have = tuple(x.shape)
    if axes is None:
        return _reshape(x, tuple(d for d in have if d != 1))
    drop = _axes(axes, len(have))
    for axis in drop:
        if have[axis] != 1:
            raise ValueError(f"Squeeze: dim {axis} of an input of shape {have} is not 1")
    return _reshape(x, tuple(d for i, d in enumerate(have) if i not in drop))


def flatten(x, axis=1):
    have = tuple(x.shape)
    axis = axis + len(have) if axis < 0 else axis
    return _reshape(x, (math.prod(have[:axis]), math.prod(have[axis:])))


def resize_arguments(shape, scales, sizes, error=ValueError):
    """(scale_factor, size) for polyeng's upsample ops from Resize's scales or sizes, which may
    not resize the batch or channel dim (the Resize converter asks the same at load time)."""
    if scales is not None:
        scales = [float(s) for s in np.asarray(scales).reshape(-1)]
        if scales[:2] != [1.0, 1.0]:
            raise error(f"scales={scales} resize the batch or channel dim")
        return tuple(scales[2:]), None
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    for d, s in zip(shape[:2], sizes[:2]):
        if type(d) is int and d != s:
            raise error(f"sizes={sizes} resize the batch or channel dim")
    return None, tuple(sizes[2:])


def resize(x, scales, sizes, mode, ctm):
    """Resize with scales or sizes known only at run time (computed from named dims)."""
    from ..ops import upsample_bilinear2d, upsample_nearest
    factor, size = resize_arguments(tuple(x.shape), None if scales is None else _host(scales),
                                    None if sizes is None else _host(sizes))
    if mode == "nearest":
        return upsample_nearest(x, size=size, scale_factor=factor)
    out = size or tuple(int(np.floor(d * f)) for d, f in zip(x.shape[2:], factor))
    align = ctm == "align_corners"
    if ctm == "pytorch_half_pixel" and 1 in out:
        if any(d != 1 for d in out):
            raise ValueError(f"Resize: coordinate_transformation_mode='pytorch_half_pixel' to {out}: an output dim "
                             f"of 1 beside one that is not is not supported")
        align = True
    return upsample_bilinear2d(x, size=size, scale_factor=factor, align_corners=align)


def wrap_indices(ids, rows):
    """ONNX Gather's negative indices counted from the end, as ``embedding`` takes them."""
    if isinstance(ids, np.ndarray) and ids.size and ids.min() < 0:
        return np.where(ids < 0, ids + rows, ids)
    return ids


RUN = {
    "onnx.shape": shape, "onnx.gather": gather, "onnx.concat": concat, "onnx.binary": binary,
    "onnx.compare": compare, "onnx.logical": logical, "onnx.isnan": isnan, "onnx.isinf": isinf,
    "onnx.extremum": extremum, "onnx.reduce": reduce, "onnx.gather_elements": gather_elements,
    "onnx.gather_nd": gather_nd,
    "onnx.range": range_, "onnx.constant_of_shape": constant_of_shape, "onnx.expand": expand,
    "onnx.slice": slice_, "onnx.astype": astype, "onnx.where": where, "onnx.reshape": reshape,
    "onnx.unsqueeze": unsqueeze, "onnx.squeeze": squeeze, "onnx.flatten": flatten, "onnx.resize": resize,
    "onnx.wrap_indices": wrap_indices,
}


def _arrays_out(fn):
    """numpy returns scalars for 0-d results; graph values are arrays."""
    def run(*args, **kwargs):
        result = fn(*args, **kwargs)
        return np.asarray(result) if isinstance(result, np.generic) else result
    run.__name__ = fn.__name__
    return run


RUN = {op: _arrays_out(fn) for op, fn in RUN.items()}

def result_type(op: str, args: dict, dtype) -> np.dtype:
    """The result dtype of a node whose first input has ``dtype`` (``onnx.where`` lists ``then``
    first, the condition last)."""
    if op == "onnx.shape":
        return np.dtype(np.int64)
    if op == "onnx.astype":
        return dt.as_dtype(args["dtype"])
    if op == "onnx.constant_of_shape":
        return np.asarray(args["value"]).dtype
    if op in ("onnx.compare", "onnx.logical", "onnx.isnan", "onnx.isinf"):
        return np.dtype(np.bool_)
    return np.dtype(dtype)


def _registered() -> None:
    """Each ``onnx.*`` function as a host op of the catalogue: they only move, relabel or compute
    shapes, FOLLOW by nature, so the mixed precision pass needs no rule for them (``onnx.getitem``
    is Slice or Gather with fixed indices)."""
    from ..engine.mixed_precision import Category
    from ..graph.numpy_nodes import getitem
    from ..ops.catalogue import OpSpec, register_host
    from .host_programs import PROGRAM, program
    for name, function in {**RUN, "onnx.getitem": getitem, PROGRAM: program}.items():
        register_host(OpSpec(name=name, function=function, host=True, category=Category.FOLLOW,
                             result_type=lambda args, dtype, op=name: result_type(op, args, dtype)))


_registered()
