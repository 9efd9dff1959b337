"""What a graph file must be before polyeng builds a graph from it: every check is a ValueError
naming the file and the key, node, value or member at fault, made before any constant is read.

- ``graph.json``: at most ``MAX_JSON_BYTES`` and ``MAX_NESTING`` levels deep; the keys each have
  their type; the version an int.
- Nodes: known ops, a name and outputs that are strings, ``out`` indices within the outputs, a
  type per output, and arguments that refer only to values defined before them (inputs,
  constants, earlier nodes' outputs), each value defined once, so a file cannot make a cycle.
- Constants: a dtype polyeng has, a shape of non-negative ints, a member of the archive that no
  other constant names, no larger than its shape justifies (a small header allowed), and all
  of them together within the load budget (``max_bytes``, 8 GiB unless given).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import dtypes as dt
from .ir import Ref, leaves

MAX_JSON_BYTES = 256 << 20
MAX_NESTING = 64
MAX_BYTES = 8 << 30
NPY_HEADER_BYTES = 1 << 16   # the most a constant's .npy member may hold beyond its data


def nesting(value, limit: int = MAX_NESTING) -> int:
    """How deep lists and dicts nest in parsed JSON, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _need(document: dict, key: str, kind, where: str):
    if key not in document:
        raise ValueError(f"{where}: graph.json has no {key!r}")
    value = document[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValueError(f"{where}: graph.json's {key!r} is a {type(value).__name__}; expected a {names}")
    return value


def _dtype(name, where: str) -> np.dtype:
    try:
        return dt.as_dtype(name)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: dtype {name!r} is not one polyeng has") from None


def _shape(shape, where: str, names_allowed: bool) -> tuple:
    if not isinstance(shape, list):
        raise ValueError(f"{where}: shape {shape!r} is not a list")
    for d in shape:
        ok = (isinstance(d, int) and not isinstance(d, bool) and d >= 0) or (names_allowed and (d is None or isinstance(d, str)))
        if not ok:
            raise ValueError(f"{where}: shape {shape!r} has {d!r}; expected sizes >= 0"
                             + (" or dim names" if names_allowed else ""))
    return tuple(shape)


def check_document(document, path) -> set:
    """The structure of a parsed graph.json (see the module docstring); returns the names its inputs
    and constants define."""
    if not isinstance(document, dict):
        raise ValueError(f"{path}: graph.json is a {type(document).__name__}; expected an object")
    for key, kind in (("inputs", list), ("input_names", list), ("input_structure", list), ("types", dict),
                      ("constants", list), ("nodes", list)):
        _need(document, key, kind, path)
    if "output_structure" not in document:
        raise ValueError(f"{path}: graph.json has no 'output_structure'")
    defined = set()

    def define(name, where):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{path}: {where} has the name {name!r}; expected a non-empty string")
        if name in defined:
            raise ValueError(f"{path}: {where} defines {name!r}, which is already defined")
        defined.add(name)
    for i, value in enumerate(document["inputs"]):
        where = f"input {i}"
        if not isinstance(value, dict):
            raise ValueError(f"{path}: {where} is not an object")
        for key in ("name", "dtype", "shape"):
            if key not in value:
                raise ValueError(f"{path}: {where} has no {key!r}")
        define(value["name"], where)
        _dtype(value["dtype"], f"{path}: input {value['name']!r}")
        _shape(value["shape"], f"{path}: input {value['name']!r}", names_allowed=True)
    for i, entry in enumerate(document["constants"]):
        if not isinstance(entry, dict) or not all(k in entry for k in ("name", "file", "dtype", "shape")):
            raise ValueError(f"{path}: constant {i} is not an object with name, file, dtype and shape")
        define(entry["name"], f"constant {i}")
    return defined


def check_nodes(nodes, defined: set, known_op, path) -> None:
    """Each decoded node refers only to values defined before it, and defines its outputs once."""
    for node in nodes:
        where = f"{path}: node {node.name!r} ({node.op})"
        known_op(node.op, where)
        for ref in leaves(node.args, lambda v: type(v) is Ref):
            if ref.name not in defined:
                raise ValueError(f"{where}: argument {ref.name!r} is not defined before the node")
        if not isinstance(node.outputs, list) or not node.outputs:
            raise ValueError(f"{where}: no outputs")
        indices = leaves(node.out, lambda v: isinstance(v, int) and not isinstance(v, bool))
        if not indices or any(not 0 <= i < len(node.outputs) for i in indices) or \
                leaves(node.out, lambda v: not isinstance(v, (int, list, tuple)) or isinstance(v, bool)):
            raise ValueError(f"{where}: out {node.out!r} names no output among its {len(node.outputs)}")
        if len(node.types) != len(node.outputs):
            raise ValueError(f"{where}: {len(node.types)} types for {len(node.outputs)} outputs")
        if not isinstance(node.meta, dict):
            raise ValueError(f"{where}: meta is a {type(node.meta).__name__}; expected an object")
        for name in node.outputs:
            if not isinstance(name, str) or not name or name in defined:
                raise ValueError(f"{where}: output {name!r} is not a new value's name")
            defined.add(name)


def check_outputs(structure, defined: set, path) -> None:
    for ref in leaves(structure, lambda v: type(v) is Ref):
        if ref.name not in defined:
            raise ValueError(f"{path}: output {ref.name!r} is defined by no input, constant or node")


def constant_bytes(entry, path) -> int:
    """The bytes a constant's declared dtype and shape take (ValueError for a bad dtype or shape)."""
    where = f"{path}: constant {entry['name']!r}"
    dtype = _dtype(entry["dtype"], where)
    shape = _shape(entry["shape"], where, names_allowed=False)
    return math.prod(shape) * dtype.itemsize


def check_member(archive, entry, used: dict, path, declared: int) -> None:
    """The constant's member exists, belongs to it alone, and is no larger than its shape justifies."""
    where = f"{path}: constant {entry['name']!r}"
    member = entry["file"]
    if not isinstance(member, str):
        raise ValueError(f"{where}: file {member!r} is not a member name")
    if member in used:
        raise ValueError(f"{where}: member {member!r} is constant {used[member]!r}'s already")
    used[member] = entry["name"]
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise ValueError(f"{where}: the archive has no member {member!r}") from None
    if info.file_size > declared + NPY_HEADER_BYTES:
        raise ValueError(f"{where}: member {member!r} holds {info.file_size} bytes; its shape "
                         f"{entry['shape']} and dtype {entry['dtype']} justify {declared}")
