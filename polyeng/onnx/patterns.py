"""Exporter idioms recognised as one polyeng op: a linear layer written MatMul + Add; SiLU written
``x * sigmoid(x)``; GELU
written with Erf (``x * 0.5 * (1 + erf(x / sqrt(2)))``) or Tanh
(``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``), in the orders both PyTorch
exporters write them; and layer norm written out before opset 17 had LayerNormalization
(``d = x - mean(x); d / sqrt(mean(d**2) + eps)``, then ``* weight + bias``).

Each is a function registered with ``@pattern`` on the op type it starts from; the loader tries
a node's patterns before its converter, and ``polyeng.onnx.fusions()`` lists them. A pattern is
taken only when every intermediate value it swallows has no other reader, so skipping those
nodes changes nothing else. Nodes that fed the pattern from before it (the ``x / sqrt(2)``) are
still converted and then dropped as unused.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .builder import Builder, const
from .context import OnnxNode
from .fusion_graph import FusionGraph
from .registry import pattern

SQRT_HALF = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@pattern("MatMul", name="matmul_add_to_linear")
def matmul_add_to_linear(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """MatMul by a constant 2-D weight, then Add of a bias along its columns: ``linear``."""
    a, w = n.val(0), n.val(1)
    if a is None or w is None or not w.is_const or w.array.ndim != 2 or a.is_const:
        return False
    if np.dtype(a.dtype).kind != "f" or a.dtype != w.dtype:
        return False
    j = plan.only_reader(n.output_names[0])
    if j is None or plan.nodes[j].op_type != "Add" or len(plan.nodes[j].input) != 2:
        return False
    add = plan.nodes[j]
    other = add.input[1] if add.input[0] == n.output_names[0] else add.input[0]
    bias = plan.b.values.get(other)
    columns = w.array.shape[1]
    if bias is None or not bias.is_const or bias.array.size != columns or bias.array.dtype != w.array.dtype \
            or bias.array.ndim < 1 or any(d != 1 for d in bias.array.shape[:-1]):
        return False
    weight = const(np.ascontiguousarray(w.array.T), name=f"{w.name or n.name}.T")
    dtype, shape = _type(plan.b, add.output[0], a.dtype)
    (y,) = plan.b.emit("linear", {"x": a, "weight": weight, "bias": const(bias.array.reshape(-1), name=bias.name)},
                       [(dtype, shape)], names=[add.output[0]], node_name=n.name)
    plan.b.set(add.output[0], y)
    plan.skip([j])
    return True


@pattern("Erf", name="gelu_erf")
def gelu_erf(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """``x * 0.5 * (1 + erf(x / sqrt(2)))`` in any order of the products: exact ``gelu``."""
    names, k = plan.factors(n.input_names[0])
    if len(names) != 1 or sum(names.values()) != 1 or not _close(k, SQRT_HALF):
        return False
    (x,) = names
    return _gelu(plan, n, x, "none")


@pattern("Tanh", name="gelu_tanh")
def gelu_tanh(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` in any order: tanh ``gelu``."""
    names, k = plan.factors(n.input_names[0])
    x = _tanh_argument(plan, names, k)
    if x is None:
        return False
    return _gelu(plan, n, x, "tanh")


def _gelu(plan: FusionGraph, n: OnnxNode, x: str, approximate: str) -> bool:
    """The Erf or Tanh node ``n`` of ``x`` as ``gelu`` when its result flows into ``(1 + t) * x * 0.5``."""
    if x not in plan.b.values or plan.b.values[x].is_const:
        return False
    end = _half_x_times_one_plus(plan, n.output_names[0], x)
    if end is None:
        return False
    last, swallowed = end
    dtype, shape = _type(plan.b, plan.nodes[last].output[0], plan.b.values[x].dtype)
    (y,) = plan.b.emit("gelu", {"x": plan.b.values[x], "approximate": approximate}, [(dtype, shape)],
                       names=[plan.nodes[last].output[0]], node_name=n.name)
    plan.b.set(plan.nodes[last].output[0], y)
    plan.skip(swallowed)
    return True


def _tanh_argument(plan: FusionGraph, names, k):
    """x when the tanh's argument is sqrt(2/pi) * (x + 0.044715 * x**3), else None."""
    if len(names) != 1 or sum(names.values()) != 1 or not _close(k, SQRT_2_OVER_PI):
        return None
    (total,) = names
    i = plan.producer.get(total)
    if i is None or plan.nodes[i].op_type != "Add" or plan.only_reader(total) is None:
        return None
    p, q = plan.nodes[i].input
    for x, cube in ((p, q), (q, p)):
        f, c = plan.factors(cube)
        if f == Counter({x: 3}) and _close(c, 0.044715):
            return x
    return None


def _half_x_times_one_plus(plan: FusionGraph, t: str, x: str):
    """(index of the last node, nodes to skip) when ``t`` (erf or tanh) flows into
    ``(1 + t) * x * 0.5`` through single-reader Add and Mul nodes, else None."""
    j = plan.only_reader(t)
    if j is None or plan.nodes[j].op_type != "Add":
        return None
    add = plan.nodes[j]
    other = add.input[1] if add.input[0] == t else add.input[0]
    if not _close(plan.scalar(other), 1.0, 1e-6):
        return None
    swallowed, value = [j], add.output[0]
    have, k = Counter(), 1.0
    for _ in range(3):
        m = plan.only_reader(value)
        if m is None or plan.nodes[m].op_type != "Mul":
            return None
        mul = plan.nodes[m]
        other = mul.input[1] if mul.input[0] == value else mul.input[0]
        f, c = plan.factors(other)
        have += f
        k *= c
        swallowed.append(m)
        value = mul.output[0]
        if have == Counter({x: 1}) and _close(k, 0.5, 1e-6):
            return m, swallowed
        if sum(have.values()) > 1:
            return None
    return None


@pattern("Sigmoid", name="sigmoid_mul_to_silu")
def sigmoid_mul_to_silu(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """``x * sigmoid(x)`` (PyTorch's SiLU as its TorchScript exporter writes it): ``silu``."""
    x_name = n.input_names[0]
    x = plan.b.values.get(x_name)
    j = plan.next(n.output_names[0], "Mul")
    if x is None or x.is_const or j is None or np.dtype(x.dtype).kind != "f":
        return False
    mul = plan.nodes[j]
    if sorted(mul.input) != sorted([x_name, n.output_names[0]]):
        return False
    dtype, shape = _type(plan.b, mul.output[0], x.dtype)
    (y,) = plan.b.emit("silu", {"x": x}, [(dtype, shape)], names=[mul.output[0]], node_name=n.name)
    plan.b.set(mul.output[0], y)
    plan.skip([j])
    return True


@pattern("ReduceMean", name="written_out_layer_norm")
def written_out_layer_norm(plan: FusionGraph, i: int, n: OnnxNode) -> bool:
    """mean, Sub, square, mean, Add eps, Sqrt, Div, then Mul and Add by constants: ``layer_norm``."""
    x_name = n.input_names[0]
    x = plan.b.values.get(x_name)
    axes = plan.mean_axes(plan.nodes[i], n.opset)
    if x is None or x.is_const or x.rank is None or axes is None or np.dtype(x.dtype).kind != "f":
        return False
    axes = tuple(sorted(a + x.rank if a < 0 else a for a in axes))
    if axes != tuple(range(x.rank - len(axes), x.rank)):
        return False
    normalized = tuple(x.shape[x.rank - len(axes):])
    if any(type(d) is not int for d in normalized):
        return False
    sub = plan.next(n.output_names[0], "Sub")
    if sub is None or list(plan.nodes[sub].input) != [x_name, n.output_names[0]]:
        return False
    d = plan.nodes[sub].output[0]
    readers = plan.consumers.get(d, [])
    if len(readers) != 2 or d in plan.b.output_names:
        return False
    square = next((j for j in readers if plan.nodes[j].op_type in ("Pow", "Mul")), None)
    divide = next((j for j in readers if plan.nodes[j].op_type == "Div"), None)
    if square is None or divide is None or list(plan.nodes[divide].input)[0] != d:
        return False
    names, k = plan.factors(plan.nodes[square].output[0])
    if names != Counter({d: 2}) or k != 1.0:
        return False
    chain = [sub, square, divide]
    mean2 = plan.next(plan.nodes[square].output[0], "ReduceMean")
    if mean2 is None or plan.mean_axes(plan.nodes[mean2], n.opset) not in (axes, tuple(a - x.rank for a in axes)):
        return False
    add = plan.next(plan.nodes[mean2].output[0], "Add")
    if add is None:
        return False
    eps_name = [v for v in plan.nodes[add].input if v != plan.nodes[mean2].output[0]]
    eps = plan.scalar(eps_name[0]) if len(eps_name) == 1 else None
    sqrt = plan.next(plan.nodes[add].output[0], "Sqrt")
    if eps is None or sqrt is None or plan.next(plan.nodes[sqrt].output[0], "Div") != divide \
            or list(plan.nodes[divide].input)[1] != plan.nodes[sqrt].output[0]:
        return False
    chain += [mean2, add, sqrt]
    out, weight, bias = plan.nodes[divide].output[0], None, None
    for op_type in ("Mul", "Add"):
        j = plan.next(out, op_type)
        if j is None:
            break
        other = [v for v in plan.nodes[j].input if v != out]
        array = plan.array(other[0]) if len(other) == 1 else None
        if array is None or array.size != int(np.prod(normalized)) or array.dtype != x.dtype:
            break
        if op_type == "Mul":
            weight = array.reshape(normalized)
        else:
            bias = array.reshape(normalized)
        chain.append(j)
        out = plan.nodes[j].output[0]
    dtype, shape = _type(plan.b, out, x.dtype)
    args = {"x": x, "normalized_shape": normalized, "weight": None if weight is None else const(weight),
            "bias": None if bias is None else const(bias), "eps": float(eps)}
    (y,) = plan.b.emit("layer_norm", args, [(dtype, shape)], names=[out], node_name=n.name)
    plan.b.set(out, y)
    plan.skip(chain)
    return True


def _close(value, want, rtol=1e-4) -> bool:
    return value is not None and abs(value - want) <= rtol * abs(want)


def _type(b: Builder, name: str, fallback_dtype):
    dtype, shape = b.types.dtype(name), b.types.shape(name)
    return np.dtype(dtype if dtype is not None else fallback_dtype), shape
