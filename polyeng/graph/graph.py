"""``Graph``: a traced function that can be called, inspected, explained, converted and saved."""
from __future__ import annotations

import sys

import numpy as np

from ..engine import dtypes as dt
from ..engine import array_handlers
from ..engine.plugins import registry
from .ir import Ref, Value, fill, ref_names


class Graph:
    """A function recorded as nodes of polyeng ops (see ``polyeng.graph.trace``).

    ``graph(*inputs)`` runs it and returns the structure ``fn`` returned. Inputs must have the
    example's dtypes and shapes, except the leading (batch) dimension, which may differ. A graph
    whose input shapes name their dims (an imported model: ``("batch", "seq", 128)``) takes any
    size for a named or unknown (None) dim, the same size wherever a name repeats, and exactly
    the given size for an int dim; ``leading_free=False`` turns the leading-dimension rule off.
    """

    def __init__(self, *, inputs, input_structure, input_names, nodes, constants, output_structure, types,
                 fn_name="graph", leading_free=True):
        self._inputs = list(inputs)
        self._input_structure = input_structure     # (args template, kwargs template) with Refs
        self._input_names = list(input_names)
        self._nodes = list(nodes)
        self._constants = dict(constants)
        self._output_structure = output_structure
        self._types = dict(types)                   # value name -> (dtype, shape)
        self.name = fn_name
        self.leading_free = bool(leading_free)
        self._program = None

    # --- what it is ------------------------------------------------------------------------------
    @property
    def inputs(self) -> list:
        return list(self._inputs)

    @property
    def outputs(self) -> list:
        return [Value(name, *self._types[name]) for name in ref_names(self._output_structure)]

    @property
    def input_names(self) -> list:
        """The names a call may give its inputs by: the positional ones in order (an imported
        model's input names, a traced function's parameter names), then the keyword ones."""
        return list(self._input_names) + list(self._input_structure[1])

    @property
    def output_names(self) -> list:
        """Each output value's name, in the order ``outputs`` lists them."""
        return list(ref_names(self._output_structure))

    @property
    def nodes(self) -> list:
        return list(self._nodes)

    @property
    def constants(self) -> dict:
        return dict(self._constants)

    def __repr__(self) -> str:
        return (f"<Graph {self.name}: {len(self._inputs)} inputs, {len(self._nodes)} nodes, "
                f"{len(self._constants)} constants>")

    def __str__(self) -> str:
        from .printing import table
        return table(self)

    # --- running ---------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        for library in array_handlers.LIBRARIES:   # dask arrays: lazily, one task per batch chunk
            if library in sys.modules:
                handler = array_handlers.handler_for(list(args) + list(kwargs.values()), depth=None)
                if handler is not None:
                    return handler.run_graph(self, args, kwargs)
                break
        values = self._bind(args, kwargs)
        program = self._compiled()
        env = program.run(values)
        slot = program.slot
        owned = [v for v in values if type(v) is np.ndarray]   # what the caller holds, and each output

        def output(name):
            if name in self._constants:
                return self._constants[name].copy()
            value = env[slot[name]]
            if type(value) is np.ndarray:
                # an input itself, or a view of it (a Reshape, an Identity), or an output given twice
                # or seen through another shape: its own copy, as a model's outputs are the caller's
                if any(np.may_share_memory(value, other) for other in owned):
                    value = value.copy()
                owned.append(value)
            return value
        return fill(self._output_structure, output)

    def _run_flat(self, values) -> list:
        """The computed (non-constant) outputs, in output order, for input arrays in ``inputs``
        order (what a dask worker runs on one batch chunk)."""
        found = {}
        values = [self._checked_input(v.name, value, v.name, found) for v, value in zip(self._inputs, values)]
        program = self._compiled()
        env = program.run(values)
        return [env[program.slot[name]] for name in ref_names(self._output_structure) if name not in self._constants]

    # --- pickling: the graph itself; what runs it is made again where it is unpickled ------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_program"] = None
        state.pop("_scattered", None)
        return state

    def __sizeof__(self) -> int:   # what dask's scheduler books for it: the constants dominate
        return object.__sizeof__(self) + sum(int(c.nbytes) for c in self._constants.values())

    def __dask_tokenize__(self):
        token = self.__dict__.get("_token")
        if token is None:   # a graph is not changed after it is made: one token per object
            import uuid
            token = self.__dict__["_token"] = uuid.uuid4().hex
        return ("polyeng-graph", token)

    def explain(self, *args, **kwargs):
        """Each node's decision for these inputs (nodes run, one by one, to give the next their inputs)."""
        from .explain import explain_graph
        return explain_graph(self, self._bind(args, kwargs))

    def profile(self, *args, repeat: int = 10, **kwargs):
        """Where a run on these inputs spends its time, per node and per op type (a ``Profile``;
        ``print`` it): one planning run, then ``repeat`` timed runs, medians per node."""
        from .profile import profile_graph
        return profile_graph(self, self._bind(args, kwargs), repeat)

    def _compiled(self):
        if self._program is None:
            from .runner import Program
            self._program = Program(self)
        return self._program

    def _bind(self, args, kwargs) -> list:
        """The call's input arrays in ``inputs`` order. Inputs go by position or by name (as a Python
        call binds its parameters); TypeError naming an input given twice, unknown or missing,
        ValueError naming an input that differs from the example in anything but its leading
        dimension."""
        arg_template, kwarg_template = self._input_structure
        names = self._input_names
        if len(args) > len(arg_template):
            raise TypeError(f"{self.name}() takes {len(arg_template)} positional inputs "
                            f"({', '.join(names)}); got {len(args)}")
        kwargs = dict(kwargs)
        for name in names[:len(args)]:
            if name in kwargs and name not in kwarg_template:
                raise TypeError(f"{self.name}() got input {name!r} both by position and by name")
        positional, missing = list(args), []
        for name in names[len(args):]:
            if name in kwargs and name not in kwarg_template:
                positional.append(kwargs.pop(name))
            else:
                missing.append(name)
        unknown = sorted(set(kwargs) - set(kwarg_template))
        if unknown:
            raise TypeError(f"{self.name}() got unknown input{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(map(repr, unknown))}; its inputs are {', '.join(self.input_names)}")
        missing += [name for name in kwarg_template if name not in kwargs]
        if missing:
            raise TypeError(f"{self.name}() is missing input{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(map(repr, missing))} (its inputs are {', '.join(self.input_names)}; "
                            f"give them by position or by name)")
        found = {}
        for i, (template, value) in enumerate(zip(arg_template, positional)):
            self._match(template, value, names[i], found)
        for name, template in kwarg_template.items():
            self._match(template, kwargs[name], name, found)
        return [found[v.name] for v in self._inputs]

    def _match(self, template, value, where, found):
        if type(template) is Ref:
            found[template.name] = self._checked_input(template.name, value, where, found)
        elif isinstance(template, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(template):
                raise ValueError(f"input {where}: expected a {type(template).__name__} of {len(template)} items")
            for i, (t, v) in enumerate(zip(template, value)):
                self._match(t, v, f"{where}[{i}]", found)
        elif isinstance(template, dict):
            if not isinstance(value, dict) or set(value) != set(template):
                raise ValueError(f"input {where}: expected a dict with keys {sorted(template)}")
            for k, t in template.items():
                self._match(t, value[k], f"{where}.{k}", found)
        elif not _same(template, value):
            raise ValueError(f"input {where}={value!r}: the graph takes {template!r} there, a fixed value")

    def _checked_input(self, name, value, where, found):
        dtype, shape = self._types[name]
        if not (isinstance(value, np.ndarray) or isinstance(value, registry().native_types() or ())):
            value = np.asarray(value)
        got_dtype, got_shape = np.dtype(value.dtype), tuple(value.shape)
        if got_dtype != dtype:
            raise ValueError(f"input {where} has dtype {got_dtype.name}; the graph takes {dt.short_name(dtype)} "
                             f"(convert it with .astype)")
        if all(type(d) is int for d in shape):
            free = 1 if self.leading_free else 0
            if len(got_shape) != len(shape) or got_shape[free:] != shape[free:]:
                rule = "only the leading dimension may differ" if free else "it takes exactly this shape"
                raise ValueError(f"input {where} has shape {got_shape}; the graph takes {shape} ({rule})")
            return value
        if len(got_shape) != len(shape):
            raise ValueError(f"input {where} has shape {got_shape}: {len(got_shape)} dims where the graph "
                             f"takes {len(shape)} {_dims_text(shape)}")
        for axis, (want, got) in enumerate(zip(shape, got_shape)):
            if type(want) is int and want != got:
                raise ValueError(f"input {where} has shape {got_shape}: dim {axis} is {got} where the graph "
                                 f"takes {want} {_dims_text(shape)}")
            if type(want) is str:
                size, first = found.setdefault(("dim", want), (got, where))   # a named dim's size this call
                if size != got:
                    raise ValueError(f"input {where} has shape {got_shape}: dim {axis} ({want}) is {got}, but "
                                     f"{want} is {size} in input {first}")
        return value

    # --- saving ----------------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the graph with its constants to ``path`` (see ``polyeng.graph.load``)."""
        from .serialize import save
        save(self, path)


def _dims_text(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b
