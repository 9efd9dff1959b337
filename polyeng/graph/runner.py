"""Running a graph: every node through the very plan a direct op call runs.

The first run of a graph for a given signature of its inputs (dtypes, shapes, strides, device)
and given scopes (engine, fp math mode, registry) validates each node's arguments and takes its
bound plan from dispatch (``dispatch.plan_for``), exactly as a direct op call does, and executes
it. When validation returned the very arrays it was given, the node keeps that bound plan, and
later runs with the same signature execute it directly: no validation, no plan look-up. An op's
result signature follows from its arguments' signatures, so every value an op makes is the same
on every run of the plan; a host op's may follow from values too (ConstantOfShape of an input's
contents), so a planned run checks each host result against the planned one and plans the rest
of the run again where it differs. A node that got one object in two argument slots is not
planned (a later run may give it two). Conversion under fp math, transfers, the result check, verbose records and fallback are
the bound plan's (``BoundPlan.execute``): the runner keeps no copy of them.

Host ops (a graph's ``np.*`` and an imported model's ``onnx.*`` nodes) are ops of the catalogue
that run on the host: their function is called as it is.

Every run drops its reference to an intermediate value after the last node that reads it
(``Program.released``), so a run holds only the values still to be read. ``graph.explain`` is
the same walk with an observer that asks the selector for each node's decision.
"""
from __future__ import annotations

import contextvars
import threading
import time


from ..engine import dispatch, memory, mixed_precision, verbose
from ..engine.errors import warn_once
from ..engine import fpmath
from ..engine.call import map_arrays
from ..engine.plan_cache import _Uncacheable, _signature
from ..engine.plugins import registry
from ..engine.settings import current_scope
from ..ops.catalogue import lookup as op_spec
from . import segments
from .ir import Ref, by_output_index, contains_ref, fill, leaves

MAX_PLANS = 64


class _Step:
    """A node compiled against the graph's value slots."""

    __slots__ = ("node", "spec", "host", "fixed", "simple", "nested", "out_slots", "out", "batch_relative",
                 "rows", "single", "lists")

    def __init__(self, node, slot):
        self.node = node
        self.spec = op_spec(node.op, "node op")
        self.host = self.spec.function if self.spec.host else None   # called as it is
        self.fixed, self.simple, self.nested = _split(node.args, slot)
        # the nested arguments as read on each run: a list of slots only (a concat's tensors, a host
        # program's values) by index, any other template by a walk
        self.lists = [(name, [v.index for v in template] if type(template) is list and all(
            type(v) is _Slot for v in template) else None, template) for name, template in self.nested]
        self.out_slots = [slot[name] for name in node.outputs]
        self.out = node.out
        # the slot of the node's one result (most nodes), else None: results stored by ``store``
        self.single = self.out_slots[0] if len(self.out_slots) == 1 and self.out == 0 else None
        self.batch_relative = bool(node.meta.get("batch_relative"))
        self.rows = node.meta.get("rows")

    def kwargs(self, env) -> dict:
        kwargs = dict(self.fixed)
        for name, s in self.simple:
            kwargs[name] = env[s]
        for name, indices, template in self.lists:
            kwargs[name] = [env[i] for i in indices] if indices is not None else map_arrays(
                template, lambda slot: env[slot.index], _is_slot)
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
        for index, value in by_output_index(self.out, result):
            env[self.out_slots[index]] = value


class _Planned:
    """A node's bound plan (its ``execute``) with its arguments as value slots, for runs with the
    signature it was planned for (validation returned the node's values unchanged, so it is
    skipped). ``Program._walk`` executes it."""

    __slots__ = ("execute", "fixed", "simple", "nested")

    def __init__(self, plan, args: dict, slot_of_id: dict, fixed_names):
        self.execute = plan.execute
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


class _SelectorPlan:
    """The selector's plan of a node that a oneDNN program holds, decided when a run first needs
    it (the program declined the run, or a verbose run executes the nodes one by one): then it
    replaces itself as ``entry``'s execute. That run has the planned run's signature, fp math
    mode and scope, which the graph's plan key holds. Two threads may both decide it: the
    decision cache gives them the same plan."""

    __slots__ = ("entry", "spec", "registry")

    def __init__(self, entry: _Planned, spec, reg):
        self.entry, self.spec, self.registry = entry, spec, reg

    def execute(self, args, quiet=False, level=None):
        plan = dispatch.plan_for(self.spec, args, self.registry)
        self.entry.execute = plan.execute
        return plan.execute(args, quiet, level)


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
        self.segment_spans: list = []      # (first, stop) of the runs of nodes the last plan made programs of
        self.programs_ran: list = []       # (first, stop) of the programs the last profiled run ran
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

    def run(self, inputs: list, observe=None, times=None) -> list:
        """The value environment after running every node on ``inputs`` (in graph.inputs order).
        ``observe(step, kwargs)`` is called before each node runs (``graph.explain``); ``times``, a
        list of one float per step, has each node's seconds added to it (``graph.profile``)."""
        return contextvars.copy_context().run(self._run, inputs, observe, times)

    def _run(self, inputs, observe, times=None):
        memory.keep_freed_memory()   # once per process: the next run reuses this run's pages
        dispatch.ignore_fp_errors()   # once for every node of the run, in this run's own context
        reg = registry()
        engine = _device_engine(inputs, reg)
        env = self.environment(inputs, self._device_constants(engine, reg) if engine else self.constants)
        key = self._key(inputs, reg, engine) if observe is None else None
        entries = self.plans.get(key) if key is not None else None
        ran = [] if times is not None else None   # (first, stop) of the programs this run ran, for a profile
        if times is not None:
            self.programs_ran = ran
        if entries is not None:
            try:
                self._walk(env, entries, reg, None, times=times, ran=ran)
                return env
            except _Diverged as diverged:   # a host op's result differs from the planned one's: plan the rest
                i = diverged.index
                for s in self.released[i]:
                    env[s] = None
                entries = entries[:i] + [_HostResult(diverged.signature)] + [_FIRST] * (len(self.steps) - i - 1)
                self._walk(env, entries, reg, None, start=i + 1, times=times, ran=ran)
        else:
            entries = [_FIRST] * len(self.steps)
            recorded = {} if key is not None and segments.wanted(self, engine) else None
            self._walk(env, entries, reg, observe, times=times, recorded=recorded)
            if recorded:
                self._segments(entries, recorded)
        if key is not None:
            with self._lock:
                if len(self.plans) >= MAX_PLANS:
                    self.plans.clear()
                self.plans[key] = entries
        return env

    def _segments(self, entries, recorded):
        """Runs of nodes of this plan that run as one oneDNN program (``segments.py``)."""
        dead = {slot for slots in self.released for slot in slots}
        kept = {slot for step in self.steps for slot in step.out_slots if slot not in dead}   # the outputs
        try:
            spans = segments.plan(self, entries, recorded, kept)
        except Exception as exc:   # the nodes run one by one, as planned
            warn_once(("segments", type(exc).__name__, str(exc)),
                      RuntimeWarning(f"graph: no oneDNN programs for this graph ({type(exc).__name__}: {exc})"),
                      stacklevel=2)
            return
        if spans:
            self.segment_spans = spans

    def _walk(self, env, entries, reg, observe, start: int = 0, times=None, recorded=None, ran=None):
        """Run every node from ``start`` in order: a planned node through its bound plan, a host op
        by calling it, any other node the ordinary way. A first run (entries ``_FIRST``) fills in
        each node's entry for the next run with this signature. A host op's result is the one value
        whose shape may follow from the inputs' values (ConstantOfShape of an input's contents), so
        a planned run checks it against the planned one's and raises ``_Diverged`` on a difference."""
        level = verbose.level()   # read once a run: no node changes it
        steps, released = self.steps, self.released
        clock = time.perf_counter if times is not None else None
        segment = segments.Segment
        i, count = start - 1, len(steps)
        while True:
            i += 1
            if i >= count:
                break
            if clock is not None:
                began = clock()
            step, entry = steps[i], entries[i]
            if type(entry) is segment:   # a run of nodes as one oneDNN program
                if not level and entry.run(env):
                    for s in entry.released:
                        env[s] = None
                    if clock is not None:
                        times[i] += clock() - began
                        ran.append((i, entry.stop))
                    i = entry.stop - 1
                    continue
                entry = entry.original   # the nodes one by one
            if type(entry) is _Planned:   # planned: its bound plan, no validation
                result = entry.execute(_arguments(entry.fixed, entry.simple, entry.nested, env), True, level)
                if step.single is not None:
                    env[step.single] = result
                else:
                    step.store(result, env)
            else:
                kwargs = step.kwargs(env)
                if observe is not None:
                    observe(step, kwargs)
                if step.host is not None:
                    result = step.host(**kwargs)
                    step.store(result, env)
                    if entry is not None:
                        signature = _result_signature(result)
                        if entry is _FIRST:
                            entries[i] = _HostResult(signature)
                            if recorded is not None:   # a view or shape arithmetic a oneDNN program may hold
                                found = segments.host_facts(step, kwargs, env)
                                if found is not None:
                                    recorded[i] = found
                        elif entry.signature != signature:
                            raise _Diverged(i, signature)
                elif entry is _FIRST:
                    entries[i] = self._plan_and_run(step, kwargs, env, reg, level, recorded, i)
                else:
                    step.store(dispatch.run(step.spec, **kwargs), env)
            for s in released[i]:
                env[s] = None
            if clock is not None:
                times[i] += clock() - began

    def _plan_and_run(self, step, kwargs, env, reg, level, recorded=None, index=None):
        """Run a node the ordinary way (validate, plan, execute) and return its planned entry, or
        None when later runs must validate again (validation made new arrays, or the plan is not
        one the decision cache keeps).

        A node a oneDNN program may hold runs on ONEDNN or BASIC (``segments.first_run_plan``),
        and the selector decides its own plan only when a run first needs it (the program
        declined): probing an engine loads its library, numba's about 0.25 s and 64 MB, for a
        plan the program's runs never use."""
        spec = step.spec
        args = spec.validate(**kwargs)
        waits = recorded is not None and segments.selector_may_wait(reg)
        plan = segments.first_run_plan(spec, args, reg) if waits else dispatch.plan_for(spec, args, reg)
        as_given = False   # validation returned the node's own values, each from one slot
        if plan.cached or recorded is not None:
            slot_of_id, aliased = {}, False
            slots = [s for _, s in step.simple] + [slot.index for _, template in step.nested
                                                   for slot in leaves(template, _is_slot)]
            for s in slots:   # one object in two slots: a later run may give two, which one slot cannot tell
                aliased |= slot_of_id.setdefault(id(env[s]), s) != s
            as_given = not aliased and _arrays_are_inputs(args, slot_of_id, step.fixed)
        # a oneDNN program may hold it (a cast's plan is not kept)
        found = segments.facts(step, args, plan) if recorded is not None and as_given else None
        if found is not None:
            recorded[index] = found
        first = plan
        if waits and found is None:   # the node runs on its own: the selector's plan, now
            plan = first = dispatch.plan_for(spec, args, reg)
        elif found is not None and not waits:
            first = segments.first_run_plan(spec, args, reg, plan)
        entry = None
        if as_given and plan.cached:
            entry = _Planned(plan, args, slot_of_id, step.fixed)
            if waits:
                entry.execute = _SelectorPlan(entry, spec, reg).execute
        step.store(first.execute(args, True, level), env)
        return entry

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


_FIRST = object()   # a node not planned yet for this signature


class _HostResult:
    """A host op's entry in a plan: the signature (dtype, shape, strides) its result had."""
    __slots__ = ("signature",)

    def __init__(self, signature):
        self.signature = signature


class _Diverged(Exception):
    """A planned run met a host op whose result differs from the planned one's (at ``index``)."""

    def __init__(self, index: int, signature):
        self.index, self.signature = index, signature


_UNKNOWN = object()   # a result with no signature to compare: never equal, so never trusted


def _result_signature(result):
    try:
        return _signature(result)
    except _Uncacheable:
        return _UNKNOWN


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
