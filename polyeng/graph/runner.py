"""Running a graph: every node through the selector, with a plan per input signature.

The first run of a graph for a given signature of its inputs (dtypes, shapes, strides, device)
and given scopes (engine, fp math mode, registry) validates each node's arguments and asks the
selector for its plan, exactly as a direct op call does. When the chosen kernel can take the
validated arguments as they are (no conversion, no transfer, validation returned the very
arrays it was given), the node's kernel, prepared facts and validated attributes are kept,
and later runs with the same signature call the kernel directly: no validation, no plan look-up.
Every intermediate value's signature follows from the inputs', so it is the same on every run
of the plan. A kernel that fails falls back through the ordinary op call (``FallbackWarning``,
``EngineError``), and the plan is dropped so the next run plans again.

Every run drops its reference to an intermediate value after the last node that reads it
(``Program.released``), so a run holds only the values still to be read.

Verbose runs, runs under a user mixed precision rule and runs with device tensors of another
engine than the chosen kernel's take the ordinary op call for every node.
"""
from __future__ import annotations

import contextvars
import threading

import numpy as np

from ..engine import dispatch, mixed_precision, verbose
from ..engine import fpmath
from ..engine.call import map_arrays, op_spec
from ..engine.plan_cache import _Uncacheable, _signature
from ..engine.plugins import registry
from ..engine.settings import current_scope
from .ir import Ref, contains_ref, fill, leaves
from .numpy_nodes import RUN as NUMPY_RUN

MAX_PLANS = 64


class _Step:
    """A node compiled against the graph's value slots."""

    __slots__ = ("node", "spec", "numpy", "fixed", "simple", "nested", "out_slots", "out", "batch_relative",
                 "rows")

    def __init__(self, node, slot):
        self.node = node
        self.numpy = NUMPY_RUN.get(node.op)
        self.spec = None if self.numpy else op_spec(node.op, "node op")
        self.fixed, self.simple, self.nested = _split(node.args, slot)
        self.out_slots = [slot[name] for name in node.outputs]
        self.out = node.out
        self.batch_relative = bool(node.meta.get("batch_relative"))
        self.rows = node.meta.get("rows")

    def kwargs(self, env) -> dict:
        kwargs = _arguments(self.fixed, self.simple, self.nested, env)
        if self.batch_relative:
            shape = kwargs["shape"]
            rest = tuple(shape[1:]) if isinstance(shape, (tuple, list)) else ()
            kwargs["shape"] = (kwargs["x"].shape[0],) + rest
        if self.rows is not None and kwargs["x"].shape[0] != self.rows:
            from .printing import key_text
            raise ValueError(f"node {self.node.name} ({self.node.op} {key_text(kwargs['key'])}) slices the leading "
                             f"dimension with bounds fixed when the graph was traced on {self.rows} rows; this "
                             f"input has {kwargs['x'].shape[0]} (trace again at this batch size, or index within "
                             f"each item)")
        return kwargs

    def store(self, result, env) -> None:
        if len(self.out_slots) == 1 and self.out == 0:
            env[self.out_slots[0]] = result
            return
        leaves = []

        def collect(index, value):
            if isinstance(index, int) and not isinstance(index, bool):
                leaves.append((index, value))
            elif isinstance(index, (list, tuple)):
                for i, v in zip(index, value):
                    collect(i, v)
        collect(self.out, result)
        for index, value in leaves:
            env[self.out_slots[index]] = value


class _Fast:
    """A node's kernel with what it needs, for calls with the signature it was planned for."""

    __slots__ = ("fn", "prepared", "takes_prepared", "fixed", "simple", "nested", "dtype", "shape")

    def __init__(self, kernel, prepared, args: dict, slot_of_id: dict, fixed_names):
        self.fn, self.prepared, self.takes_prepared = kernel.fn, prepared, kernel.prepared
        self.dtype, self.shape = prepared.dtype, prepared.shape
        self.fixed, self.simple, self.nested = {}, [], []
        for name, value in args.items():
            if name in fixed_names:   # made from attributes only: the same on every run
                self.fixed[name] = value
                continue
            template = _slotted(value, slot_of_id)
            if type(template) is _Slot:
                self.simple.append((name, template.index))
            elif leaves(template, _is_slot):
                self.nested.append((name, template))
            else:
                self.fixed[name] = value

    def __call__(self, env):
        kwargs = _arguments(self.fixed, self.simple, self.nested, env)
        result = self.fn(self.prepared, **kwargs) if self.takes_prepared else self.fn(**kwargs)
        if type(result) is not np.ndarray or result.dtype != self.dtype or result.shape != self.shape:
            result = dispatch._checked_result(result, self.prepared)
        return result


class Program:
    """A graph compiled to value slots, with its plans by input signature."""

    def __init__(self, graph):
        names = [v.name for v in graph.inputs] + list(graph.constants)
        for node in graph.nodes:
            names.extend(node.outputs)
        self.slot = {name: i for i, name in enumerate(names)}
        self.size = len(names)
        self.input_slots = [self.slot[v.name] for v in graph.inputs]
        self.constants = [(self.slot[name], array) for name, array in graph.constants.items()]
        self.steps = [_Step(node, self.slot) for node in graph.nodes]
        self.released = _last_uses(self.steps, {self.slot[v.name] for v in graph.outputs})
        self.plans: dict = {}
        self.device_constants: dict = {}   # engine -> [(slot, device tensor)]
        self._lock = threading.Lock()

    # --- one run ---------------------------------------------------------------------------------
    def environment(self, inputs: list, constants: list) -> list:
        """The value slots before a run: the constants and the inputs filled in."""
        env = [None] * self.size
        for s, value in constants:
            env[s] = value
        for s, value in zip(self.input_slots, inputs):
            env[s] = value
        return env

    def run(self, inputs: list) -> list:
        """The value environment after running every node on ``inputs`` (in graph.inputs order)."""
        return contextvars.copy_context().run(self._run, inputs)

    def _run(self, inputs):
        dispatch_quiet()
        reg = registry()
        engine = _device_engine(inputs, reg)
        env = self.environment(inputs, self._device_constants(engine, reg) if engine else self.constants)
        key = self._key(inputs, reg, engine)
        plan = self.plans.get(key) if key is not None else None
        if plan is not None:
            return self._run_planned(plan, env, key)
        plan, slow_only = [], key is None or verbose.level() > 0
        for step, dead in zip(self.steps, self.released):
            plan.append(self._run_first(step, env, reg, slow_only))
            for s in dead:
                env[s] = None
        if not slow_only:
            with self._lock:
                if len(self.plans) >= MAX_PLANS:
                    self.plans.clear()
                self.plans[key] = plan
        return env

    def _run_planned(self, plan, env, key):
        for step, fast, dead in zip(self.steps, plan, self.released):
            if fast is None:
                step.store(self._slow(step, env), env)
            else:
                try:
                    result = fast(env)
                except MemoryError:
                    raise
                except Exception:   # the ordinary call falls back (or raises) as a direct call would
                    self.plans.pop(key, None)
                    result = self._slow(step, env)
                step.store(result, env)
            for s in dead:
                env[s] = None
        return env

    def _run_first(self, step, env, reg, slow_only):
        """Run a node the ordinary way and return its fast entry (None when it has none)."""
        kwargs = step.kwargs(env)
        if step.numpy is not None:
            step.store(step.numpy(**kwargs), env)
            return None
        if slow_only:
            step.store(dispatch.run(step.spec, **kwargs), env)
            return None
        args = step.spec.validate(**kwargs)
        plan = dispatch.plan_for(step.spec, args, reg)
        first = plan.first
        fast = None
        if not (first.to_host or first.convert):
            slot_of_id = {}
            for name, s in step.simple:
                slot_of_id.setdefault(id(env[s]), s)
            for name, template in step.nested:
                for slot in leaves(template, _is_slot):
                    slot_of_id.setdefault(id(env[slot.index]), slot.index)
            if _arrays_are_inputs(args, slot_of_id, step.fixed):
                fast = _Fast(first.kernel, plan.prepared, args, slot_of_id, step.fixed)
        if fast is None:
            step.store(dispatch.run(step.spec, **kwargs), env)
            return None
        try:
            step.store(fast(env), env)
        except MemoryError:
            raise
        except Exception:
            step.store(dispatch.run(step.spec, **kwargs), env)
            return None
        return fast

    def _slow(self, step, env):
        kwargs = step.kwargs(env)
        return step.numpy(**kwargs) if step.numpy is not None else dispatch.run(step.spec, **kwargs)

    # --- keys and devices ------------------------------------------------------------------------
    def _key(self, inputs, reg, engine):
        if mixed_precision.override.get() or any(mixed_precision.user_rules.values()):
            return None
        try:
            signature = tuple(_signature(v) for v in inputs)
        except _Uncacheable:
            return None
        return (signature, fpmath.get_fp_math_mode(), current_scope(), id(reg), engine)

    def _device_constants(self, engine, reg):
        found = self.device_constants.get(engine)
        if found is None:
            from ..engine.api import to_device
            found = []
            for s, array in self.constants:
                try:
                    found.append((s, to_device(array, engine)))
                except Exception:   # a dtype or size the device does not take stays on the host
                    found.append((s, array))
            self.device_constants[engine] = found
        return found


def _last_uses(steps, kept) -> list:
    """Per step, the slots of node results that no later step reads and that are not outputs
    (``kept``): a run lets go of them after that step, so a value's memory is free for the next
    ones as soon as it is dead, not when the whole graph has run."""
    last = {}
    for i, step in enumerate(steps):
        for slot in step.out_slots:   # a result nothing reads dies where it is made
            last[slot] = i
        for _, slot in step.simple:
            last[slot] = i
        for _, template in step.nested:
            for found in leaves(template, _is_slot):
                last[found.index] = i
    made = {slot for step in steps for slot in step.out_slots}
    released = [[] for _ in steps]
    for slot, i in last.items():
        if slot in made and slot not in kept:
            released[i].append(slot)
    return released


def dispatch_quiet():
    """numpy's floating-point warnings off for this run's context (IEEE results are the defined
    outcome, as in ``dispatch._call_quietly``)."""
    if dispatch._error_state is not None:
        dispatch._error_state.set(dispatch._IGNORE_ALL)
    else:
        np.seterr(all="ignore")


def _device_engine(inputs, reg):
    if not reg.native_types():
        return None
    for value in inputs:
        owner = reg.owner_of(value)
        if owner is not None:
            return owner.name
    return None


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _is_slot(value) -> bool:
    return type(value) is _Slot


def _is_tensor(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _split(args: dict, slot: dict):
    """A node's arguments as (attributes, [(name, slot)] for plain values, [(name, template with
    slots)] for values nested in lists and tuples)."""
    fixed, simple, nested = {}, [], []
    for name, value in args.items():
        if type(value) is Ref:
            simple.append((name, slot[value.name]))
        elif contains_ref(value):
            nested.append((name, fill(value, lambda n: _Slot(slot[n]))))
        else:
            fixed[name] = value
    return fixed, simple, nested


def _arguments(fixed: dict, simple: list, nested: list, env) -> dict:
    """Keyword arguments from a ``_split`` with the values of this run."""
    kwargs = dict(fixed)
    for name, s in simple:
        kwargs[name] = env[s]
    for name, template in nested:
        kwargs[name] = map_arrays(template, lambda slot: env[slot.index], _is_slot)
    return kwargs


def _slotted(value, slot_of_id):
    """A validated argument with the arrays it shares with the node's inputs as slots."""
    def slot_for(array):
        s = slot_of_id.get(id(array))
        return _Slot(s) if s is not None else array
    return map_arrays(value, slot_for, _is_tensor)


def _arrays_are_inputs(args: dict, slot_of_id: dict, fixed_names) -> bool:
    """Whether every array in the validated arguments made from the node's values is one of
    those values (not a copy or conversion validation made, which a fast call would have to make
    again). Arguments made from attributes only (a Python scalar turned into an array) are the
    same on every run."""
    return all(id(array) in slot_of_id for name, value in args.items() if name not in fixed_names
               for array in leaves(value, _is_tensor))
