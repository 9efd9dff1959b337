"""Common subexpressions: a node computing what an earlier node computes already is dropped, and
its readers read the earlier node's values.

Two nodes compute the same when they run the same op with the same arguments: the same values,
where constants of equal dtype, shape and bytes count as the same value (an exporter writes one
constant per use: BERT's two attention masks are the same ``Where`` over two copies of 0 and the
float32 minimum), and equal attributes. Every polyeng op and host op is a function of its
arguments, so the later node's results are the earlier's, bit for bit.

A node whose value is a graph output is kept (the output keeps its name); it can still stand in
for later copies. Constants are compared by content up to ``SMALL_CONSTANT`` bytes (shape
arithmetic, masks' fill values, scalars); larger ones (weights) only by name.
"""
from __future__ import annotations

import dataclasses
import struct

import numpy as np

from ..engine.call import map_arrays
from .ir import Ref, leaves

NAME = "common_subexpressions"   # the name that turns it off, as a fusion's does
SMALL_CONSTANT = 4096   # bytes: constants compared by content


def eliminate(nodes: list, constants: dict, outputs) -> list:
    """``nodes`` with every node that repeats an earlier one dropped and its readers reading the
    earlier one's values (the same list when nothing repeats). ``outputs``: the graph's output
    value names."""
    outputs = set(outputs)
    same: dict = {}   # value name -> the name of the equal value read instead
    by_content: dict = {}
    for name, array in constants.items():
        if type(array) is np.ndarray and array.nbytes <= SMALL_CONSTANT:
            first = by_content.setdefault((array.dtype.str, array.shape, array.tobytes()), name)
            if first != name:
                same[name] = first
    computed: dict = {}   # node key -> the first node with it
    result, changed = [], False
    for node in nodes:
        args = node.args
        if same and any(ref.name in same for ref in leaves(args)):
            args = map_arrays(args, lambda ref: Ref(same.get(ref.name, ref.name)), lambda v: type(v) is Ref)
            node = dataclasses.replace(node, args=args)
            changed = True
        key = _key((node.op, args, node.out))
        first = computed.get(key) if key is not None else None
        if first is not None and len(first.outputs) == len(node.outputs) and not outputs & set(node.outputs):
            same.update(zip(node.outputs, first.outputs))
            changed = True
            continue
        if key is not None and first is None:
            computed[key] = node
        result.append(node)
    return result if changed else nodes


def _key(value):
    """A hashable description of ``value`` that is equal only for equal arguments, or None where a
    part has no such description (the node is then never merged)."""
    kind = type(value)
    if kind is Ref:
        return ("ref", value.name)
    if kind in (tuple, list):
        parts = tuple(_key(v) for v in value)
        return None if None in parts else (kind.__name__, parts)
    if kind is dict:
        items = []
        for k, v in value.items():
            part = _key(v)
            if part is None or type(k) is not str:
                return None
            items.append((k, part))
        return ("dict", tuple(sorted(items)))
    if kind is float:
        return ("float", struct.pack("<d", value))   # every bit: -0.0 and 0.0 differ, so do NaNs' signs
    if kind in (int, bool, str, type(None)):
        return (kind.__name__, value)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if kind is np.ndarray and value.nbytes <= SMALL_CONSTANT:
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return None
