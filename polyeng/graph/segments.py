"""Runs of convolution-network nodes that a planned graph run executes as one oneDNN program
(``backends/onednn/segment.py``): the values between them stay in oneDNN's blocked layouts, in
buffers made once per planned signature, and each node costs one primitive execution.

The runner's first run of a signature records, for each node, the op, its validated arguments'
facts and its result's shape (``facts``). ``plan`` then finds each run of at least
``MIN_NODES`` consecutive nodes that a program can hold (convolutions with constant weights,
activations, pooling, add and mul, the spatial mean, channel concat and a mixed precision
graph's casts between f32 and bf16, all 4-D f32 or bf16, on polyeng's built-in engines) and builds its program; a node the program turns down ends
the run there and the search goes on after it. The planned entries keep every node's own plan,
and a run falls back to them, node by node, whenever the program does not take it: a value that
may leave the finite range (see the backend module), an input of another layout, another thread
running the same program, or a verbose level above 0.

Programs are made only where the run's scopes leave the choice to polyeng: no engine asked for
but ``onednn`` (``compute_eng``), host arrays, ONEDNN available, and the nodes marked by the
fusion ``onednn_programs``. Under an fp math mode other than strict the convolutions (ALLOW ops)
carry the mode's fpmath attribute, as ONEDNN's own convolution kernel does (``_fpmath.compute``).
"""
from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from ..engine.settings import current_scope
from .ir import leaves

NAME = "onednn_programs"
MIN_NODES = 3
ENGINES = frozenset({"basic", "numba", "onednn", "opencl"})
F32 = np.dtype(np.float32)
TYPES = (F32, np.dtype(ml_dtypes.bfloat16))   # a mixed precision graph's bf16 values too


# the ops a program may hold (``backends/onednn/segment.py``'s, without importing the engine here)
OPS = frozenset({"conv2d", "fused_conv", "max_pool2d", "avg_pool2d", "add", "mul", "mean", "concat", "relu",
                 "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu", "leaky_relu", "clip"})


def mark(nodes, context):
    """The graph fusion ``onednn_programs``: nodes a program may hold (f32 results of its ops) are
    marked (``meta["onednn_programs"]``); the runner groups them when it plans (the fusion turned
    off, none is marked)."""
    out, changed = [], False
    for node in nodes:
        if node.op in OPS and len(node.outputs) == 1 and node.types and np.dtype(node.types[0][0]) == F32 \
                and not node.meta.get(NAME):
            node = dataclasses.replace(node, meta={**node.meta, NAME: True})
            changed = True
        out.append(node)
    return out if changed else nodes


def wanted(program, engine) -> bool:
    """Whether a first run should record facts for programs: the scopes allow them and the graph
    has nodes they could hold."""
    if engine is not None:
        return False
    if current_scope().engine not in ("recommend", "onednn"):
        return False
    if sum(bool(step.node.meta.get(NAME)) for step in program.steps) < MIN_NODES:
        return False
    from ..engine.plugins import registry
    record = registry().engines.get("onednn")
    return record is not None and record.status()[0]


def _is_slot(value) -> bool:
    from .runner import _is_slot as is_slot   # the runner imports this module
    return is_slot(value)


def facts(step, args, plan):
    """What ``plan`` needs of one node's first run, or None where no program can hold it."""
    op = step.spec.name
    if op == "cast":   # a mixed precision graph's casts between f32 and bf16 (not marked: made after fusing)
        pair = (np.dtype(args["x"].dtype), np.dtype(args["dtype"]))
        if pair not in ((F32, TYPES[1]), (TYPES[1], F32)) or args["x"].ndim != 4:
            return None
    elif not step.node.meta.get(NAME):
        return None
    if step.single is None or plan.decision.engine not in ENGINES:
        return None
    if step.batch_relative or step.rows is not None:
        return None
    reads = {}
    for name, slot in step.simple:
        reads[name] = slot
    for name, template in step.nested:
        slots = [s.index for s in leaves(template, _is_slot)]
        if not isinstance(args.get(name), (list, tuple)) or len(slots) != len(args[name]):
            return None
        reads[name] = slots
    for name, value in args.items():
        arrays = value if isinstance(value, (list, tuple)) else [value]
        for a in arrays:
            if isinstance(a, np.ndarray) and a.dtype not in TYPES:
                return None
    if np.dtype(plan.prepared.dtype) not in TYPES:
        return None
    shapes = {}
    for name, slot in step.simple:
        if not isinstance(args.get(name), np.ndarray):
            return None
        shapes[slot] = (tuple(args[name].shape), args[name].dtype)
    for name, template in step.nested:
        for slot, a in zip(reads[name], args[name]):
            if not isinstance(a, np.ndarray):
                return None
            shapes[slot] = (tuple(a.shape), a.dtype)
    if any(0 in shape for shape, _ in shapes.values()) or 0 in plan.prepared.shape:
        return None   # nothing to compute: the nodes' own kernels return at once
    attrs = {k: v for k, v in args.items() if k not in reads}
    return (op, reads, attrs, tuple(plan.prepared.shape), plan.prepared, shapes, np.dtype(plan.prepared.dtype))


class Segment:
    """A planned entry: nodes ``first`` to ``stop - 1`` run as one oneDNN program."""
    __slots__ = ("program", "first", "stop", "inputs", "outputs", "shapes", "original")

    def __init__(self, program, first, stop, inputs, outputs, shapes, original):
        self.program, self.first, self.stop = program, first, stop
        self.inputs, self.outputs, self.shapes, self.original = inputs, outputs, shapes, original

    def run(self, env):
        """Runs the program on this run's values (True), or leaves them for the nodes (False)."""
        arrays = []
        for slot, (shape, dtype) in zip(self.inputs, self.shapes):
            a = env[slot]
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
                return False
            arrays.append(a)
        results = self.program.run(arrays)
        if results is None:
            return False
        for slot, value in zip(self.outputs, results):
            env[slot] = value
        return True


def plan(program, entries, recorded, kept) -> list:
    """Replace, in ``entries`` (a planned run's, by step), the first entry of each run of nodes a
    program holds with its ``Segment``; ``recorded``: step index -> ``facts``; ``kept``: the slots
    of graph outputs. Returns the (first, stop) of each."""
    from ..backends.onednn import segment
    n = len(program.steps)
    readers = {}
    for i, step in enumerate(program.steps):
        for _, s in step.simple:
            readers.setdefault(s, []).append(i)
        for _, template in step.nested:
            for found in leaves(template, _is_slot):
                readers.setdefault(found.index, []).append(i)
    constants = {s: a for s, a in program.constants}
    spans = []
    eligible = [recorded.get(i) is not None for i in range(n)]
    i = 0
    while i < n:
        if not eligible[i]:
            i += 1
            continue
        stop = i
        while stop < n and eligible[stop]:
            stop += 1
        if stop - i < MIN_NODES:
            i = stop
            continue
        built = _build(segment, program, recorded, readers, constants, kept, i, stop)
        if isinstance(built, int):   # the node at that index does not fit: end the run before it
            eligible[built] = False
            continue
        if built is not None:
            program_, inputs, outputs, shapes = built
            entries[i] = Segment(program_, i, stop, inputs, outputs, shapes, entries[i])
            spans.append((i, stop))
        i = stop
    return spans


def _build(segment, program, recorded, readers, constants, kept, first, stop):
    """(program, input slots, output slots, input shapes), the index of a node that does not fit,
    or None."""
    steps, made, shapes = [], set(), {}
    for i in range(first, stop):
        op, reads, attrs, shape, prepared, read_shapes, dtype = recorded[i]
        out = program.steps[i].single
        steps.append(segment.Step(op, reads, attrs, out, shape, prepared, dtype))
        shapes.update(read_shapes)
        made.add(out)
    inputs = []
    for s in steps:
        for value in s.reads.values():
            for slot in (value if isinstance(value, list) else [value]):
                if slot not in made and slot not in constants and slot not in inputs:
                    inputs.append(slot)
    outputs = [s.out for s in steps if s.out in kept or any(r >= stop for r in readers.get(s.out, ()))]
    if not outputs:
        return None
    from ..backends.onednn import _fpmath, lanes
    compute, dtypes = _fpmath.compute(), {s: shapes[s][1] for s in inputs}
    try:
        built = segment.Program(steps, inputs, outputs, constants, {s: shapes[s][0] for s in inputs}, compute, dtypes)
    except segment.Unsupported as exc:
        return first + exc.index if exc.index is not None else None
    batch = {shapes[s][0][0] for s in inputs}
    n = min(batch) if len(batch) == 1 else 1   # the batch lanes may split: every input's first dim

    def lane(size):
        return segment.Program(lanes.lane_steps(steps, n, size), inputs, outputs, constants,
                               {s: (size,) + tuple(shapes[s][0][1:]) for s in inputs}, compute, dtypes)
    built = lanes.Lanes(built, lane, max(n, 1))
    return built, inputs, outputs, [shapes[s] for s in inputs]
