"""ONNX ops that compute: elementwise arithmetic and activations, MatMul and Gemm, Softmax,
LayerNormalization, Gelu, ReduceMean, Cast, Where, Concat and Transpose."""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from .builder import Unsupported, Val, const
from .context import OnnxNode, positive_axis

BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}
UNARY = {"Sqrt": "sqrt", "Erf": "erf", "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu", "Exp": "exp"}
POLYENG_DTYPES = {np.dtype(d) for d in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32,
                                        np.int64, np.bool_)} | {np.dtype(dt.bfloat16)}


def _any_data(*vals) -> bool:
    return any(v is not None and v.kind == "data" for v in vals)


def _check_dtype(n: OnnxNode, *vals) -> None:
    for v in vals:
        if v is not None and np.dtype(v.dtype) not in POLYENG_DTYPES:
            raise Unsupported(f"dtype {np.dtype(v.dtype).name} is not one polyeng computes with")


def binary(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    op = BINARY[n.op_type]
    integer = np.dtype(a.dtype).kind in "iub"
    if op == "pow":
        if np.dtype(a.dtype).kind != "f":
            raise Unsupported(f"Pow on {np.dtype(a.dtype).name}: polyeng's pow takes floats")
        exponent = b
        if b.is_const and np.dtype(b.dtype) != np.dtype(a.dtype):   # ONNX allows another exponent dtype
            exponent = const(b.array.astype(a.dtype), name=b.name)
        n.emit("pow", {"x": a, "exponent": exponent})
        return
    if integer and (op == "div" or not _any_data(a, b)):
        known = _known_binary(op, a, b)
        n.emit("onnx.binary", {"a": a, "b": b, "op": op}, dtype=a.dtype, known=known)
        _settle(n)
        return
    n.emit(op, {"a": a, "b": b})


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
        if x is None or y is None:
            out.append(None)
        elif op == "add":
            out.append(x + y)
        elif op == "sub":
            out.append(x - y)
        elif op == "mul":
            out.append(x * y)
        else:
            out.append(None if y == 0 else int(np.sign(x) * np.sign(y)) * (abs(x) // abs(y)))
    return tuple(out)


def _known(v: Val):
    if v.is_const and v.array.ndim <= 1 and v.array.dtype.kind in "iu":
        return tuple(int(x) for x in v.array.reshape(-1))
    return v.known


def _settle(n: OnnxNode, i: int = 0) -> None:
    """A host shape value whose every element is known becomes a constant."""
    if not n.used(i):
        return
    v = n.b.get(n.output_names[i])
    if v.kind == "host" and v.known is not None and all(k is not None for k in v.known) and v.rank in (0, 1):
        array = np.array(v.known, dtype=v.dtype)
        if v.rank == 0:
            array = array.reshape(())
        n.set_const(i, array)


def unary(n: OnnxNode) -> None:
    x = n.need(0, "X")
    _check_dtype(n, x)
    n.emit(UNARY[n.op_type], {"x": x})


def softmax(n: OnnxNode) -> None:
    x = n.need(0, "input")
    axis = positive_axis(int(n.attr("axis", -1)), x.rank) if x.rank is not None else int(n.attr("axis", -1))
    n.emit("softmax" if n.op_type == "Softmax" else "log_softmax", {"x": x, "axis": axis})


def gelu(n: OnnxNode) -> None:
    approximate = n.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate={approximate!r} is not supported")
    n.emit("gelu", {"x": n.need(0, "X"), "approximate": approximate})


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


def matmul(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    if b.is_const and b.array.ndim == 2 and not a.is_const and np.dtype(a.dtype).kind == "f" \
            and a.dtype == b.dtype:
        weight = const(np.ascontiguousarray(b.array.T), name=f"{b.name or n.name}.T")
        n.emit("linear", {"x": a, "weight": weight, "bias": None})
        return
    n.emit("matmul", {"a": a, "b": b})


def gemm(n: OnnxNode) -> None:
    a, b, c = n.need(0, "A"), n.need(1, "B"), n.val(2)
    _check_dtype(n, a, b, c)
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    trans_a, trans_b = int(n.attr("transA", 0)), int(n.attr("transB", 0))
    dtype = np.dtype(a.dtype)
    if dtype.kind != "f":
        raise Unsupported(f"Gemm on {dtype.name}: polyeng's linear takes floats")
    out_dtype, out_shape = n.out_type(0)
    if trans_a:
        (a,) = n.b.emit("permute_contiguous", {"x": a, "dims": (1, 0)},
                        [(dtype, None if a.shape is None else tuple(reversed(a.shape)))], names=[f"{n.name}.A_t"])
    bias = None
    if c is not None and c.is_const:
        columns = out_shape[1] if out_shape and len(out_shape) == 2 and type(out_shape[1]) is int else None
        if b.is_const and b.array.ndim == 2:
            columns = b.array.shape[0] if trans_b else b.array.shape[1]
        flat = _as_bias(c.array, columns)
        if flat is not None:
            bias = const((flat * beta).astype(dtype) if beta != 1.0 else flat.astype(dtype), name=c.name)
            c = None
    if b.is_const:
        weight = b.array if trans_b else b.array.T
        if alpha != 1.0:
            weight = weight * np.asarray(alpha, dtype=weight.dtype)
        weight = const(np.ascontiguousarray(weight.astype(dtype)), name=f"{b.name or n.name}.weight")
        last = c is None
        y = n.b.emit("linear", {"x": a, "weight": weight, "bias": bias},
                     [(out_dtype, out_shape)], names=[n.output_names[0] if last else f"{n.name}.AB"],
                     node_name=n.name if last else None)[0]
    else:
        if trans_b:
            (b,) = n.b.emit("permute_contiguous", {"x": b, "dims": (1, 0)},
                            [(dtype, None if b.shape is None else tuple(reversed(b.shape)))], names=[f"{n.name}.B_t"])
        (y,) = n.b.emit("matmul", {"a": a, "b": b}, [(out_dtype, out_shape)], names=[f"{n.name}.AB"])
        if alpha != 1.0:
            (y,) = n.b.emit("mul", {"a": y, "b": const(np.asarray(alpha, dtype))}, [(out_dtype, out_shape)],
                            names=[f"{n.name}.alphaAB"])
        if bias is not None:
            c = bias
            beta = 1.0
    if c is not None:
        if beta != 1.0:
            if c.is_const:
                c = const((c.array * beta).astype(dtype), name=c.name)
            else:
                (c,) = n.b.emit("mul", {"a": c, "b": const(np.asarray(beta, dtype))}, [(dtype, c.shape)],
                                names=[f"{n.name}.betaC"])
        n.emit("add", {"a": y, "b": c})
        return
    n.set(0, y)


def _as_bias(c: np.ndarray, columns):
    """C as a 1-D bias of ``columns`` values when it broadcasts along rows only, else None."""
    if c.ndim == 0:
        return None if columns is None else np.full(columns, c)
    if c.ndim == 1 and (columns is None or c.shape[0] == columns):
        return c
    if c.ndim == 2 and c.shape[0] == 1 and (columns is None or c.shape[1] == columns):
        return c[0]
    return None


def reduce_mean(n: OnnxNode) -> None:
    x = n.need(0, "data")
    keepdims = bool(int(n.attr("keepdims", 1)))
    if n.opset >= 18:
        axes = n.ints(1, "axes")
        noop = int(n.attr("noop_with_empty_axes", 0))
        if not axes:
            if noop:
                n.set(0, x)
                return
            axes = None
    else:
        axes = n.attr("axes")
        axes = None if axes is None else list(axes)
    if axes is not None:
        axes = tuple(positive_axis(int(a), x.rank, "axes") for a in axes)
        if len(set(axes)) != len(axes):
            raise Unsupported(f"axes={list(axes)} repeats an axis")
    if np.dtype(x.dtype).kind != "f":
        raise Unsupported(f"ReduceMean on {np.dtype(x.dtype).name}: polyeng's mean takes floats")
    n.emit("mean", {"x": x, "axis": axes, "keepdims": keepdims})


def global_average_pool(n: OnnxNode) -> None:
    x = n.need(0, "X")
    if x.rank is None or x.rank < 3:
        raise Unsupported("the input needs (N, C, spatial...) dims of known rank")
    n.emit("mean", {"x": x, "axis": tuple(range(2, x.rank)), "keepdims": True})


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


def transpose(n: OnnxNode) -> None:
    x = n.need(0, "data")
    perm = n.attr("perm")
    if perm is None:
        if x.rank is None:
            raise Unsupported("no perm and the input's rank is unknown")
        perm = list(range(x.rank - 1, -1, -1))
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(len(perm))):
        n.set(0, x)
        return
    n.emit("permute_contiguous", {"x": x, "dims": perm})


CONVERTERS = {**{op: binary for op in BINARY}, **{op: unary for op in UNARY},
              "Softmax": softmax, "LogSoftmax": softmax, "Gelu": gelu, "LayerNormalization": layer_norm,
              "MatMul": matmul, "Gemm": gemm, "ReduceMean": reduce_mean, "GlobalAveragePool": global_average_pool,
              "Cast": cast, "Where": where, "Concat": concat, "Transpose": transpose}
