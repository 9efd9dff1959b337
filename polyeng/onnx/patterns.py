"""Exporter idioms recognised as one polyeng op: a linear layer written MatMul + Add; GELU
written with Erf (``x * 0.5 * (1 + erf(x / sqrt(2)))``) or Tanh
(``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``), in the orders both PyTorch
exporters write them; and layer norm written out before opset 17 had LayerNormalization
(``d = x - mean(x); d / sqrt(mean(d**2) + eps)``, then ``* weight + bias``).

A pattern is taken only when every intermediate value it swallows has no other reader, so
skipping those nodes changes nothing else. Nodes that fed the pattern from before it (the
``x / sqrt(2)``) are still converted and then dropped as unused.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .builder import Builder, const
from .context import OnnxNode

SQRT_HALF = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _close(value, want, rtol=1e-4) -> bool:
    return value is not None and abs(value - want) <= rtol * abs(want)


class Fusions:
    def __init__(self, nodes, builder: Builder):
        self.nodes = list(nodes)
        self.b = builder
        self.producer = {}
        self.consumers: dict = {}
        for i, node in enumerate(self.nodes):
            for name in node.output:
                if name:
                    self.producer[name] = i
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(i)
        self._skip: set = set()
        self._graph_outputs: set = set()

    def skipped(self, i: int) -> bool:
        return i in self._skip

    def fuse(self, i: int, n: OnnxNode) -> bool:
        op = n.op_type
        if op == "MatMul":
            return self._linear(i, n)
        if op in ("Erf", "Tanh"):
            return self._gelu(i, n)
        if op == "ReduceMean":
            return self._layer_norm(i, n)
        return False

    # --- graph questions -------------------------------------------------------------------------
    def _only_reader(self, name: str):
        """The index of the single node reading ``name``, else None (also None for graph outputs)."""
        readers = self.consumers.get(name, [])
        if len(readers) != 1 or name in self.b.output_names:
            return None
        return readers[0]

    def _scalar(self, name: str):
        """A value's single number when it is a constant known now or written by a Constant node."""
        val = self.b.values.get(name)
        array = None
        if val is not None and val.is_const:
            array = val.array
        elif name in self.producer and self.nodes[self.producer[name]].op_type == "Constant":
            from .model import attributes
            attrs = attributes(self.nodes[self.producer[name]])
            for key in ("value", "value_float", "value_int"):
                if key in attrs:
                    array = np.asarray(attrs[key])
        if array is None or array.size != 1 or array.dtype.kind != "f" and array.dtype.kind not in "iu":
            return None
        return float(array.reshape(-1)[0])

    def _factors(self, name: str, depth: int = 0):
        """``name`` as a product: (Counter of non-constant value names, constant factor)."""
        i = self.producer.get(name)
        node = None if i is None else self.nodes[i]
        if depth < 6 and node is not None and node.op_type in ("Mul", "Div", "Pow") and len(node.input) == 2:
            a, c = node.input
            if node.op_type == "Pow":
                exponent = self._scalar(c)
                if exponent is not None and exponent == int(exponent) and 1 <= exponent <= 4:
                    names, k = self._factors(a, depth + 1)
                    return Counter({v: m * int(exponent) for v, m in names.items()}), k ** int(exponent)
                return Counter({name: 1}), 1.0
            if node.op_type == "Div":
                divisor = self._scalar(c)
                if divisor:
                    names, k = self._factors(a, depth + 1)
                    return names, k / divisor
                return Counter({name: 1}), 1.0
            names, k = Counter(), 1.0
            for part in (a, c):
                s = self._scalar(part)
                if s is not None:
                    k *= s
                else:
                    sub, sk = self._factors(part, depth + 1)
                    names += sub
                    k *= sk
            return names, k
        s = self._scalar(name)
        if s is not None:
            return Counter(), s
        return Counter({name: 1}), 1.0

    # --- MatMul + Add -> linear --------------------------------------------------------------------
    def _linear(self, i: int, n: OnnxNode) -> bool:
        a, w = n.val(0), n.val(1)
        if a is None or w is None or not w.is_const or w.array.ndim != 2 or a.is_const:
            return False
        if np.dtype(a.dtype).kind != "f" or a.dtype != w.dtype:
            return False
        j = self._only_reader(n.output_names[0])
        if j is None or self.nodes[j].op_type != "Add" or len(self.nodes[j].input) != 2:
            return False
        add = self.nodes[j]
        other = add.input[1] if add.input[0] == n.output_names[0] else add.input[0]
        bias = self.b.values.get(other)
        columns = w.array.shape[1]
        if bias is None or not bias.is_const or bias.array.size != columns or bias.array.dtype != w.array.dtype \
                or bias.array.ndim < 1 or any(d != 1 for d in bias.array.shape[:-1]):
            return False
        weight = const(np.ascontiguousarray(w.array.T), name=f"{w.name or n.name}.T")
        dtype, shape = _type(self.b, add.output[0], a.dtype)
        (y,) = self.b.emit("linear", {"x": a, "weight": weight, "bias": const(bias.array.reshape(-1), name=bias.name)},
                           [(dtype, shape)], names=[add.output[0]], node_name=n.name)
        self.b.set(add.output[0], y)
        self._skip.add(j)
        return True

    # --- GELU ----------------------------------------------------------------------------------------
    def _gelu(self, i: int, n: OnnxNode) -> bool:
        inner = n.input_names[0]
        names, k = self._factors(inner)
        if n.op_type == "Erf":
            if len(names) != 1 or sum(names.values()) != 1 or not _close(k, SQRT_HALF):
                return False
            (x,) = names
            approximate = "none"
        else:
            x = self._tanh_argument(names, k)
            if x is None:
                return False
            approximate = "tanh"
        if x not in self.b.values or self.b.values[x].is_const:
            return False
        end = self._half_x_times_one_plus(n.output_names[0], x)
        if end is None:
            return False
        last, swallowed = end
        dtype, shape = _type(self.b, self.nodes[last].output[0], self.b.values[x].dtype)
        (y,) = self.b.emit("gelu", {"x": self.b.values[x], "approximate": approximate}, [(dtype, shape)],
                           names=[self.nodes[last].output[0]], node_name=n.name)
        self.b.set(self.nodes[last].output[0], y)
        self._skip.update(swallowed)
        return True

    def _tanh_argument(self, names, k):
        """x when the tanh's argument is sqrt(2/pi) * (x + 0.044715 * x**3), else None."""
        if len(names) != 1 or sum(names.values()) != 1 or not _close(k, SQRT_2_OVER_PI):
            return None
        (total,) = names
        i = self.producer.get(total)
        if i is None or self.nodes[i].op_type != "Add" or self._only_reader(total) is None:
            return None
        p, q = self.nodes[i].input
        for x, cube in ((p, q), (q, p)):
            f, c = self._factors(cube)
            if f == Counter({x: 3}) and _close(c, 0.044715):
                return x
        return None

    def _half_x_times_one_plus(self, t: str, x: str):
        """(index of the last node, nodes to skip) when ``t`` (erf or tanh) flows into
        ``(1 + t) * x * 0.5`` through single-reader Add and Mul nodes, else None."""
        j = self._only_reader(t)
        if j is None or self.nodes[j].op_type != "Add":
            return None
        add = self.nodes[j]
        other = add.input[1] if add.input[0] == t else add.input[0]
        if not _close(self._scalar(other), 1.0, 1e-6):
            return None
        swallowed, value = [j], add.output[0]
        have, k = Counter(), 1.0
        for _ in range(3):
            m = self._only_reader(value)
            if m is None or self.nodes[m].op_type != "Mul":
                return None
            mul = self.nodes[m]
            other = mul.input[1] if mul.input[0] == value else mul.input[0]
            f, c = self._factors(other)
            have += f
            k *= c
            swallowed.append(m)
            value = mul.output[0]
            if have == Counter({x: 1}) and _close(k, 0.5, 1e-6):
                return m, swallowed
            if sum(have.values()) > 1:
                return None
        return None


    # --- layer norm ----------------------------------------------------------------------------------
    def _array(self, name: str):
        val = self.b.values.get(name)
        if val is not None and val.is_const:
            return val.array
        i = self.producer.get(name)
        if i is not None and self.nodes[i].op_type == "Constant":
            from .model import attributes
            value = attributes(self.nodes[i]).get("value")
            return None if value is None else np.asarray(value)
        return None

    def _mean_axes(self, node, opset: int):
        from .model import attributes
        attrs = attributes(node)
        if int(attrs.get("keepdims", 1)) != 1:
            return None
        if opset >= 18:
            axes = self._array(node.input[1]) if len(node.input) > 1 and node.input[1] else None
            return None if axes is None else tuple(int(a) for a in axes.reshape(-1))
        axes = attrs.get("axes")
        return None if axes is None else tuple(int(a) for a in axes)

    def _next(self, name: str, op_type: str):
        j = self._only_reader(name)
        return None if j is None or self.nodes[j].op_type != op_type else j

    def _layer_norm(self, i: int, n: OnnxNode) -> bool:
        x_name = n.input_names[0]
        x = self.b.values.get(x_name)
        axes = self._mean_axes(self.nodes[i], n.opset)
        if x is None or x.is_const or x.rank is None or axes is None or np.dtype(x.dtype).kind != "f":
            return False
        axes = tuple(sorted(a + x.rank if a < 0 else a for a in axes))
        if axes != tuple(range(x.rank - len(axes), x.rank)):
            return False
        normalized = tuple(x.shape[x.rank - len(axes):])
        if any(type(d) is not int for d in normalized):
            return False
        sub = self._next(n.output_names[0], "Sub")
        if sub is None or list(self.nodes[sub].input) != [x_name, n.output_names[0]]:
            return False
        d = self.nodes[sub].output[0]
        readers = self.consumers.get(d, [])
        if len(readers) != 2 or d in self.b.output_names:
            return False
        square = next((j for j in readers if self.nodes[j].op_type in ("Pow", "Mul")), None)
        divide = next((j for j in readers if self.nodes[j].op_type == "Div"), None)
        if square is None or divide is None or list(self.nodes[divide].input)[0] != d:
            return False
        names, k = self._factors(self.nodes[square].output[0])
        if names != Counter({d: 2}) or k != 1.0:
            return False
        chain = [sub, square, divide]
        mean2 = self._next(self.nodes[square].output[0], "ReduceMean")
        if mean2 is None or self._mean_axes(self.nodes[mean2], n.opset) not in (axes, tuple(a - x.rank for a in axes)):
            return False
        add = self._next(self.nodes[mean2].output[0], "Add")
        if add is None:
            return False
        eps_name = [v for v in self.nodes[add].input if v != self.nodes[mean2].output[0]]
        eps = self._scalar(eps_name[0]) if len(eps_name) == 1 else None
        sqrt = self._next(self.nodes[add].output[0], "Sqrt")
        if eps is None or sqrt is None or self._next(self.nodes[sqrt].output[0], "Div") != divide \
                or list(self.nodes[divide].input)[1] != self.nodes[sqrt].output[0]:
            return False
        chain += [mean2, add, sqrt]
        out, weight, bias = self.nodes[divide].output[0], None, None
        for op_type in ("Mul", "Add"):
            j = self._next(out, op_type)
            if j is None:
                break
            other = [v for v in self.nodes[j].input if v != out]
            array = self._array(other[0]) if len(other) == 1 else None
            if array is None or array.size != int(np.prod(normalized)) or array.dtype != x.dtype:
                break
            if op_type == "Mul":
                weight = array.reshape(normalized)
            else:
                bias = array.reshape(normalized)
            chain.append(j)
            out = self.nodes[j].output[0]
        dtype, shape = _type(self.b, out, x.dtype)
        args = {"x": x, "normalized_shape": normalized, "weight": None if weight is None else const(weight),
                "bias": None if bias is None else const(bias), "eps": float(eps)}
        (y,) = self.b.emit("layer_norm", args, [(dtype, shape)], names=[out], node_name=n.name)
        self.b.set(out, y)
        self._skip.update(chain)
        return True


def _type(b: Builder, name: str, fallback_dtype):
    dtype, shape = b.types.dtype(name), b.types.shape(name)
    return np.dtype(dtype if dtype is not None else fallback_dtype), shape
