"""The questions fusion patterns ask of an ONNX graph (who produces and who reads a value, what a
constant is, a value as a product of factors), and the nodes the patterns taken have swallowed."""
from __future__ import annotations

from collections import Counter

import numpy as np

from .builder import Builder
from .model import attributes


class FusionGraph:
    """One model's nodes as the patterns see them, with the nodes the loader must skip."""

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

    def skipped(self, i: int) -> bool:
        return i in self._skip

    def skip(self, indices) -> None:
        """Nodes a pattern swallowed: the loader does not convert them."""
        self._skip.update(indices)

    def only_reader(self, name: str):
        """The index of the single node reading ``name``, else None (also None for graph outputs)."""
        readers = self.consumers.get(name, [])
        if len(readers) != 1 or name in self.b.output_names:
            return None
        return readers[0]

    def next(self, name: str, op_type: str):
        """The index of ``name``'s single reader when it is an ``op_type`` node, else None."""
        j = self.only_reader(name)
        return None if j is None or self.nodes[j].op_type != op_type else j

    def scalar(self, name: str):
        """A value's single number when it is a constant known now or written by a Constant node."""
        val = self.b.values.get(name)
        array = None
        if val is not None and val.is_const:
            array = val.array
        elif name in self.producer and self.nodes[self.producer[name]].op_type == "Constant":
            attrs = node_attributes(self.nodes[self.producer[name]])
            for key in ("value", "value_float", "value_int"):
                if key in attrs:
                    array = np.asarray(attrs[key])
        if array is None or array.size != 1 or array.dtype.kind != "f" and array.dtype.kind not in "iu":
            return None
        return float(array.reshape(-1)[0])

    def array(self, name: str):
        """A value's array when it is a constant known now or a Constant node's ``value``, else None."""
        val = self.b.values.get(name)
        if val is not None and val.is_const:
            return val.array
        i = self.producer.get(name)
        if i is not None and self.nodes[i].op_type == "Constant":
            value = node_attributes(self.nodes[i]).get("value")
            return None if value is None else np.asarray(value)
        return None

    def factors(self, name: str, depth: int = 0):
        """``name`` as a product: (Counter of non-constant value names, constant factor)."""
        i = self.producer.get(name)
        node = None if i is None else self.nodes[i]
        if depth < 6 and node is not None and node.op_type in ("Mul", "Div", "Pow") and len(node.input) == 2:
            a, c = node.input
            if node.op_type == "Pow":
                exponent = self.scalar(c)
                if exponent is not None and exponent == int(exponent) and 1 <= exponent <= 4:
                    names, k = self.factors(a, depth + 1)
                    return Counter({v: m * int(exponent) for v, m in names.items()}), k ** int(exponent)
                return Counter({name: 1}), 1.0
            if node.op_type == "Div":
                divisor = self.scalar(c)
                if divisor:
                    names, k = self.factors(a, depth + 1)
                    return names, k / divisor
                return Counter({name: 1}), 1.0
            names, k = Counter(), 1.0
            for part in (a, c):
                s = self.scalar(part)
                if s is not None:
                    k *= s
                else:
                    sub, sk = self.factors(part, depth + 1)
                    names += sub
                    k *= sk
            return names, k
        s = self.scalar(name)
        if s is not None:
            return Counter(), s
        return Counter({name: 1}), 1.0

    def mean_axes(self, node, opset: int):
        """A keepdims ReduceMean's axes (attribute before opset 18, constant input from 18), else None."""
        attrs = node_attributes(node)
        if int(attrs.get("keepdims", 1)) != 1:
            return None
        if opset >= 18:
            axes = self.array(node.input[1]) if len(node.input) > 1 and node.input[1] else None
            return None if axes is None else tuple(int(a) for a in axes.reshape(-1))
        axes = attrs.get("axes")
        return None if axes is None else tuple(int(a) for a in axes)


def node_attributes(node) -> dict:
    """A node's attributes as Python values, errors naming the node (``model.attributes``)."""
    return attributes(node, f"{node.op_type} {node.name!r}")
