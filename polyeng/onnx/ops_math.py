"""Converters of the ONNX ops that compute elementwise or along axes: arithmetic and activations
(HardSwish, HardSigmoid, LeakyRelu and Clip among them), Softmax, LayerNormalization, Gelu,
ReduceMean, GlobalAveragePool, Cast, Where, Concat and Transpose.

Opsets past 21 changed none of these in a way that matters here: Cast (23, 24, 25, 28) and
Transpose (23 to 25) only gained dtypes (4-bit, 2-bit and 6-bit types, float8e8m0). polyeng's
ops refuse tensors of those as they refuse float8 ones; Cast refuses them as its target and
converts from them on the host, which is exact.
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from .builder import Unsupported, Val, const
from .context import OnnxNode, positive_axis
from .registry import converter

BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
UNARY = {"Sqrt": "sqrt", "Erf": "erf", "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu", "Exp": "exp",
         "Abs": "abs", "Neg": "neg", "Log": "log", "Reciprocal": "reciprocal"}
POLYENG_DTYPES = {np.dtype(d) for d in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32,
                                        np.int64, np.bool_)} | {np.dtype(dt.bfloat16)}


def _any_data(*vals) -> bool:
    return any(v is not None and v.kind == "data" for v in vals)


def _check_dtype(n: OnnxNode, *vals) -> None:
    for v in vals:
        if v is not None and np.dtype(v.dtype) not in POLYENG_DTYPES:
            raise Unsupported(f"dtype {np.dtype(v.dtype).name} is not one polyeng computes with")


@converter("Add")
@converter("Sub")
@converter("Mul")
@converter("Div")
def binary(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    op = BINARY[n.op_type]
    integer = np.dtype(a.dtype).kind in "iub"
    if integer and (op == "div" or not _any_data(a, b)):
        known = _known_binary(op, a, b)
        n.emit("onnx.binary", {"a": a, "b": b, "op": op}, dtype=a.dtype, known=known)
        _settle(n)
        return
    n.emit(op, {"a": a, "b": b})


@converter("Pow")
def pow_(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    if np.dtype(a.dtype).kind != "f":
        raise Unsupported(f"Pow on {np.dtype(a.dtype).name}: polyeng's pow takes floats")
    exponent = b
    if b.is_const and np.dtype(b.dtype) != np.dtype(a.dtype):   # ONNX allows another exponent dtype
        exponent = const(b.array.astype(a.dtype), name=b.name)
    n.emit("pow", {"x": a, "exponent": exponent})


def _known_binary(op, a: Val, b: Val):
    """Per-element ints of an integer shape computation where both sides are known there."""
    ka, kb = _known(a), _known(b)
    if ka is None or kb is None:
        return None
    if len(ka) == 1:
        ka = ka * len(kb)
    if len(kb) == 1:
        kb = kb * len(ka)
    if len(ka) != len(kb):
        return None
    out = []
    for x, y in zip(ka, kb):
        if type(x) is not int or type(y) is not int:
            out.append(_named_dim_kept(op, x, y))
        elif op == "add":
            out.append(x + y)
        elif op == "sub":
            out.append(x - y)
        elif op == "mul":
            out.append(x * y)
        else:
            out.append(None if y == 0 else int(np.sign(x) * np.sign(y)) * (abs(x) // abs(y)))
    return tuple(out)


def _named_dim_kept(op, x, y):
    """A named dim that an operation with a neutral int leaves as it is (n + 0, n * 1, ...), else None."""
    if isinstance(x, str) and type(y) is int and ((op in ("add", "sub") and y == 0) or (op in ("mul", "div") and y == 1)):
        return x
    if isinstance(y, str) and type(x) is int and ((op == "add" and x == 0) or (op == "mul" and x == 1)):
        return y
    return None


def _known(v: Val):
    if v.is_const and v.array.ndim <= 1 and v.array.dtype.kind in "iu":
        return tuple(int(x) for x in v.array.reshape(-1))
    return v.known


def _settle(n: OnnxNode, i: int = 0) -> None:
    """A host shape value whose every element is known becomes a constant."""
    if not n.used(i):
        return
    v = n.b.get(n.output_names[i])
    if v.kind == "host" and v.known is not None and all(type(k) is int for k in v.known) and v.rank in (0, 1):
        array = np.array(v.known, dtype=v.dtype)
        if v.rank == 0:
            array = array.reshape(())
        n.set_const(i, array)


@converter("Sqrt")
@converter("Erf")
@converter("Tanh")
@converter("Sigmoid")
@converter("Relu")
@converter("Exp")
@converter("Abs")
@converter("Neg")
@converter("Log")
@converter("Reciprocal")
def unary(n: OnnxNode) -> None:
    x = n.need(0, "X")
    _check_dtype(n, x)
    n.emit(UNARY[n.op_type], {"x": x})


@converter("HardSwish", opsets=(14, None))   # the op is new in opset 14
def hard_swish(n: OnnxNode) -> None:
    x = n.need(0, "X")
    _check_dtype(n, x)
    n.emit("hardswish", {"x": x})   # ONNX's alpha 1/6 and beta 0.5: x * relu6(x + 3) / 6


@converter("HardSigmoid")
def hard_sigmoid(n: OnnxNode) -> None:
    """max(0, min(1, alpha x + beta)): polyeng's hardsigmoid (relu6(x + 3) / 6) where alpha and beta
    are 1/6 and 0.5 as float32 attributes hold them, else mul, add and clip in x's dtype."""
    x = n.need(0, "X")
    _check_dtype(n, x)
    alpha, beta = _float_attr(n, "alpha", 0.2), _float_attr(n, "beta", 0.5)
    if np.float32(alpha) == np.float32(1 / 6) and np.float32(beta) == np.float32(0.5):
        n.emit("hardsigmoid", {"x": x})
        return
    dtype = np.dtype(x.dtype)
    (scaled,) = n.b.emit("mul", {"a": x, "b": const(dt.round_to(np.float64(alpha), dtype))}, [(dtype, x.shape)],
                         names=[f"{n.name}.alpha_x"])
    (shifted,) = n.b.emit("add", {"a": scaled, "b": const(dt.round_to(np.float64(beta), dtype))},
                          [(dtype, x.shape)], names=[f"{n.name}.plus_beta"])
    n.emit("clip", {"x": shifted, "min": 0.0, "max": 1.0})


@converter("LeakyRelu")
def leaky_relu(n: OnnxNode) -> None:
    x = n.need(0, "X")
    _check_dtype(n, x)
    n.emit("leaky_relu", {"x": x, "negative_slope": _float_attr(n, "alpha", 0.01)})


def _float_attr(n: OnnxNode, name: str, default: float) -> float:
    """A float attribute as ONNX holds it, in float32 (its default too, as the op schema stores it)."""
    return float(np.float32(n.attr(name, default)))


@converter("Clip")   # min and max are inputs from opset 11 on
def clip(n: OnnxNode) -> None:
    """Bounds known at load time become numbers (0-d) or arrays, run-time ones array bounds; no
    bound at all is the identity. Integer Clip folds when everything is a constant."""
    x = n.need(0, "input")
    _check_dtype(n, x)
    bounds = {"min": n.val(1), "max": n.val(2)}
    if all(b is None for b in bounds.values()):
        n.set(0, x)
        return
    if np.dtype(x.dtype).kind != "f":
        if x.is_const and all(b is None or b.is_const for b in bounds.values()):
            lo, hi = (None if b is None else b.array for b in bounds.values())
            n.set_const(0, np.clip(x.array, lo, hi).astype(x.dtype))
            return
        raise Unsupported(f"Clip on {np.dtype(x.dtype).name} computed at run time: polyeng's clip takes floats")
    args = {"x": x}
    for name, b in bounds.items():
        args[name] = float(b.array) if b is not None and b.is_const and b.array.ndim == 0 else b
    n.emit("clip", args)


@converter("Softmax")
@converter("LogSoftmax")
def softmax(n: OnnxNode) -> None:
    x = n.need(0, "input")
    axis = positive_axis(int(n.attr("axis", -1)), x.rank) if x.rank is not None else int(n.attr("axis", -1))
    n.emit("softmax" if n.op_type == "Softmax" else "log_softmax", {"x": x, "axis": axis})


@converter("Gelu", opsets=(20, None))   # the op is new in opset 20
def gelu(n: OnnxNode) -> None:
    approximate = n.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate={approximate!r} is not supported")
    n.emit("gelu", {"x": n.need(0, "X"), "approximate": approximate})


@converter("LayerNormalization", opsets=(17, None))   # the op is new in opset 17
def layer_norm(n: OnnxNode) -> None:
    x, scale, bias = n.need(0, "X"), n.need(1, "Scale"), n.val(2)
    if n.used(1) or n.used(2):
        raise Unsupported("the Mean and InvStdDev outputs are not computed")
    n.refuse_attrs(stash_type=1)
    axis = int(n.attr("axis", -1))
    if x.rank is None:
        raise Unsupported("the input's rank is unknown")
    axis = positive_axis(axis, x.rank)
    normalized = x.shape[axis:]
    if any(type(d) is not int for d in normalized):
        if scale.shape is not None and len(scale.shape) == len(normalized) and all(type(d) is int for d in scale.shape):
            normalized = scale.shape
        else:
            raise Unsupported("the normalized dims are not fixed")
    normalized = tuple(normalized)
    weight = _affine(scale, normalized, "Scale")
    beta = None if bias is None else _affine(bias, normalized, "B")
    n.emit("layer_norm", {"x": x, "normalized_shape": normalized, "weight": weight, "bias": beta,
                          "eps": float(n.attr("epsilon", 1e-5))})


def _affine(v: Val, normalized: tuple, what: str) -> Val:
    if v.is_const:
        return const(np.ascontiguousarray(np.broadcast_to(v.array, normalized)), name=v.name)
    if tuple(v.shape or ()) != normalized:
        raise Unsupported(f"{what} of shape {v.shape} computed at run time does not have the normalized shape")
    return v


@converter("ReduceMean", opsets=(13, 17))
def reduce_mean_axes_attribute(n: OnnxNode) -> None:
    x = n.need(0, "data")
    axes = n.attr("axes")
    _mean(n, x, None if axes is None else list(axes))


@converter("ReduceMean", opsets=(18, None))   # axes became an input, and empty axes may mean "none"
def reduce_mean_axes_input(n: OnnxNode) -> None:
    x = n.need(0, "data")
    axes = n.ints(1, "axes")
    if not axes:
        if int(n.attr("noop_with_empty_axes", 0)):
            n.set(0, x)
            return
        axes = None
    _mean(n, x, axes)


def _mean(n: OnnxNode, x: Val, axes) -> None:
    keepdims = bool(int(n.attr("keepdims", 1)))
    if axes is not None:
        axes = tuple(positive_axis(int(a), x.rank, "axes") for a in axes)
        if len(set(axes)) != len(axes):
            raise Unsupported(f"axes={list(axes)} repeats an axis")
    if np.dtype(x.dtype).kind != "f":
        raise Unsupported(f"ReduceMean on {np.dtype(x.dtype).name}: polyeng's mean takes floats")
    n.emit("mean", {"x": x, "axis": axes, "keepdims": keepdims})


@converter("GlobalAveragePool")
def global_average_pool(n: OnnxNode) -> None:
    x = n.need(0, "X")
    if x.rank is None or x.rank < 3:
        raise Unsupported("the input needs (N, C, spatial...) dims of known rank")
    n.emit("mean", {"x": x, "axis": tuple(range(2, x.rank)), "keepdims": True})


@converter("Cast")   # round_mode (opset 24) only rounds to float8e8m0, which is refused
def cast(n: OnnxNode) -> None:
    import onnx
    x = n.need(0, "input")
    to = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(n.attr("to"))))
    if to not in POLYENG_DTYPES:
        raise Unsupported(f"to={to.name} is not one polyeng computes with")
    if np.dtype(x.dtype) == to:
        n.set(0, x)
        return
    if to.kind == "f" and x.kind == "data" and np.dtype(x.dtype).kind == "f":
        n.emit("cast", {"x": x, "dtype": to})
        return
    known = x.known if x.kind == "host" and to.kind in "iu" else None
    n.emit("onnx.astype", {"x": x, "dtype": to}, dtype=to, known=known)


@converter("Where")
def where(n: OnnxNode) -> None:
    cond, then, else_ = n.need(0, "condition"), n.need(1, "X"), n.need(2, "Y")
    if np.dtype(cond.dtype) != np.bool_:
        raise Unsupported("the condition is not bool")
    if _any_data(cond, then, else_) and not _condition_grows(cond, then, else_):
        n.emit("select", {"cond": cond, "then": then, "else_": else_})
    else:
        n.emit("onnx.where", {"then": then, "else_": else_, "cond": cond}, dtype=then.dtype)


def _condition_grows(cond: Val, then: Val, else_: Val) -> bool:
    """Whether the condition may broadcast the values to a larger shape (ONNX allows it, polyeng's
    select does not: such a Where runs on the host)."""
    if cond.shape is None or then.shape is None or else_.shape is None:
        return True
    rank = max(len(then.shape), len(else_.shape))
    if len(cond.shape) > rank:
        return True
    values = [[1] * (rank - len(s)) + list(s) for s in (then.shape, else_.shape)]
    for axis, c in enumerate([1] * (rank - len(cond.shape)) + list(cond.shape)):
        if c != 1 and all(v[axis] == 1 for v in values):
            return True
        if type(c) is not int and c is not None and all(v[axis] != c and type(v[axis]) is int for v in values):
            return True
    return False


@converter("Concat")
def concat(n: OnnxNode) -> None:
    vals = [n.b.get(name) for name in n.input_names if name]
    if not vals:
        raise Unsupported("no inputs")
    rank = next((v.rank for v in vals if v.rank is not None), None)
    axis = positive_axis(int(n.attr("axis")), rank) if rank is not None else int(n.attr("axis"))
    if _any_data(*vals):
        n.emit("concat", {"tensors": vals, "axis": axis})
        return
    known = None
    if rank == 1:
        parts = [_known(v) for v in vals]
        if all(p is not None for p in parts):
            known = tuple(k for p in parts for k in p)
    n.emit("onnx.concat", {"values": vals, "axis": axis}, dtype=vals[0].dtype, known=known)
    _settle(n)


@converter("Transpose")
def transpose(n: OnnxNode) -> None:
    x = n.need(0, "data")
    perm = n.attr("perm")
    if perm is None:
        if x.rank is None:
            raise Unsupported("no perm and the input's rank is unknown")
        perm = list(range(x.rank - 1, -1, -1))
    perm = tuple(int(p) for p in perm)
    if x.rank is not None and sorted(perm) != list(range(x.rank)):
        raise ValueError(f"perm={list(perm)} is not a permutation of the input's {x.rank} axes")
    if perm == tuple(range(len(perm))):
        n.set(0, x)
        return
    if _moves_only_unit_axes(x.shape, perm):
        _unit_axes_moved(n, x, perm)
        return
    n.emit("permute_contiguous", {"x": x, "dims": perm})


def _moves_only_unit_axes(shape, perm) -> bool:
    """Whether ``perm`` keeps every axis not known to be 1 in its order: the result then holds the
    input's bytes in the input's order (an LSTM's Y (L, 1, N, H) to (L, N, 1, H))."""
    if shape is None or len(shape) != len(perm):
        return False
    kept = [a for a in perm if shape[a] != 1]
    return kept == sorted(kept) and len(kept) < len(perm)


def _unit_axes_moved(n: OnnxNode, x, perm) -> None:
    """A Transpose that moves only axes of size 1, as a reshape of ``x`` (a view, not a copy):
    with a fixed shape the ``reshape`` op, else its unit axes squeezed and put back where ``perm``
    puts them (host views)."""
    static = x.static_shape()
    if static is not None:
        n.emit("reshape", {"x": x, "shape": tuple(int(static[a]) for a in perm)})
        return
    units = tuple(i for i, d in enumerate(x.shape) if d == 1)
    source = getattr(x, "unsqueezed", None)
    if source is not None and tuple(sorted(source[1])) == units:
        squeezed = source[0]   # the value an unsqueeze made x from (an LSTM's y)
    else:
        (squeezed,) = n.b.emit("onnx.squeeze", {"x": x, "axes": units},
                               [(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in units))],
                               names=[f"{n.name}.squeezed"])
    n.emit("onnx.unsqueeze", {"x": squeezed, "axes": tuple(i for i, a in enumerate(perm) if a in units)},
           dtype=x.dtype)
