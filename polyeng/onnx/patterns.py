"""Exporter idioms recognised as one polyeng op: a linear layer written MatMul + Add, and GELU
written with Erf (``x * 0.5 * (1 + erf(x / sqrt(2)))``) or Tanh
(``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``), in the orders both PyTorch
exporters write them.

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


def _type(b: Builder, name: str, fallback_dtype):
    dtype, shape = b.types.dtype(name), b.types.shape(name)
    return np.dtype(dtype if dtype is not None else fallback_dtype), shape
