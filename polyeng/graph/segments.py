"""Runs of a graph's nodes that a planned graph run executes as one oneDNN program
(``backends/onednn/segment.py``): the values between them stay in the layouts oneDNN's
primitives choose (blocked for convolutions, plain for a transformer's products), in buffers made
once per planned signature, and each node costs at most one primitive execution.

The runner's first run of a signature records, for each node, the op, its validated arguments'
facts and its result's shape (``facts``). ``plan`` then finds each run of at least
``MIN_NODES`` consecutive nodes that a program can hold and builds its program; a node the
program turns down ends the run there and the search goes on after it. A program holds:
convolutions with constant weights, activations, pooling, add and mul, the spatial mean and
concat (4-D f32 or bf16); a mixed precision graph's casts between f32 and bf16; a transformer's
linear, matmul, layer_norm, softmax, fused_softmax, gelu, reshape, permute_contiguous and split,
a div by a constant, an attention's select of its scores or a fill before a softmax, and
upsampling (``backends/onednn/segment_plain.py``); and two kinds of host nodes (``host_facts``): views
(reshape, squeeze, slice, index: their input's bytes, or a strided part of them), and host
programs of shape arithmetic, whose results are the same on every run of the signature (the
constants of the program). A view whose shape argument is made before the run is held where that
argument is checked, on each run, to be the one it was planned with (``Segment.checks``).

The planned entries keep every node's own plan, and a run falls back to them, node by node,
whenever the program does not take it: a value that may leave the finite range (see the backend
module), an input of another layout, a shape argument that changed, another thread running the
same program, or a verbose level above 0. A program's results are the nodes' within rounding (its
products and reductions round in their own order), and the same on every run that takes it.

Programs are made only where the run's scopes leave the choice to polyeng: no engine asked for
but ``onednn`` (``compute_eng``), host arrays, ONEDNN available, and the nodes marked by the
fusion ``onednn_programs``. Under an fp math mode other than strict the convolutions and products
(ALLOW ops) carry the mode's fpmath attribute, as ONEDNN's own kernels do (``_fpmath.compute``).
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
                 "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu", "leaky_relu", "clip",
                 # a transformer's (``backends/onednn/segment_plain.py``)
                 "linear", "matmul", "layer_norm", "softmax", "fused_softmax", "gelu", "reshape",
                 "permute_contiguous", "split", "div", "select", "upsample_nearest", "upsample_bilinear2d"})


def mark(nodes, context):
    """The graph fusion ``onednn_programs``: nodes a program may hold (f32 results of its ops) are
    marked (``meta["onednn_programs"]``); the runner groups them when it plans (the fusion turned
    off, none is marked)."""
    out, changed = [], False
    for node in nodes:
        if node.op in OPS and (len(node.outputs) == 1 or node.op == "split") and node.types \
                and all(np.dtype(t[0]) == F32 for t in node.types) and not node.meta.get(NAME):
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


# the engines a first run computes a node a program may hold on, the first that takes it
FIRST_RUN_ENGINES = ("onednn", "basic")


def first_run_plan(spec, args, reg, plan=None):
    """The plan a graph's first run computes a node that a program may hold with: ONEDNN's where
    it takes the node, else BASIC's (``plan``, the selector's, where it is one of them; else
    ``plan`` where neither takes it). The program computes the node on ONEDNN from the second run
    on, so the first run need not load another engine's kernels for it (numba's import and its
    first kernel's compiler set-up: about 0.6 s and 64 MB), and it rounds as the program does
    where it can. The rule does not depend on ``plan``, so a run that leaves the selector's plan
    for later computes what one that decided it would."""
    from ..engine import dispatch, selector
    from ..engine.settings import compute_eng
    call = None
    for engine in FIRST_RUN_ENGINES:
        if plan is not None and plan.decision.engine == engine:
            return plan
        call = call or dispatch.make_call(spec, args)
        if selector.verdict(call, reg, engine)[0] != selector.ACCEPTED:
            continue   # asked for, it would fall back to the selector's choice and probe the others
        with compute_eng(engine):
            chosen = dispatch.plan_for(spec, args, reg)
        if chosen.decision.engine == engine:
            return chosen
    return plan if plan is not None else dispatch.plan_for(spec, args, reg)


def selector_may_wait(reg) -> bool:
    """Whether a first run may leave a program node's own plan to the run that first needs it:
    where the selector's choice is the recommended engine's (no engine asked for) and every
    engine is one a program may follow (no plugin's, which ``facts`` would turn down)."""
    from ..engine.settings import Engine, current_scope
    return current_scope().engine == Engine.RECOMMEND.value and reg.engines.keys() <= ENGINES


def _is_slot(value) -> bool:
    from .runner import _is_slot as is_slot   # the runner imports this module
    return is_slot(value)


# host ops whose result is their input ``x`` read through another shape, or a part of it
VIEWS = frozenset({"onnx.reshape", "onnx.squeeze", "onnx.unsqueeze", "onnx.flatten", "onnx.slice", "onnx.getitem",
                   "np.getitem", "np.transpose"})
# of those, the ones that keep every element in order (a program's values lie row-major: its bytes)
RESHAPES = frozenset({"onnx.reshape", "onnx.squeeze", "onnx.unsqueeze", "onnx.flatten"})
SHAPES = "onnx.program"   # a host program computing from shapes only: one value per signature


def host_facts(step, kwargs, env):
    """What ``plan`` needs of a host node's first run (``kwargs``: its arguments, ``env`` holding
    its results), or None where no program can hold it: a view of its input ``x`` (the bytes it
    reads, by offset and strides), or a host program of shape arithmetic (its results, the same
    on every run of the signature)."""
    op = step.spec.name
    if op == SHAPES:
        if kwargs.get("shape_keyed") is None:
            return _static_program(step, kwargs, env)
        return ("shapes", {s: env[s] for s in step.out_slots}, {})
    if op not in VIEWS or step.single is None:
        return None
    x, result = kwargs.get("x"), env[step.single]
    reads = dict(step.simple)
    if type(x) is not np.ndarray or type(result) is not np.ndarray or "x" not in reads or step.nested:
        return None
    if x.dtype not in TYPES or result.dtype != x.dtype or x.size == 0 or result.size == 0 \
            or not 1 <= result.ndim <= 6 or not 1 <= x.ndim <= 6:
        return None
    if op in RESHAPES and result.size == x.size:
        view = (0, None)   # numpy copies a strided input: in a program the input lies row-major
    elif x.flags.c_contiguous:
        view = _view(x, result)
    else:
        return None
    if view is None:
        return None
    # a shape argument's slot, with the value it held (``plan`` holds the view only where it is a
    # constant, shape arithmetic, or checked on each run to be the same)
    others = {name: (slot, _value_of(env[slot])) for name, slot in reads.items() if name != "x"}
    if any(value is None for _, value in others.values()):
        return None
    # for lanes (``lanes._mixes_the_batch``): the input's row size and rows, whether it is all of it
    attrs = {"offset": view[0], "strides": view[1], "reads_fixed": others, "item": x.size // x.shape[0],
             "rows": x.shape[0], "whole": result.size == x.size}
    return ("view", {"x": reads["x"]}, attrs, tuple(result.shape), None, {reads["x"]: (tuple(x.shape), x.dtype)},
            x.dtype)


def _static_program(step, kwargs, env):
    """A host program every step of which its first call found static (``host_programs``: from
    constants, shapes and small integer values) as shape arithmetic whose small integer inputs are
    checked on each run (made before the program: a reshape target from another host program's
    sizes), or None."""
    from ..onnx import host_programs
    from .runner import _Slot
    compiled = host_programs._compiled.get(id(kwargs.get("steps")))
    if compiled is None or not compiled.static or not all(compiled.static):
        return None
    template = dict(step.nested).get("values")
    if not isinstance(template, (list, tuple)) or len(template) != len(kwargs.get("values") or ()):
        return None
    checks = {}
    for i in compiled.small:
        if type(template[i]) is _Slot:
            value = _value_of(env[template[i].index])
            if value is None:
                return None
            checks[template[i].index] = value
    return ("shapes", {s: env[s] for s in step.out_slots}, checks)


_UNSEEN = object()   # a check no array has passed yet
_kept_check: list = []   # host_programs._is_kept, once imported (host_programs imports this package)


def _is_kept(value) -> bool:
    """Whether ``value`` is a result a host program keeps (``onnx/host_programs.py``)."""
    if not _kept_check:
        from ..onnx.host_programs import _is_kept as kept
        _kept_check.append(kept)
    return _kept_check[0](value)


def _value_of(value):
    """A small integer array (a shape) as bytes with its dtype and shape, else None."""
    if type(value) is np.ndarray and value.dtype.kind in "iu" and value.size <= 16:
        return (value.dtype.str, value.shape, value.tobytes())
    return None


def _view(x, result):
    """(offset, strides) in items of ``result`` within C-contiguous ``x``, strides None where it
    is C-contiguous; None where it is not a view of ``x``'s bytes."""
    item = x.itemsize
    offset = result.__array_interface__["data"][0] - x.__array_interface__["data"][0]
    if offset < 0 or offset % item or any(st < 0 or st % item for st in result.strides):
        return None
    last = offset + sum((d - 1) * st for d, st in zip(result.shape, result.strides)) + item
    if last > x.nbytes or not np.shares_memory(x, result):
        return None
    strides = None if result.flags.c_contiguous else tuple(st // item for st in result.strides)
    return offset // item, strides


def _split_facts(step, args, plan):
    """A split's pieces as views of its input: [(facts, slot of the piece)], or None."""
    x, sizes, axis = args["x"], args["split_size_or_sections"], args["axis"]
    reads = dict(step.simple)
    if type(x) is not np.ndarray or x.dtype not in TYPES or "x" not in reads or 0 in x.shape \
            or len(sizes) != len(step.out_slots) or not isinstance(step.out, (list, tuple)) \
            or list(step.out) != list(range(len(sizes))) or 0 in sizes:
        return None
    strides = [int(np.prod(x.shape[i + 1:])) for i in range(x.ndim)]
    contiguous = all(d == 1 for d in x.shape[:axis])   # every piece a run of x's bytes
    out, start = [], 0
    for size, slot in zip(sizes, step.out_slots):
        shape = tuple(x.shape[:axis]) + (size,) + tuple(x.shape[axis + 1:])
        attrs = {"offset": start * strides[axis], "strides": None if contiguous else tuple(strides),
                 "item": x.size // x.shape[0], "rows": x.shape[0], "whole": len(sizes) == 1,
                 "reads_fixed": {}}
        out.append((("view", {"x": reads["x"]}, attrs, shape, None, {reads["x"]: (tuple(x.shape), x.dtype)},
                     x.dtype), slot))
        start += size
    return out


def facts(step, args, plan):
    """What ``plan`` needs of one node's first run, or None where no program can hold it (a list
    of (facts, slot) for a node of several results)."""
    op = step.spec.name
    if op == "split":
        if plan.decision.engine not in ENGINES or not step.node.meta.get(NAME):
            return None
        return _split_facts(step, args, plan)
    if op == "cast":   # a mixed precision graph's casts between f32 and bf16 (not marked: made after fusing)
        pair = (np.dtype(args["x"].dtype), np.dtype(args["dtype"]))
        if pair not in ((F32, TYPES[1]), (TYPES[1], F32)) or not 1 <= args["x"].ndim <= 6:
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
            if isinstance(a, np.ndarray) and a.dtype not in TYPES and not (op == "select" and name == "cond"
                                                                            and a.dtype == np.bool_):
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
    """A planned entry: nodes ``first`` to ``stop - 1`` run as one oneDNN program (``fixed``: the
    results of the host programs of shape arithmetic among them, as their first run gave them;
    ``checks``: (slot, value) of the shapes its views were planned with, made before it)."""
    __slots__ = ("program", "first", "stop", "inputs", "outputs", "shapes", "original", "fixed", "checks", "released",
                 "seen")

    def __init__(self, program, first, stop, inputs, outputs, shapes, original, fixed=(), checks=(), released=()):
        self.program, self.first, self.stop = program, first, stop
        self.inputs, self.outputs, self.shapes, self.original = inputs, outputs, shapes, original
        self.fixed, self.checks = tuple(fixed), tuple(checks)
        self.released = tuple(released)   # the slots the nodes first to stop - 1 let go of, in one list
        # per check, the array that last passed it where a host program keeps it (read-only, given
        # again on every call with the same shapes): it passes again without its bytes compared
        self.seen = [_UNSEEN] * len(self.checks)

    def run(self, env):
        """Runs the program on this run's values (True), or leaves them for the nodes (False)."""
        seen = self.seen
        for k, (slot, value) in enumerate(self.checks):   # a shape a view reads: as planned, or the nodes run
            found = env[slot]
            if found is seen[k]:   # the host program's kept array that passed before: unchanged
                continue
            if _value_of(found) != value:
                return False
            if _is_kept(found):
                seen[k] = found
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
        for slot, value in self.fixed:
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
    for found in recorded.values():   # shape arithmetic: one value per signature, a constant to a program
        if found is not None and found[0] == "shapes" and not found[2]:
            constants.update(found[1])
    spans = []
    eligible = [recorded.get(i) is not None for i in range(n)]
    last = set()   # nodes that end their run: what reads their result starts the next
    i = 0
    while i < n:
        if not eligible[i]:
            i += 1
            continue
        stop = i
        while stop < n and eligible[stop]:
            stop += 1
            if stop - 1 in last:
                break
        if stop - i < MIN_NODES:
            i = stop
            continue
        built = _build(segment, program, recorded, readers, constants, kept, i, stop)
        if isinstance(built, _Last):   # the node at that index fits only as the run's last
            last.add(int(built))
            continue
        if isinstance(built, int):   # the node at that index does not fit: end the run before it
            eligible[built] = False
            continue
        if built is not None:
            program_, inputs, outputs, shapes, checks = built
            fixed = [(s, a) for k in range(i, stop) if recorded[k][0] == "shapes" for s, a in recorded[k][1].items()]
            released = [slot for k in range(i, stop) for slot in program.released[k]]
            entries[i] = Segment(program_, i, stop, inputs, outputs, shapes, entries[i], fixed, checks, released)
            spans.append((i, stop))
        i = stop
    return spans


# the steps that may read an input of first dim 1 beside values with the batch: they broadcast it
BROADCASTING = frozenset({"add", "mul", "fused_softmax", "select"})
# the steps that align an operand's dims from the right (numpy's broadcasting, a product's batch
# dims): an input they read has the images first only where it has the result's rank and first dim
ALIGNED = frozenset({"add", "mul", "fused_softmax", "matmul", "concat", "select", "div"})


def _lane_rows(steps, inputs, input_shapes, output_shapes, shapes, constants):
    """(batch, rows per image of each input then output) for lanes: the batch is the smallest first
    dim above 1 of the inputs, each of whose first dims is a multiple of it, or 1 where only
    broadcasting steps read it (each lane reads it whole); an input that only broadcasting steps
    read, each with fewer dims than its result (a position table of (sequence, features) added to
    (batch, sequence, features)), is aligned from the right, away from the batch: each lane reads
    it whole too. (1, None) where lanes cannot split."""
    firsts = [shape[0] for shape in input_shapes if shape]
    if len(firsts) != len(input_shapes):
        return 1, None
    from ..backends.onednn.segment import _names
    readers = {name: [s for s in steps if name in _names(s.reads)] for name in inputs}
    whole = {name for name, shape in zip(inputs, input_shapes)
             if readers[name] and all(s.op in BROADCASTING and len(shape) < len(s.shape) for s in readers[name])}
    split = [f for name, f in zip(inputs, firsts) if name not in whole]
    if not any(f > 1 for f in split):
        return 1, None
    n = min(f for f in split if f > 1)
    rows = []
    for name, f in zip(inputs, firsts):
        if name in whole:
            rows.append(0)
        elif f == 1:
            if any(s.op not in BROADCASTING for s in steps if name in _names(s.reads)):
                return 1, None
            rows.append(0)
        elif f % n:
            return 1, None
        else:
            rows.append(f // n)
    for shape in output_shapes:
        if not shape or shape[0] % n or not shape[0]:
            return 1, None
        rows.append(shape[0] // n)
    for s in steps:   # an operand aligned from the right has the images first only at the result's rank
        if s.op not in ALIGNED:
            continue
        for name in _names(s.reads):
            shape = shapes.get(name)
            if name in constants or shape is None or (name in inputs and shape[0] == 1) or name in whole:
                continue   # a constant is never split; an input of first dim 1, or aligned away from the batch, is read whole
            if len(shape) != len(s.shape) or shape[0] != s.shape[0]:
                return 1, None   # not rows of images: a position table of (sequence, features), say
    return n, rows


class _Last(int):
    """The index of a node that fits a program only as its last one (``Unsupported.last``)."""


def _build(segment, program, recorded, readers, constants, kept, first, stop):
    """(program, input slots, output slots, input shapes), the index of a node that does not fit,
    or None."""
    steps, made, shapes, node_of, checks = [], set(), {}, [], {}   # node_of: each step's node
    constants = dict(constants)

    def checked(fixed) -> bool:
        """Whether the (slot, value) pairs a node was planned with hold on every run: constants,
        or made before the program and compared on each run (``Segment.checks``); not made in it."""
        for slot, value in fixed:
            if slot in made:
                return False
            if slot not in constants:
                checks[slot] = value
        return True
    for i in range(first, stop):
        found = recorded[i]
        if found[0] == "shapes":   # no step: its results are constants of the program
            if not checked(found[2].items()):   # its small inputs
                return i
            constants.update(found[1])
            continue
        for one, out in (found if isinstance(found, list) else [(found, program.steps[i].single)]):
            op, reads, attrs, shape, prepared, read_shapes, dtype = one
            if not checked(attrs.get("reads_fixed", {}).values()):   # a view's shape argument
                return i
            steps.append(segment.Step(op, reads, attrs, out, shape, prepared, dtype))
            node_of.append(i)
            shapes.update(read_shapes)
            made.add(out)
    if not steps:
        return None
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
        if exc.index is None:
            return None
        node = node_of[exc.index]
        return _Last(node) if exc.last and node + 1 < stop else node   # as the last node, it fits
    n, rows = _lane_rows(steps, inputs, [shapes[s][0] for s in inputs],
                         [built.final_shape.get(o, built.shape[o]) for o in outputs], built.shape, constants)

    def lane(size):
        return segment.Program(lanes.lane_steps(steps, n, size, constants), inputs, outputs,
                               lanes.lane_constants(steps, n, size, constants),
                               {s: (size * m,) + tuple(shapes[s][0][1:]) if m else shapes[s][0]
                                for s, m in zip(inputs, rows)}, compute, dtypes)
    built = lanes.Lanes(built, lane, max(n, 1), rows)
    return built, inputs, outputs, [shapes[s] for s in inputs], list(checks.items())
