"""What a graph file must be before polyeng builds a graph from it: every check is a ValueError
naming the file and the key, node, value or member at fault, made before any constant is read.

- The file: a regular file (a FIFO would block for ever, a device never end), a zip archive with
  one member named ``graph.json``.
- ``graph.json``: at most ``MAX_JSON_BYTES`` and ``MAX_NESTING`` levels deep; the keys each have
  their type (``name`` a string and ``leading_free`` a bool where given); the version an int;
  tagged values (``{"ref": name}``, ``{"tuple": [...]}``...) of a known tag with a body of its form.
- Inputs: ``input_structure`` is [positional inputs, keyword inputs] placing every input once and
  nothing else; ``input_names`` names each positional input, after the parameter its inputs were
  named after. ``types`` gives every value a [dtype, shape]; ``output_structure`` returns at least
  one value, each defined.
- Nodes: known ops, a name and outputs that are strings, ``out`` indices within the outputs, a
  type per output, arguments an object nesting at most ``MAX_ARG_NESTING`` levels that refer
  only to values defined before them (inputs, constants, earlier nodes' outputs), each value
  defined once, so a file cannot make a cycle; ``amp`` and ``meta`` of their keys and types.
- Constants: a dtype polyeng has, a shape of non-negative ints, a member of the archive that no
  other constant names and the archive holds once, no larger than its shape justifies (a small
  header allowed), and all of them together within the load budget (``max_bytes``, 8 GiB unless
  given; the message names the largest).
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..engine import dtypes as dt
from .ir import Ref, leaves

MAX_JSON_BYTES = 256 << 20
MAX_NESTING = 64
MAX_ARG_NESTING = 8          # lists, tuples and dicts inside one argument of a node
MAX_BYTES = 8 << 30
NPY_HEADER_BYTES = 1 << 16   # the most a constant's .npy member may hold beyond its data


def nesting(value, limit: int = MAX_NESTING) -> int:
    """How deep lists, tuples and dicts nest in parsed JSON or a decoded value, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
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


def _optional(document: dict, key: str, kind, where: str) -> None:
    if key in document:
        _need(document, key, kind, where)


def brief(value, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


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
    _optional(document, "name", str, path)
    _optional(document, "leading_free", bool, path)
    for i, name in enumerate(document["input_names"]):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{path}: graph.json's input_names[{i}] is {brief(name)}; expected a parameter's name")
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


def value_type(entry, where: str) -> tuple:
    """A type as graph.json writes it, ``[dtype, shape]``, as (np.dtype, shape tuple)."""
    if not isinstance(entry, list) or len(entry) != 2:
        raise ValueError(f"{where} is {brief(entry)}; expected [dtype, shape]")
    return _dtype(entry[0], where), _shape(entry[1], where, names_allowed=True)


def value_types(types: dict, path) -> dict:
    """graph.json's ``types``: value name -> (dtype, shape)."""
    return {name: value_type(entry, f"{path}: types[{name!r}]") for name, entry in types.items()}


def check_typed(names, types: dict, path) -> None:
    """Every value (``names``: inputs, constants and node outputs, in order) has an entry in ``types``."""
    for name in names:
        if name not in types:
            raise ValueError(f"{path}: value {name!r} has no entry in 'types'")


AMP_FIELDS = {"category": str, "why": str, "accumulation": str, "mixed": bool}
AMP_CATEGORIES = ("allow", "follow", "deny", "cast")
AMP_ACCUMULATIONS = ("float32", "float64", "bfloat16", "float16")


def amp_fields(amp, where: str) -> dict | None:
    """A node's ``amp`` block (what the mixed precision pass decided) as ``AmpInfo``'s arguments."""
    if amp is None or amp == {}:
        return None
    if not isinstance(amp, dict):
        raise ValueError(f"{where}: amp is a {type(amp).__name__}; expected an object")
    for key, value in amp.items():
        if key not in AMP_FIELDS:
            raise ValueError(f"{where}: amp has the key {key!r}; expected {', '.join(AMP_FIELDS)}")
        kind = AMP_FIELDS[key]
        if not isinstance(value, kind) or kind is not bool and isinstance(value, bool):
            raise ValueError(f"{where}: amp's {key} is a {type(value).__name__}; expected a {kind.__name__}")
    for key in ("category", "why"):
        if key not in amp:
            raise ValueError(f"{where}: amp has no {key!r}")
    if amp["category"] not in AMP_CATEGORIES:
        raise ValueError(f"{where}: amp's category is {brief(amp['category'])}; expected one of "
                         f"{', '.join(AMP_CATEGORIES)}")
    if amp.get("accumulation", "float32") not in AMP_ACCUMULATIONS:
        raise ValueError(f"{where}: amp's accumulation is {brief(amp['accumulation'])}; expected one of "
                         f"{', '.join(AMP_ACCUMULATIONS)}")
    return dict(amp)


def _check_meta(node, where: str) -> None:
    """The runner's meta keys (``batch_relative``, ``rows``: set by the tracer) and the arguments they read."""
    meta, args = node.meta, node.args
    if "batch_relative" in meta:
        if not isinstance(meta["batch_relative"], bool):
            raise ValueError(f"{where}: meta's batch_relative is a {type(meta['batch_relative']).__name__}; "
                             f"expected a bool")
        if meta["batch_relative"] and (type(args.get("x")) is not Ref or "shape" not in args):
            raise ValueError(f"{where}: meta's batch_relative needs the arguments x (a value) and shape")
    if "rows" in meta:
        rows = meta["rows"]
        if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 0):
            raise ValueError(f"{where}: meta's rows is {brief(rows)}; expected a size >= 0")
        if rows is not None and (type(args.get("x")) is not Ref or "key" not in args):
            raise ValueError(f"{where}: meta's rows needs the arguments x (a value) and key")


def check_nodes(nodes, defined: set, known_op, path) -> None:
    """Each decoded node refers only to values defined before it, and defines its outputs once."""
    for node in nodes:
        where = f"{path}: node {node.name!r} ({node.op})"
        known_op(node.op, where)
        if not isinstance(node.args, dict):
            raise ValueError(f"{where}: args is a {type(node.args).__name__}; expected an object of the op's "
                             f"arguments")
        for key, value in node.args.items():
            depth = nesting(value, MAX_ARG_NESTING)
            if depth > MAX_ARG_NESTING:
                depth = nesting(value, MAX_NESTING)
                raise ValueError(f"{where}: argument {key!r} nests {depth} levels deep; arguments nest at most "
                                 f"{MAX_ARG_NESTING}")
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
        _check_meta(node, where)
        for name in node.outputs:
            if not isinstance(name, str) or not name or name in defined:
                raise ValueError(f"{where}: output {name!r} is not a new value's name")
            defined.add(name)


def check_outputs(structure, defined: set, path) -> None:
    refs = leaves(structure, lambda v: type(v) is Ref)
    if not refs:
        raise ValueError(f"{path}: graph.json's 'output_structure' is {brief(structure)}: it returns no value "
                         f"(no {{'ref': name}} in it)")
    for ref in refs:
        if ref.name not in defined:
            raise ValueError(f"{path}: output {ref.name!r} is defined by no input, constant or node")


def _named_after(value: str, parameter: str) -> bool:
    """Whether an input value's name comes from a positional parameter's: the tracer names the input
    ``x``, ``x[0]``, ``x.key`` (made a name by ``tracer._unique``, with ``'1``... where taken); an
    imported model names each input as itself."""
    from .tracer import _unique
    return any(value == base or value.startswith(base) and value[len(base)] in "[.'"
               for base in {parameter, _unique(parameter, ())})


def check_inputs(structure, input_names: list, inputs: list, path) -> tuple:
    """The decoded ``input_structure`` as (positional template tuple, keyword template dict): it
    places each input (``inputs``: their names, in order) exactly once and nothing else, and
    ``input_names`` names each positional input after the parameter its inputs are named for."""
    key = "graph.json's 'input_structure'"
    if not isinstance(structure, list) or len(structure) != 2:
        found = f"holds {len(structure)} item{'s' * (len(structure) != 1)}" if isinstance(structure, list) \
            else f"is {brief(structure)}"
        raise ValueError(f"{path}: {key} {found}; expected 2: the positional inputs (a tuple) and the keyword "
                         f"inputs (a dict)")
    positional, keyword = structure
    if not isinstance(positional, (tuple, list)) or not isinstance(keyword, dict):
        raise ValueError(f"{path}: {key} is {brief(structure)}; expected 2 items: the positional inputs "
                         f"(a tuple) and the keyword inputs (a dict)")
    placed, known = Counter(ref.name for ref in leaves(structure, lambda v: type(v) is Ref)), set(inputs)
    for name, count in placed.items():
        if name not in known:
            raise ValueError(f"{path}: {key} places {name!r}, which is not an input")
        if count > 1:
            raise ValueError(f"{path}: {key} places input {name!r} {count} times")
    for name in inputs:
        if name not in placed:
            raise ValueError(f"{path}: input {name!r} has no place in 'input_structure'")
    if len(input_names) != len(positional):
        raise ValueError(f"{path}: graph.json's 'input_names' names {len(input_names)} positional inputs; "
                         f"'input_structure' has {len(positional)}")
    for i, (parameter, template) in enumerate(zip(input_names, positional)):
        for ref in leaves(template, lambda v: type(v) is Ref):
            if not _named_after(ref.name, parameter):
                verb = "is" if type(template) is Ref else "holds"
                raise ValueError(f"{path}: graph.json's input_names[{i}] is {parameter!r}, but positional input "
                                 f"{i} {verb} input {ref.name!r}")
    return tuple(positional), keyword


def check_budget(constants: list, declared: dict, budget: int, path) -> None:
    """All constants together take no more than the load budget; the message names the largest."""
    total = sum(declared.values())
    if total <= budget:
        return
    entry = max(constants, key=lambda e: declared[e["name"]])
    largest = declared[entry["name"]]
    which = f"constant {entry['name']!r} of shape {entry['shape']} alone takes {largest}" if largest > budget \
        else f"the largest is constant {entry['name']!r} of shape {entry['shape']}, {largest} bytes"
    raise ValueError(f"{path}: the constants take {total} bytes, over the load budget of {budget} (max_bytes=); "
                     f"{which}")


def constant_bytes(entry, path) -> int:
    """The bytes a constant's declared dtype and shape take (ValueError for a bad dtype or shape)."""
    where = f"{path}: constant {entry['name']!r}"
    dtype = _dtype(entry["dtype"], where)
    shape = _shape(entry["shape"], where, names_allowed=False)
    return math.prod(shape) * dtype.itemsize


def check_member(archive, entry, used: dict, path, declared: int, counts: Counter) -> None:
    """The constant's member exists once in the archive (``counts``: how many members have each
    name), belongs to it alone, and is no larger than its shape justifies."""
    where = f"{path}: constant {entry['name']!r}"
    member = entry["file"]
    if not isinstance(member, str):
        raise ValueError(f"{where}: file {member!r} is not a member name")
    if member in used:
        raise ValueError(f"{where}: member {member!r} is constant {used[member]!r}'s already")
    used[member] = entry["name"]
    if counts[member] > 1:
        raise ValueError(f"{where}: the archive has {counts[member]} members named {member!r}")
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise ValueError(f"{where}: the archive has no member {member!r}") from None
    if info.file_size > declared + NPY_HEADER_BYTES:
        raise ValueError(f"{where}: member {member!r} holds {info.file_size} bytes; its shape "
                         f"{entry['shape']} and dtype {entry['dtype']} justify {declared}")
