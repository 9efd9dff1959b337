"""``trace(fn, *example_inputs)``: run ``fn`` once on traced values and record what it computes.

Every polyeng op call whose arguments include a traced value becomes a node; a call whose
arguments are all constants runs at once and its result is a constant (so subgraphs of
constants are folded while tracing). Arrays ``fn`` reaches that are not derived from its inputs
(weights it closes over, folded results) become the graph's constants, named after the
variable, dict key or attribute they were found under when there is one.
"""
from __future__ import annotations

import inspect
import itertools

import numpy as np

from ..engine import trace_hook
from ..engine.call import map_arrays
from ..engine.plugins import registry
from .ir import Node, Ref, Value, leaves, unique
from .traced import Traced


def _is_array(value) -> bool:
    if isinstance(value, (np.ndarray, np.generic)):
        return True
    native = registry().native_types()
    return bool(native) and isinstance(value, native)


def _is_traced(value) -> bool:
    return isinstance(value, Traced)


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Tracer:
    def __init__(self, fn):
        self.nodes: list[Node] = []
        self.constants: dict[str, np.ndarray] = {}
        self.types: dict[str, tuple] = {}          # value name -> (dtype, shape)
        self._by_id: dict[int, tuple] = {}         # id(array) -> (array kept alive, constant name)
        self._counters = {}
        self._known_names = _names_reachable_from(fn)

    # --- values ------------------------------------------------------------------------------
    def _fresh(self, prefix: str) -> str:
        counter = self._counters.setdefault(prefix, itertools.count())
        return f"{prefix}{next(counter)}"

    def new_value(self, value, name: str | None = None) -> Traced:
        name = name or self._fresh("v")
        self.types[name] = (np.dtype(value.dtype), tuple(value.shape))
        return Traced(self, name, value)

    def constant(self, array) -> Ref:
        """The constant holding ``array`` (one per array object: the same weight used twice is one)."""
        known = self._by_id.get(id(array))
        if known is not None:
            return Ref(known[1])
        from ..engine.api import to_numpy
        host = to_numpy(array)
        stored = np.array(host, copy=True)   # later changes to the caller's array do not reach the graph
        stored.flags.writeable = False
        name = unique(self._known_names.get(id(array)) or self._fresh("c"), set(self.types), "'")
        self.constants[name] = stored
        self.types[name] = (stored.dtype, stored.shape)
        self._by_id[id(array)] = (array, name)
        return Ref(name)

    def _template(self, value):
        """``value`` with traced values and arrays replaced by Refs (arrays become constants)."""
        def ref(leaf):
            if not isinstance(leaf, Traced):
                return self.constant(leaf)
            if leaf.tracer is not self:
                raise ValueError(f"traced value %{leaf.name} belongs to another trace")
            return Ref(leaf.name)
        return map_arrays(value, ref, lambda v: isinstance(v, Traced) or _is_array(v))

    # --- recording --------------------------------------------------------------------------------
    def record(self, spec, kwargs: dict):
        """An op call made while tracing: run it, and record it when it reads a traced value."""
        if not leaves(kwargs, _is_traced):
            return self._run_untraced(spec, kwargs)   # constants only: folded now
        args = self._template(kwargs)
        result = self._run_untraced(spec, self._unwrapped(kwargs))
        meta = {}
        if spec.name == "reshape":
            meta = _batch_relative(kwargs)
        return self._add_node(spec.name, args, result, meta)

    def numpy_node(self, op: str, **kwargs):
        from ..ops.catalogue import host_spec
        args = self._template(kwargs)
        result = host_spec(op).function(**self._unwrapped(kwargs))
        meta = {}
        if op == "np.getitem":
            meta = _fixed_rows(kwargs["x"], kwargs["key"])
        return self._add_node(op, args, result, meta)

    def index_key(self, key):
        """An indexing key as recorded: Python ints, slices, None and Ellipsis as they are; arrays
        (index arrays, masks) as constants or traced values."""
        if isinstance(key, tuple):
            return tuple(self.index_key(k) for k in key)
        if isinstance(key, list):
            key = np.asarray(key)
        if isinstance(key, slice):
            return slice(*(None if v is None else _index_int(v) for v in (key.start, key.stop, key.step)))
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return int(key)
        return key

    def _add_node(self, op: str, args, result, meta) -> object:
        arrays = []

        def number(array):   # the result's structure, each array replaced by its output index
            arrays.append(array)
            return len(arrays) - 1
        out = map_arrays(result, number, _is_array)
        traced = [self.new_value(v) for v in arrays]
        self.nodes.append(Node(name=self._fresh("n"), op=op, args=args, outputs=[t.name for t in traced], out=out,
                               types=[self.types[t.name] for t in traced], meta=meta))
        return map_arrays(out, traced.__getitem__, _is_index)

    @staticmethod
    def _unwrapped(kwargs):
        return map_arrays(kwargs, lambda t: t.value, _is_traced)

    @staticmethod
    def _run_untraced(spec, kwargs):
        from ..engine.dispatch import run
        token = trace_hook.current.set(None)
        try:
            return run(spec, **kwargs)
        finally:
            trace_hook.current.reset(token)


def _index_int(v):
    if isinstance(v, Traced):
        v._refuse("use as a slice bound")
    return int(v)


def _fixed_rows(x, key) -> dict:
    """Indexing that slices the leading axis with explicit bounds (``x[:2]``, ``x[1:n]``) picks rows
    counted on the example's batch: run on another batch size it would silently pick other rows,
    so the runner refuses that (``rows`` is the leading size it was traced with)."""
    first = key[0] if isinstance(key, tuple) and key else key
    if isinstance(first, slice) and (first.start is not None or first.stop is not None) and x.shape:
        return {"rows": x.shape[0]}
    return {}


def _batch_relative(kwargs) -> dict:
    """A reshape whose target starts with its input's leading dimension keeps that dimension
    relative: run on another batch size, the target's first entry follows the input's."""
    x, shape = kwargs.get("x"), kwargs.get("shape")
    if not isinstance(x, Traced) or not x.shape:
        return {}
    first = shape[0] if isinstance(shape, (tuple, list)) and len(shape) else shape
    try:
        first = int(first)
    except (TypeError, ValueError):
        return {}
    return {"batch_relative": True} if first == x.shape[0] and first != -1 else {}


def _visit(obj, name, depth, names) -> None:
    # a module function, not a closure calling itself (a reference cycle)
    if isinstance(obj, np.ndarray):
        names.setdefault(id(obj), name)
    elif depth >= 3 or isinstance(obj, (str, bytes, type)) or inspect.ismodule(obj) or callable(obj):
        return
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, (str, int)):
                _visit(v, f"{name}.{k}" if name else str(k), depth + 1, names)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _visit(v, f"{name}[{i}]", depth + 1, names)
    elif hasattr(obj, "__dict__") and depth < 2:
        for k, v in vars(obj).items():
            _visit(v, f"{name}.{k}", depth + 1, names)


def _names_reachable_from(fn) -> dict:
    """id(array) -> a readable name for arrays ``fn`` reaches: closure variables, globals it names,
    defaults, attributes of the function and of a bound method's object (dict keys, list items
    and object attributes one or two levels down)."""
    names: dict[int, str] = {}

    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if getattr(fn, "__self__", None) is not None:
        _visit(fn.__self__, "self", 0, names)
    for k, v in getattr(target, "__dict__", {}).items():
        _visit(v, k, 1, names)
    if code is not None:
        for name, cell in zip(code.co_freevars, target.__closure__ or ()):
            try:
                _visit(cell.cell_contents, name, 0, names)
            except ValueError:   # an empty cell
                pass
        glob = getattr(target, "__globals__", {})
        for name in code.co_names:
            if name in glob:
                _visit(glob[name], name, 0, names)
    return names


def _as_input(value, name, tracer, inputs):
    """``value`` with its arrays (nested in lists, tuples and dicts too) made the trace's inputs."""
    if isinstance(value, Traced):
        raise TypeError(f"input {name} is a traced value; trace a function of plain arrays")
    if _is_array(value):
        traced = tracer.new_value(value, _unique(name, tracer.types))
        inputs.append(Value(traced.name, traced.dtype, traced.shape))
        return traced
    if isinstance(value, (list, tuple)):
        return type(value)(_as_input(v, f"{name}[{i}]", tracer, inputs) for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _as_input(v, f"{name}.{k}", tracer, inputs) for k, v in value.items()}
    return value


def trace(fn, *example_inputs, **example_kwargs):
    """Run ``fn(*example_inputs, **example_kwargs)`` once and return the :class:`Graph` of what it
    computes (SPEC §6). Arrays among the inputs (nested in lists, tuples and dicts too) are the
    graph's inputs; other input values are fixed at their example values."""
    from .graph import Graph
    if not callable(fn):
        raise TypeError(f"fn={fn!r} is not callable")
    tracer = Tracer(fn)
    names = _input_names(fn, example_inputs, example_kwargs)
    inputs: list[Value] = []

    traced_args = [_as_input(v, names[i], tracer, inputs) for i, v in enumerate(example_inputs)]
    traced_kwargs = {k: _as_input(v, k, tracer, inputs) for k, v in example_kwargs.items()}
    if not inputs:
        raise ValueError("trace() needs at least one array among the example inputs")

    def template(value):
        return map_arrays(value, lambda t: Ref(t.name), _is_traced)
    input_structure = (tuple(template(a) for a in traced_args), {k: template(v) for k, v in traced_kwargs.items()})
    token = trace_hook.current.set(tracer)
    trace_hook.active += 1
    try:
        result = fn(*traced_args, **traced_kwargs)
    finally:
        trace_hook.active -= 1
        trace_hook.current.reset(token)
    output_structure = tracer._template(result)
    return Graph(inputs=inputs, input_structure=input_structure, input_names=names[:len(example_inputs)],
                 nodes=tracer.nodes, constants=tracer.constants, output_structure=output_structure,
                 types=tracer.types, fn_name=getattr(fn, "__name__", "graph"))


def _unique(name: str, taken) -> str:
    name = "".join(c if c.isalnum() or c in "_.[]" else "_" for c in name) or "input"
    return unique(name, set(taken), "'")


def _input_names(fn, args, kwargs) -> list:
    """The parameter name of each positional example input (``arg0``... where unknown)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(len(args)):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[min(i, len(params) - 1)].kind == params[0].VAR_POSITIONAL:
            names.append(f"{params[min(i, len(params) - 1)].name}[{i}]")
        else:
            names.append(f"arg{i}")
    return names
