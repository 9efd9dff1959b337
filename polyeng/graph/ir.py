"""What a graph is made of: values, nodes that compute them, and the structures of inputs and outputs.

A value has a name, a dtype and a shape (those seen when the graph was traced). It is a graph
input, a constant, or an output of exactly one node. A node's ``args`` are the keyword arguments
of its op, with a :class:`Ref` where a value goes; everything else in them is an attribute.
Nodes are kept in an order in which every node comes after the nodes it reads from.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import dtypes as dt
from ..engine.call import map_arrays


class Ref:
    """A value, by name, inside a node's arguments or a graph's input/output structure."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        return type(other) is Ref and other.name == self.name

    def __hash__(self):
        return hash(("Ref", self.name))

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Value:
    """A graph input or output as the graph was traced: name, dtype and shape."""
    name: str
    dtype: np.dtype
    shape: tuple

    def __repr__(self) -> str:
        return f"Value({self.name}: {dt.short_name(self.dtype)}{list(self.shape)})"


@dataclass
class AmpInfo:
    """What the mixed precision pass decided for a node and why."""
    category: str               # "allow", "follow", "deny", or "cast" for casts the pass inserted
    why: str
    accumulation: str = "float32"
    mixed: bool = False         # whether the node computes on mixed precision inputs


@dataclass
class Node:
    """One op call: ``op`` is a polyeng op name, or ``np.<name>`` for a numpy operation the
    tracer recorded (indexing, transposition, astype to a non-float type, negation)."""
    name: str
    op: str
    args: dict
    outputs: list                  # value names, in the order ``out`` numbers them
    out: object                    # the result's structure: int leaves index ``outputs``
    types: list                    # (dtype, shape) per output
    meta: dict = field(default_factory=dict)
    amp: AmpInfo | None = None

    @property
    def inputs(self) -> list:
        """Names of the values this node reads, in argument order (repeats kept)."""
        return ref_names(self.args)

    @property
    def attrs(self) -> dict:
        """The arguments that are not values."""
        return {k: v for k, v in self.args.items() if not contains_ref(v)}

    @property
    def dtype(self) -> np.dtype:
        return self.types[0][0]

    @property
    def shape(self) -> tuple:
        return self.types[0][1]

    @property
    def is_numpy(self) -> bool:
        return self.op.startswith("np.")

    def __repr__(self) -> str:
        return f"Node({self.name}: {self.op}({', '.join(self.inputs)}) -> {', '.join(self.outputs)})"


def is_ref(value) -> bool:
    return type(value) is Ref


def leaves(template, is_leaf=is_ref) -> list:
    """Every leaf (by default: Ref) inside nested lists, tuples and dicts, in order."""
    found = []
    map_arrays(template, found.append, is_leaf)
    return found


def ref_names(template) -> list:
    return [r.name for r in leaves(template)]


def contains_ref(template) -> bool:
    return bool(leaves(template))


def fill(template, lookup):
    """``template`` with every Ref replaced by ``lookup(name)``."""
    return map_arrays(template, lambda r: lookup(r.name), is_ref)


def type_text(dtype, shape) -> str:
    return f"{dt.short_name(np.dtype(dtype))}{list(shape)}"


def unique(base: str, taken: set, sep: str = ".") -> str:
    """``base``, or ``base`` with the first free ``<sep>1``, ``<sep>2``... suffix; added to ``taken``."""
    name, i = base, 1
    while name in taken:
        name, i = f"{base}{sep}{i}", i + 1
    taken.add(name)
    return name


def by_output_index(out, result) -> list:
    """[(output index, value)] for a node's ``result`` shaped like its ``out`` template (an index,
    or nested lists and tuples of indices, as ops with several results return them)."""
    found = []
    _collect_outputs(out, result, found)
    return found


def _collect_outputs(index, value, found: list) -> None:
    # a module function, not a closure: a closure that calls itself is a reference cycle, which
    # would hold every result a graph run stores until the garbage collector runs
    if isinstance(index, int) and not isinstance(index, bool):
        found.append((index, value))
    elif isinstance(index, (list, tuple)):
        for i, v in zip(index, value):
            _collect_outputs(i, v, found)
