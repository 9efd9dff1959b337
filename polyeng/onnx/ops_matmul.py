"""Converters of MatMul and Gemm: ``linear`` where the weight is a constant, else ``matmul``."""
from __future__ import annotations

import numpy as np

from .builder import Unsupported, const
from .context import OnnxNode
from .ops_math import _check_dtype
from .registry import converter


@converter("MatMul")
def matmul(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    _check_dtype(n, a, b)
    if b.is_const and b.array.ndim == 2 and not a.is_const and np.dtype(a.dtype).kind == "f" \
            and a.dtype == b.dtype:
        weight = const(np.ascontiguousarray(b.array.T), name=f"{b.name or n.name}.T")
        n.emit("linear", {"x": a, "weight": weight, "bias": None})
        return
    n.emit("matmul", {"a": a, "b": b})


@converter("Gemm")
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
