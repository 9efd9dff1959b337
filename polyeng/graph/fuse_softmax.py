"""The ``masked_softmax`` graph fusion: an attention's mask add, its softmax and the NaN guard
exporters write after it become one ``fused_softmax`` node.

BERT, DistilBERT and GPT-2 export every attention as ``add(scores, mask)``, ``softmax``, then
``where(isnan(p), 0, p)``: four nodes, each reading and writing the whole score tensor. The
fusion takes a softmax with either or both of its neighbours:

- before it, an ``add`` of two values of one dtype whose result only the softmax reads (the
  scores and the mask, broadcast as add broadcasts them);
- after it, an ``isnan`` of its result and a ``select`` of a single-value constant where that is
  true and the result elsewhere, the only readers of the result and of the isnan, with the
  select's result of the softmax's shape and dtype.

No value it swallows may be a graph output. The node keeps the softmax's name; ``meta["fused"]``
names the nodes it replaced.
"""
from __future__ import annotations

import numpy as np

from .fusing import _Context, fusion, reader_indices
from .ir import Node, Ref

NAME = "masked_softmax"


@fusion(NAME, "add of a mask, softmax, and where(isnan(p), c, p) after it (an attention's) -> fused_softmax")
def masked_softmax(nodes, context: _Context):
    producer = {name: i for i, node in enumerate(nodes) for name in node.outputs}
    readers = reader_indices(nodes)
    replaced: dict = {}   # index of the node the fused one takes the place of -> the fused node
    dropped: set = set()
    for i, node in enumerate(nodes):
        if node.op != "softmax" or type(node.args.get("x")) is not Ref or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        args = {"x": node.args["x"], "mask": None, "axis": node.args.get("axis", -1), "nan_fill": None}
        parts, last = [], i
        add = _mask_add(nodes, producer, context, node.args["x"].name)
        if add is not None:
            j, args["x"], args["mask"] = add
            parts.append(j)
        guard = _nan_guard(nodes, readers, context, out)
        if guard is not None:
            k, last, args["nan_fill"] = guard
            parts += [k, last]
        if not parts:
            continue
        ends = nodes[last]
        meta = {"fused": [nodes[p].name for p in sorted(parts + [i])], "fusions": [NAME]}
        replaced[last] = Node(name=node.name, op="fused_softmax", args=args, outputs=list(ends.outputs), out=ends.out,
                              types=list(ends.types), meta=meta)
        dropped.update(p for p in parts + [i] if p != last)
    if not replaced:
        return nodes
    return [replaced.get(i, node) for i, node in enumerate(nodes) if i not in dropped or i in replaced]


def _mask_add(nodes, producer, context, name):
    """(index of the add, x, mask) when ``name`` is made by an add of two values of its dtype that
    only the softmax reads, else None (fused_softmax broadcasts them as add does)."""
    j = producer.get(name)
    if j is None or nodes[j].op != "add" or not context.only_reader(name) or len(nodes[j].outputs) != 1:
        return None
    a, b = nodes[j].args.get("a"), nodes[j].args.get("b")
    result = context.types.get(name)
    if type(a) is not Ref or type(b) is not Ref or result is None:
        return None
    ta, tb = context.types.get(a.name), context.types.get(b.name)
    if ta is None or tb is None or not np.dtype(ta[0]) == np.dtype(tb[0]) == np.dtype(result[0]):
        return None
    return j, a, b


def _nan_guard(nodes, readers, context, out):
    """(index of the isnan, index of the select, the fill) when the only readers of ``out`` are an
    isnan of it and a select of a constant where that is true and ``out`` elsewhere, else None."""
    if out in context.outputs or len(readers[out]) != 2:
        return None
    first, second = (nodes[r] for r in readers[out])
    k, s = readers[out] if first.op == "isnan" else readers[out][::-1]
    isnan, select = nodes[k], nodes[s]
    if isnan.op != "isnan" or select.op != "select" or len(isnan.outputs) != 1 or len(select.outputs) != 1:
        return None
    flag = isnan.outputs[0]
    if isnan.args.get("x") != Ref(out) or not context.only_reader(flag) or s < k:
        return None
    sa = select.args
    if sa.get("cond") != Ref(flag) or sa.get("else_") != Ref(out) or sa.get("auto_broadcast", "numpy") != "numpy":
        return None
    fill = _single_value(sa.get("then"), context)
    if fill is None or np.dtype(fill.dtype) != np.dtype(context.types[out][0]):
        return None
    if tuple(select.types[0][1]) != tuple(context.types[out][1]) or np.dtype(select.types[0][0]) != np.dtype(fill.dtype):
        return None
    return k, s, float(fill.reshape(-1)[0])


def _single_value(then, context):
    """The constant ``then`` as a one-element array, else None."""
    if type(then) is Ref:
        then = context.constants.get(then.name)
    if isinstance(then, (np.ndarray, np.generic)) and np.size(then) == 1 and np.asarray(then).dtype.kind == "f":
        return np.asarray(then)
    return None
