"""The ``batch_first_unbind`` graph rewrite: an attention's q, k and v taken with the batch first.

A ViT (timm's, and every model written the same way) makes q, k and v from one product,
``qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)``, then unbinds the first dim: a Slice and a
Squeeze per part (the dynamo exporter), a Split and three Squeezes (torchscript), or a Gather of
one index. The permutation puts the batch second, so a oneDNN program holding it cannot split
the batch between threads (``backends/onednn/lanes.py``), and the model ran on one.

The rewrite swaps the permutation's first two dims, ``(0, 2, 3, 1, 4)`` here, and unbinds the
second dim instead: each part is the same array (B, H, N, D), now a part of each image. It
applies to a ``permute_contiguous`` whose dims start with some ``d`` then 0 (the batch), whose
every reader takes one index of its first dim (``onnx.getitem`` of one index, or of ``i:i+1``
then ``onnx.squeeze`` of that dim; a ``split`` into parts of 1, each then squeezed), none of
the values changed being a graph output nor of unknown shape. On OPENCL device tensors an index
of dim 1 is taken on the host (their indexing takes leading dims only): a copy there and back.
"""
from __future__ import annotations

import dataclasses

from .fusing import _Context, fusion, reader_indices
from .ir import Ref

NAME = "batch_first_unbind"


@fusion(NAME, "permute_contiguous putting the batch second whose readers unbind its first dim (an attention's "
              "q, k, v) -> the first two dims swapped, the second unbound")
def batch_first_unbind(nodes, context: _Context):
    readers = reader_indices(nodes)
    changed: dict = {}   # index -> the node that takes its place
    for i, node in enumerate(nodes):
        if node.op != "permute_contiguous" or len(node.outputs) != 1 or type(node.args.get("x")) is not Ref:
            continue
        dims = tuple(int(d) for d in node.args.get("dims", ()))
        out = node.outputs[0]
        if len(dims) < 3 or dims[0] == 0 or dims[1] != 0 or out in context.outputs:
            continue
        try:
            plan = _unbinds(nodes, readers, context, out, len(dims))
            if plan is None:
                continue
            plan[i] = _with(node, {"dims": (dims[1], dims[0]) + dims[2:]})
        except _ShapeUnknown:   # a value whose shape the loader could not infer: left as it is
            continue
        for j, made in plan.items():
            changed[j] = made
            context.types.update(zip(made.outputs, made.types))
    if not changed:
        return nodes
    return [changed.get(i, node) for i, node in enumerate(nodes)]


class _ShapeUnknown(Exception):
    pass


def _swap(shape) -> tuple:
    if shape is None or len(shape) < 2:
        raise _ShapeUnknown
    shape = tuple(shape)
    return (shape[1], shape[0]) + shape[2:]


def _with(node, args, swap=True):
    """``node`` with ``args`` merged in and, where ``swap``, each output's first two dims swapped."""
    types = [(dtype, _swap(shape)) if swap else (dtype, shape) for dtype, shape in node.types]
    meta = dict(node.meta)
    meta["fusions"] = list(meta.get("fusions", [])) + [NAME]
    return dataclasses.replace(node, args={**node.args, **(args or {})}, types=types, meta=meta)


def _one_index(key, rank: int):
    """``("index", i)`` for a key taking index i of the first dim (dropping it), ``("slice", i)`` for
    ``i:i+1`` of it (keeping it), else None. Keys of other dims must be whole."""
    if isinstance(key, tuple):
        if not key or any(k != slice(None) for k in key[1:]):
            return None
        key = key[0]
    if isinstance(key, int) and not isinstance(key, bool):
        return ("index", key) if -rank <= key < rank else None
    if isinstance(key, slice) and key.step in (None, 1) and isinstance(key.start, int) \
            and isinstance(key.stop, int) and 0 <= key.start and key.stop == key.start + 1:
        return ("slice", key.start)
    return None


def _squeezes_of_dim_0(nodes, readers, context, name):
    """The indices of the nodes reading ``name``, where each is an ``onnx.squeeze`` of dim 0 alone."""
    found = readers.get(name, [])
    if not found or name in context.outputs:
        return None
    for j in found:
        node = nodes[j]
        if node.op != "onnx.squeeze" or tuple(node.args.get("axes") or ()) != (0,) or node.args.get("x") != Ref(name):
            return None
    return found


def _unbinds(nodes, readers, context, out, rank):
    """{index: the changed node} for every reader of ``out`` and the squeezes after them, or None
    where one of them is not an unbind of the first dim."""
    plan = {}
    found = readers.get(out, [])
    if not found:
        return None
    for j in found:
        node = nodes[j]
        if node.args.get("x") != Ref(out) or len(node.inputs) != 1:
            return None
        if node.op == "onnx.getitem":
            kind = _one_index(node.args.get("key"), rank)
            if kind is None:
                return None
            if kind[0] == "index":   # the dim dropped: the same (B, ...) result
                plan[j] = _with(node, {"key": (slice(None), kind[1])}, swap=False)
                continue
            squeezes = _squeezes_of_dim_0(nodes, readers, context, node.outputs[0])
            if squeezes is None:
                return None
            plan[j] = _with(node, {"key": (slice(None), slice(kind[1], kind[1] + 1))})
        elif node.op == "split":
            sections = node.args.get("split_size_or_sections")
            if int(node.args.get("axis", 0)) % rank != 0 or not isinstance(sections, (list, tuple)) \
                    or any(int(s) != 1 for s in sections):
                return None
            squeezes = []
            for piece in node.outputs:
                found_here = _squeezes_of_dim_0(nodes, readers, context, piece)
                if found_here is None:
                    return None
                squeezes += found_here
            plan[j] = _with(node, {"axis": 1})
        else:
            return None
        for k in squeezes:
            plan[k] = _with(nodes[k], {"axes": (1,)}, swap=False)
    return plan
