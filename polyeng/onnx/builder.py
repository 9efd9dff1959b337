"""Building a polyeng Graph from ONNX nodes: what is known of each value, folding, and the nodes.

Every ONNX value is one of:
- ``const``: known at load time (an initializer, a Constant, or anything computed only from those);
- ``host``: a small value computed at run time on the host from shapes (``Shape`` of a tensor whose
  dims are named), by the ``onnx.*`` nodes of ``polyeng.onnx.host_ops``;
- ``data``: a tensor computed by polyeng ops (on any engine, possibly a device tensor).

A node whose inputs are all ``const`` runs at load time and its outputs become constants; that is
how shape plumbing on fixed dims, weight transposes and gate reorders disappear from the graph.
A ``host`` value that is a 1-D shape also carries ``known``: per element, the int it is at load
time when that is fixed (a dim that is not named), so picking fixed dims out of a shape folds too,
or the name of a named dim (``"batch"``, or one ONNX shape inference named, ``"unk__7"``) that it
equals at run time, the same size wherever that name appears, so a Reshape
whose target only repeats the input's named dims gets a fixed target (0 copies a dim) and the
Shape, Gather, Unsqueeze and Concat nodes that built the target at run time go.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import dispatch
from ..engine.settings import compute_eng
from ..graph.ir import Node, Ref, by_output_index, leaves, unique
from ..ops import catalogue

# The host nodes an imported model holds, as they run (at load time too, on constants):
# ``onnx.getitem`` is Slice or Gather with fixed indices, which is numpy indexing.


class Unsupported(Exception):
    """A node polyeng cannot run, and why (collected, then reported all at once)."""


@dataclass(eq=False)
class Val:
    kind: str                     # "const", "host" or "data"
    dtype: np.dtype
    shape: tuple | None           # ints, names, None for unknown; None when even the rank is unknown
    array: np.ndarray | None = None
    name: str | None = None       # the graph value's name (host, data, and consts once used)
    zero: bool = False            # every element is 0 (zero LSTM states)
    known: tuple | None = None    # host 1-D int values: each element's int, named dim (str), or None
    graph_name: str | None = None # a constant's name among the graph's constants, once used

    @property
    def is_const(self) -> bool:
        return self.kind == "const"

    @property
    def rank(self):
        return None if self.shape is None else len(self.shape)

    def static_shape(self):
        """The shape when every dim is a fixed int, else None."""
        if self.shape is None or any(type(d) is not int for d in self.shape):
            return None
        return tuple(self.shape)


def const(array, name=None) -> Val:
    array = np.asarray(array)
    return Val("const", array.dtype, tuple(array.shape), array=array, name=name,
               zero=array.size > 0 and array.dtype.kind in "fiub" and not np.any(array))


class Builder:
    def __init__(self, types, limit: int | None = None):
        self.types = types                  # model.Types
        self.limit = limit                  # the load budget in bytes: no folded constant is larger
        self.values: dict[str, Val] = {}    # ONNX value name -> Val
        self.nodes: list[Node] = []
        self.constants: dict[str, np.ndarray] = {}
        self.graph_types: dict = {}         # graph value name -> (dtype, shape)
        self._names: set = set()
        self._node_names: set = set()
        self.current = None                 # the ONNX node being converted (names new values)
        self.output_names: set = set()      # the model's outputs (never swallowed by a pattern)

    # --- names -----------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        """A value name not taken yet."""
        return unique(base, self._names)

    def node_name(self, base: str) -> str:
        """A node name not taken yet."""
        return unique(base, self._node_names)

    # --- values ----------------------------------------------------------------------------------
    def get(self, name: str) -> Val:
        return self.values[name]

    def set(self, name: str, val: Val) -> None:
        self.values[name] = val

    def ref(self, val: Val) -> Ref:
        """The graph value for ``val``, registering a constant the first time it is used."""
        if val.is_const:
            if val.graph_name is None:
                val.graph_name = self.fresh(val.name or "constant")
                array = np.array(val.array, order="C")   # owned; 0-d stays 0-d
                array.flags.writeable = False
                self.constants[val.graph_name] = array
                self.graph_types[val.graph_name] = (array.dtype, tuple(array.shape))
            return Ref(val.graph_name)
        return Ref(val.name)

    def input(self, name: str, dtype, shape) -> Val:
        self._names.add(name)
        self.graph_types[name] = (np.dtype(dtype), tuple(shape))
        val = Val("data", np.dtype(dtype), tuple(shape), name=name)
        self.values[name] = val
        return val

    # --- nodes -----------------------------------------------------------------------------------
    def emit(self, op: str, args: dict, types: list, names: list | None = None, out=0, kind=None,
             known=None, zero=False, node_name=None) -> list:
        """Add node ``op`` with ``args`` (Vals where values go) and return its output Vals.

        ``types`` is [(dtype, shape)] per output. When every Val in ``args`` is a constant the op
        runs now and its outputs are constants. ``kind`` defaults to "host" for ``onnx.*`` nodes
        and "data" for polyeng ops.
        """
        spec = catalogue.lookup(op, "node op")
        if not spec.host:
            args = _with_defaults(op, args)
        vals = leaves(args, _is_val)
        if vals and all(v.is_const for v in vals):
            self._check_fold(op, types)
            result = self._run_now(op, args)
            results = [result] if out == 0 else _flatten(out, result)
            return [const(r, name=(names[i] if names else None)) for i, r in enumerate(results)]
        if kind is None:
            kind = "host" if spec.host else "data"
        if not spec.host:
            _check_at_load(spec, args)
        onnx_node = self.current
        base = names or [f"{onnx_node.name}.{i}" for i in range(len(types))]
        out_names = [self.fresh(n) for n in base]
        graph_args = fill_vals(args, self.ref)
        node = Node(name=self.node_name(node_name or out_names[0]), op=op, args=graph_args, outputs=out_names,
                    out=out, types=[(np.dtype(d), _shape(s)) for d, s in types])
        self.nodes.append(node)
        outputs = []
        for n, (d, s) in zip(out_names, types):
            self.graph_types[n] = (np.dtype(d), _shape(s))
            outputs.append(Val(kind, np.dtype(d), None if s is None else tuple(s), name=n, zero=zero, known=known))
        return outputs

    def _check_fold(self, op, types) -> None:
        """Refuse a folded result larger than the load budget before it is computed, where the
        inferred shapes say how large it is."""
        if self.limit is None:
            return
        for dtype, shape in types:
            if shape is not None and all(type(d) is int for d in shape):
                nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
                if nbytes > self.limit:
                    raise ValueError(f"folding it at load time makes {list(shape)} {np.dtype(dtype).name}, "
                                     f"{nbytes} bytes, over the load budget of {self.limit} (max_bytes=)")

    def _run_now(self, op, args):
        """Run ``op`` on constants now; what it raises becomes a ValueError the loader pins on the node."""
        concrete = fill_vals(args, lambda v: v.array)
        spec = catalogue.lookup(op)
        try:
            if spec.host:
                result = np.asarray(spec.function(**concrete))
            else:
                with compute_eng("basic"):
                    result = dispatch.run(spec, **concrete)
        except MemoryError:
            raise ValueError("folding it at load time needs more memory than there is") from None
        except Exception as exc:   # an index out of range, a division by zero, a shape that cannot be
            raise ValueError(f"folding it at load time failed: {exc}") from None
        if self.limit is not None:
            for r in ([result] if not isinstance(result, (tuple, list)) else result):
                if getattr(r, "nbytes", 0) > self.limit:
                    raise ValueError(f"folding it at load time made {r.nbytes} bytes, over the load budget of "
                                     f"{self.limit} (max_bytes=)")
        return result



def _check_at_load(spec, args: dict) -> None:
    """Run the op's argument checks now when every tensor argument's shape is fixed, on
    placeholders of those shapes (zero strides, no memory): a Conv kernel larger than its input,
    an Add whose operands do not broadcast or a Transpose with a repeated axis is an error naming
    the node at load time, not at the first run."""
    vals = leaves(args, _is_val)
    if any(v.kind == "host" or v.static_shape() is None for v in vals):
        return
    placeholders = fill_vals(args, lambda v: v.array if v.is_const else
                             np.broadcast_to(np.zeros((), np.dtype(v.dtype)), v.static_shape()))
    spec.validate(**placeholders)


def _with_defaults(op: str, args: dict) -> dict:
    """Every parameter of the op, as a traced call records them (defaults filled in)."""
    import inspect
    bound = inspect.signature(catalogue.lookup(op).function).bind(**args)
    bound.apply_defaults()
    return dict(bound.arguments)


def _is_val(value) -> bool:
    return type(value) is Val


def fill_vals(template, fn):
    """``template`` with every Val replaced by ``fn(val)``."""
    from ..engine.call import map_arrays
    return map_arrays(template, fn, _is_val)


def _flatten(out, result) -> list:
    return [np.asarray(v) for _, v in sorted(by_output_index(out, result), key=lambda p: p[0])]


def _shape(shape) -> tuple:
    return () if shape is None else tuple(shape)
