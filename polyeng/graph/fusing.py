"""Graph fusions: nodes that run as one op, so their intermediate result is never written.

Each fusion is a function registered by name with ``@fusion``; ``fuse(graph)`` applies them in
registration order and returns a new graph (the one given is unchanged). ``polyeng.onnx.load``
fuses every model it loads; a traced graph is fused by calling ``fuse`` on it. ``fusions()``
lists the names with what each does.

- ``conv_residual``: a conv2d/conv1d whose result only an ``add`` reads, the other operand being
  a value of the same shape and dtype (a ResNet or MobileNet shortcut), becomes ``fused_conv``
  with that operand as its ``residual``.
- ``conv_activation``: a convolution (or a ``fused_conv`` without an activation) whose result
  only an activation reads (relu, sigmoid, tanh, hardswish, hardsigmoid, silu, gelu, leaky_relu,
  or clip with number bounds) becomes ``fused_conv`` with that ``activation``.
- ``masked_softmax`` (``fuse_softmax.py``): an attention's mask add, softmax and NaN guard become
  ``fused_softmax``.
- ``batch_first_unbind`` (``batch_first.py``): a rewrite, not a fusion: qkv permuted to put the
  batch second and unbound along its first dim is permuted with the batch first and unbound along
  the second (a oneDNN program can then split the batch between threads).

Before them, ``common_subexpressions`` (``common.py``) drops a node that repeats an earlier one.
Last, ``onednn_programs`` (``segments.py``) marks the nodes a oneDNN program may hold; a planned
run executes runs of them as one program.

A node is fused only where the value it swallows is read by that one node and is not a graph
output, so nothing else changes. Pointwise convolutions (1x1, stride 1, no padding) are left
alone: their BLAS product, which the selector prefers for f32, has nothing to fuse into. The fused node keeps the convolution's name; ``print(graph)``
lists the fusions taken, and the node's ``meta["fused"]`` names the nodes it replaced.

Turning a fusion off, for debugging: ``fuse(graph, disable=("conv_activation",))``,
``polyeng.onnx.load(path, disable_fusions=...)``, or ``POLYENG_DISABLE_FUSIONS`` (comma-separated
names, or ``all``) in the environment, which also turns off the ONNX loader's exporter patterns
of those names (``polyeng.onnx.fusions()``).
"""
from __future__ import annotations

import math
import os
from collections import Counter, defaultdict

import numpy as np

from . import common
from .ir import Node, Ref, ref_names

ENV = "POLYENG_DISABLE_FUSIONS"
CONVS = ("conv2d", "conv1d")
_fusions: dict = {}   # name -> (function, summary)


def fusion(name: str, summary: str):
    """Register ``function(nodes, context) -> nodes`` as the fusion ``name``."""
    def register(function):
        if name in _fusions:
            raise ValueError(f"a graph fusion named {name!r} is registered already")
        _fusions[name] = (function, summary)
        return function
    return register


def fusions() -> dict:
    """``{name: what it fuses}`` of every graph fusion, in the order ``fuse`` applies them."""
    return {name: summary for name, (_, summary) in _fusions.items()}


def functions() -> dict:
    """``{name: function}`` of every graph fusion, in the order ``fuse`` applies them."""
    return {name: function for name, (function, _) in _fusions.items()}


def disabled(disable=None) -> frozenset:
    """The fusion names turned off: ``disable`` (names, or "all") plus ``POLYENG_DISABLE_FUSIONS``."""
    names = set()
    for source in (os.environ.get(ENV, ""), disable or ()):
        items = source.split(",") if isinstance(source, str) else source
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"disable_fusions takes fusion names (str), not {item!r}")
            if item.strip():
                names.add(item.strip())
    return frozenset(names)


def check_names(names: frozenset) -> frozenset:
    """``names``; ValueError naming those that are neither a graph fusion nor the ONNX loader's."""
    unknown = sorted(n for n in names if n != "all" and n not in _fusions and not _onnx_pattern(n))
    if unknown:
        raise ValueError(f"unknown fusion name(s) {', '.join(map(repr, unknown))}; graph fusions: "
                         f"{', '.join(_fusions)} (and polyeng.onnx.fusions() for the ONNX loader's)")
    return names


def is_disabled(name: str, names: frozenset) -> bool:
    return "all" in names or name in names


class _Context:
    """What the fusions ask of the graph: each value's readers and type, the outputs and the
    constants."""

    def __init__(self, nodes, types, outputs, constants=None):
        self.types = types
        self.constants = constants or {}
        self.outputs = set(outputs)
        self.readers = Counter(name for node in nodes for name in node.inputs)

    def only_reader(self, name: str) -> bool:
        return self.readers[name] == 1 and name not in self.outputs


def reader_indices(nodes) -> dict:
    """``{value name: indices of the nodes reading it}`` (a node reading a value twice listed once)."""
    readers = defaultdict(list)
    for i, node in enumerate(nodes):
        for name in set(node.inputs):
            readers[name].append(i)
    return readers


def fuse(graph, disable=None):
    """``graph`` with every fusion not turned off applied (a new Graph; ``graph`` when none applies).
    ``disable``: fusion names, or "all"; ``POLYENG_DISABLE_FUSIONS`` adds to it."""
    from .graph import Graph
    names = check_names(disabled(disable))
    nodes, types = list(graph._nodes), dict(graph._types)
    outputs = ref_names(graph._output_structure)
    changed = False
    for name, (function, _) in _fusions.items():
        if is_disabled(name, names):
            continue
        result = function(nodes, _Context(nodes, types, outputs, graph._constants))
        if result is not nodes:
            changed, nodes = True, result
    if not changed:
        return graph
    made = {n for node in nodes for n in node.outputs}
    read = {n for node in nodes for n in node.inputs} | set(outputs)
    constants = {k: v for k, v in graph._constants.items() if k in read}   # a merged copy is read no more
    kept = set(made) | {v.name for v in graph._inputs} | set(constants)
    types = {k: v for k, v in types.items() if k in kept}
    fused = Graph(inputs=graph._inputs, input_structure=graph._input_structure, input_names=graph._input_names,
                  nodes=nodes, constants=constants, output_structure=graph._output_structure, types=types,
                  fn_name=graph.name, leading_free=graph.leading_free)
    return fused


def _onnx_pattern(name: str) -> bool:
    try:
        from ..onnx.registry import fusions as onnx_fusions
    except ImportError:
        return False
    return name in onnx_fusions()


@fusion(common.NAME, "a node computing what an earlier node computes (the same op on the same values, "
                     "small constants compared by content) is dropped for the earlier one's values")
def _common_subexpressions(nodes, context):
    return common.eliminate(nodes, context.constants, context.outputs)


def summary(graph) -> str:
    """One line counting the fusions a graph's nodes were made by, or "" when none."""
    counts = Counter(f for node in graph.nodes for f in node.meta.get("fusions", ()))
    marked = sum(bool(node.meta.get(_segments.NAME)) for node in graph.nodes)
    if marked:
        counts[_segments.NAME] = marked
    if not counts:
        return ""
    return "fused: " + ", ".join(f"{name} x{count}" for name, count in counts.items())


def _replace(nodes, first: int, last: int, node) -> list:
    """``nodes`` with ``nodes[first]`` dropped and ``nodes[last]`` replaced by ``node`` (first < last:
    every input of the fused node exists where the last one stood)."""
    return nodes[:first] + nodes[first + 1:last] + [node] + nodes[last + 1:]


def _fused(conv: Node, last: Node, args: dict, fusion_name: str) -> Node:
    meta = {k: v for k, v in conv.meta.items() if k not in ("fused", "fusions")}
    meta["fused"] = list(conv.meta.get("fused", [conv.name])) + [last.name]
    meta["fusions"] = list(conv.meta.get("fusions", [])) + [fusion_name]
    return Node(name=conv.name, op="fused_conv", args=args, outputs=list(last.outputs), out=last.out,
                types=list(last.types), meta=meta)


def _conv_args(node: Node) -> dict:
    if node.op == "fused_conv":
        return dict(node.args)
    return {**node.args, "residual": None, "activation": "none", "alpha": 0.0, "beta": 0.0}


def _single_result(node: Node) -> str | None:
    return node.outputs[0] if len(node.outputs) == 1 and node.out == 0 else None


def _fusable(nodes, context, test):
    """(index of the convolution, index of its one reader, the reader) for each pair ``test`` takes."""
    producer = {}
    for i, node in enumerate(nodes):
        for name in node.outputs:
            producer[name] = i
    for j, reader in enumerate(nodes):
        for name in reader.inputs:
            i = producer.get(name)
            if i is None:
                continue
            conv = nodes[i]
            if conv.op not in CONVS + ("fused_conv",) or _single_result(conv) != name \
                    or not context.only_reader(name) or _pointwise(conv, context):
                continue
            if test(conv, reader, name):
                yield i, j
                break


def _pointwise(conv: Node, context) -> bool:
    """A 1x1 convolution with stride 1 and no padding: a matrix product that BLAS runs faster than
    oneDNN's gemm convolution here, which has no epilogue to fuse into (its eltwise post-op is a
    pass of its own), so it is left unfused."""
    weight = conv.args.get("weight")
    found = context.types.get(weight.name) if type(weight) is Ref else None
    if found is None or any(k != 1 for k in found[1][2:]):
        return False
    stride, padding = conv.args.get("stride", 1), conv.args.get("padding", 0)
    ones = all(s == 1 for s in (stride if isinstance(stride, (tuple, list)) else (stride,)))
    none = padding == "valid" or all(q == 0 for q in (padding if isinstance(padding, (tuple, list)) else (padding,)))
    return ones and none


def _rewrite(nodes, context, test, make, fusion_name):
    """Every pair ``test`` takes replaced by ``make(conv, reader, name)``'s arguments, one at a time."""
    while True:
        pair = next(_fusable(nodes, context, test), None)
        if pair is None:
            return nodes
        i, j = pair
        conv, reader = nodes[i], nodes[j]
        name = _single_result(conv)
        nodes = _replace(nodes, i, j, _fused(conv, reader, make(conv, reader, name), fusion_name))


@fusion("conv_residual", "conv2d/conv1d then add of a value of the result's shape and dtype -> fused_conv "
                         "with a residual")
def conv_residual(nodes, context):
    def test(conv, reader, name):
        if reader.op != "add" or _single_result(reader) is None:
            return False
        a, b = reader.args.get("a"), reader.args.get("b")
        if type(a) is not Ref or type(b) is not Ref or a.name == b.name:
            return False
        args = _conv_args(conv)
        if args["residual"] is not None or args["activation"] != "none":
            return False
        other = b.name if a.name == name else a.name
        mine, theirs, out = context.types.get(name), context.types.get(other), reader.types[0]
        return mine is not None and theirs is not None and _same_type(mine, theirs) and _same_type(mine, out)

    def make(conv, reader, name):
        a, b = reader.args["a"], reader.args["b"]
        return {**_conv_args(conv), "residual": b if a.name == name else a}
    return _rewrite(nodes, context, test, make, "conv_residual")


def _same_type(one, other) -> bool:
    """The same dtype and the same shape: every dim the same number or the same named dim (an
    unknown dim, None, may differ)."""
    (d1, s1), (d2, s2) = one, other
    return np.dtype(d1) == np.dtype(d2) and tuple(s1) == tuple(s2) and all(s is not None for s in s1)


SIMPLE = ("relu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu")


def _activation(reader: Node):
    """(activation, alpha, beta) of fused_conv for an activation node reading its ``x``, else None."""
    op, args = reader.op, reader.args
    if op in SIMPLE:
        return op, 0.0, 0.0
    if op == "gelu":
        return ("gelu" if args.get("approximate") == "none" else "gelu_tanh"), 0.0, 0.0
    if op == "leaky_relu" and _number(args.get("negative_slope")):
        return "leaky_relu", float(args["negative_slope"]), 0.0
    if op == "clip":
        low, high = args.get("min"), args.get("max")
        if (low is None or _number(low)) and (high is None or _number(high)):
            low = -math.inf if low is None else float(low)
            high = math.inf if high is None else float(high)
            if low <= high:
                return "clip", low, high
    return None


def _number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and not math.isnan(float(value))


@fusion("conv_activation", "conv2d/conv1d (or fused_conv) then relu, sigmoid, tanh, hardswish, hardsigmoid, silu, "
                           "gelu, leaky_relu or clip -> fused_conv with that activation")
def conv_activation(nodes, context):
    def test(conv, reader, name):
        if _activation(reader) is None or type(reader.args.get("x")) is not Ref or reader.args["x"].name != name:
            return False
        if _single_result(reader) is None or _conv_args(conv)["activation"] != "none":
            return False
        return True

    def make(conv, reader, name):
        activation, alpha, beta = _activation(reader)
        return {**_conv_args(conv), "activation": activation, "alpha": alpha, "beta": beta}
    return _rewrite(nodes, context, test, make, "conv_activation")


from . import fuse_softmax  # noqa: E402,F401  (registers masked_softmax, after the convolution fusions)
from . import batch_first  # noqa: E402,F401  (registers batch_first_unbind)
from . import segments as _segments  # noqa: E402

fusion(_segments.NAME, "f32 convolutions, activations, pooling, add/mul, image means and channel concats are "
                       "marked; the runner executes runs of 3 or more of them as one oneDNN program "
                       "(blocked layouts kept between them; graphs.md)")(_segments.mark)
