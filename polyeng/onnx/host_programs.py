"""Runs of host nodes as one node: the shape arithmetic and mask building of an imported model.

After conversion an exported transformer still holds dozens of ``onnx.*`` host nodes per call:
``Shape``, ``Gather``, ``Unsqueeze`` and ``Concat`` chains building reshape targets from named
dims, and the ``Range``/comparison/``And`` chains building attention masks from the sequence
length and the mask input. Each is a graph node with its own dispatch. ``fuse`` gathers them
into ``onnx.program`` nodes, one per place they can run: every host node whose inputs are
constants, graph inputs, the shape of any tensor (``Shape``), or results of other such nodes
joins the program placed right after the last polyeng node it waits for. The program runs the
same host functions in the same order, so results are unchanged; an error names the ONNX node
of the step that raised it.

This module is also the run-time half of the programs (``program``, a host op), so it imports
neither ``onnx`` nor the converters.
"""
from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from ..engine.call import map_arrays
from ..graph.ir import Node, Ref, by_output_index, leaves

# the host ops a program may hold: each computes small values on the host from its inputs
STEP_OPS = frozenset({
    "onnx.shape", "onnx.gather", "onnx.concat", "onnx.binary", "onnx.compare", "onnx.logical", "onnx.isnan",
    "onnx.isinf", "onnx.extremum", "onnx.reduce", "onnx.range", "onnx.constant_of_shape", "onnx.expand",
    "onnx.slice", "onnx.astype", "onnx.where", "onnx.unsqueeze", "onnx.squeeze", "onnx.reshape", "onnx.flatten",
    "onnx.gather_elements", "onnx.gather_nd", "onnx.wrap_indices", "onnx.getitem",
})
PROGRAM = "onnx.program"
# the host ops whose result's shape follows from their inputs' shapes, with the arguments whose
# values also decide it (any other argument is read for its shape alone: a gather's indices, a
# binary op's operands)
SHAPE_FROM_SHAPES = {
    "onnx.astype": (), "onnx.isnan": (), "onnx.isinf": (), "onnx.wrap_indices": (), "onnx.binary": (),
    "onnx.compare": (), "onnx.logical": (), "onnx.extremum": (), "onnx.where": (), "onnx.concat": ("axis",),
    "onnx.gather": ("axis",), "onnx.gather_elements": ("axis",), "onnx.unsqueeze": ("axes",),
    "onnx.squeeze": ("axes",), "onnx.flatten": ("axis",), "onnx.reshape": ("shape", "allowzero"),
    "onnx.expand": ("shape",), "onnx.slice": ("starts", "ends", "axes", "steps"), "onnx.reduce": ("axes", "keepdims"),
}


def _is_slot(value) -> bool:
    return type(value) is dict and len(value) == 1 and "slot" in value


class _Compiled:
    """A program's steps made ready to run: per step its function, fixed arguments and slot
    arguments, and the results of earlier calls by the shapes they read (``shape_keyed``), or,
    for a program that also reads values (``constants`` given), the results of its steps that
    read only constants and shapes (``static``)."""

    def __init__(self, steps, shape_keyed, constants=None):
        from .host_ops import RUN
        from ..graph.numpy_nodes import getitem
        self.steps = steps   # held, so the id it is filed under is not reused
        self.run = []
        self.starts, self.made = [], 0   # per step, the slot of its first result; the slots made (``check``)
        for name, op, args, out in steps:
            if op not in STEP_OPS:
                raise ValueError(f"{PROGRAM}: step {name!r} runs {op!r}, which is not a host op a program may hold")
            fixed, direct, nested = {}, [], []
            for key, value in args.items():
                if _is_slot(value):
                    direct.append((key, value["slot"]))
                elif _slots_in(value):
                    # a list of slots only (a concat's values): read by index, not by a walk
                    flat = type(value) is list and all(_is_slot(v) for v in value)
                    nested.append((key, [v["slot"] for v in value] if flat else None, value))
                else:
                    fixed[key] = value
            count = _result_count(out)
            self.run.append((name, getitem if op == "onnx.getitem" else RUN[op], fixed, direct, nested,
                             out if count > 1 or out != 0 else None))
        self.shape_keyed = shape_keyed
        self.memo = {}
        self.checked = None
        if constants is not None and not isinstance(constants, (list, tuple)):
            raise ValueError(f"{PROGRAM}: constants must be a list of value slots, not {type(constants).__name__}")
        self.constants = tuple(constants) if shape_keyed is None and constants else ()
        self.reads_values = shape_keyed is None   # its static steps are found on the first call
        self.static = self.static_keys = None   # found on the first call, from its values
        self.small = self.shared = self.held = ()   # held: the constants and shared values, keyed by identity

    def _find_static(self, values) -> None:
        """Which steps compute only from constants, small integer values and shapes: those reading
        such values and results of such steps, and ``onnx.shape`` of a value whose shape follows
        from the values' shapes (a value, or a result of a ``SHAPE_FROM_SHAPES`` step of such
        values). Their results are the same for the same value shapes, constant arrays and small
        integer values (shape arithmetic another program made: ``small_ints``), so they are kept
        per key (``static``, a bool per step) and the others run on every call. The key is the
        shapes of the other values (``static_keys``).

        A value that another program kept (``shared``: a read-only result of its static steps, given
        again on every call with the same key) counts as a constant: the sequence positions a mask
        compares are one program's, the comparison another's."""
        count = len(values)
        self.shared = tuple(i for i in range(count) if i not in self.constants and _is_kept(values[i]))
        self.small = tuple(i for i in range(count) if i not in self.constants and i not in self.shared
                           and _small_ints(values[i]))
        self.held = self.constants + self.shared
        fixed = set(self.held) | set(self.small)   # slots whose values follow from the key
        shaped = set(range(count))    # slots whose shapes follow from the key
        static, made = [], count
        for (_, op, args, _), run in zip(self.steps, self.run):
            out = run[-1]
            width = 1 if out is None else _result_count(out)
            reads = {key: [s["slot"] for s in _slots_in(value)] for key, value in args.items()}
            if op == "onnx.shape":
                ok = all(i in shaped for i in reads.get("x", ())) and all(
                    i in fixed for key, slots in reads.items() if key != "x" for i in slots)
            else:
                ok = all(i in fixed for slots in reads.values() for i in slots)
            made_here = range(made, made + width)
            if ok:
                fixed.update(made_here)
                shaped.update(made_here)
            elif op in SHAPE_FROM_SHAPES and all(i in shaped for slots in reads.values() for i in slots) and all(
                    i in fixed for key in SHAPE_FROM_SHAPES[op] for i in reads.get(key, ())):
                shaped.update(made_here)
            static.append(ok)
            made += width
        # static last: another thread's first call reads it before the rest
        self.static_keys = tuple(i for i in range(count) if i not in fixed)
        self.static = static if any(static) else []

    def check(self, count: int, outputs) -> None:
        """Every slot a step reads is made before it, every output slot exists (a graph file may
        hold any program): a ValueError naming the step otherwise. Records each step's first
        result slot (``starts``) and the slots made (``made``), which ``_again`` places by."""
        made, starts = count, []
        for name, _, fixed, direct, nested, out in self.run:
            for slot in [i for _, i in direct] + [s["slot"] for _, _, t in nested for s in _slots_in(t)]:
                if type(slot) is not int or not 0 <= slot < made:
                    raise ValueError(f"{PROGRAM}: step {name!r} reads slot {slot!r}; slots 0 to {made - 1} are made "
                                     f"before it")
            starts.append(made)
            made += 1 if out is None else _result_count(out)
        for slot in outputs:
            if type(slot) is not int or not 0 <= slot < made:
                raise ValueError(f"{PROGRAM}: output slot {slot!r} is not one of the {made} slots it makes")
        for slot in self.constants:
            if type(slot) is not int or not 0 <= slot < count:
                raise ValueError(f"{PROGRAM}: constant slot {slot!r} is not one of its {count} values")
        self.starts, self.made = starts, made
        self.checked = (count, tuple(outputs))

    def __call__(self, values, outputs):
        if self.checked != (len(values), tuple(outputs)):
            self.check(len(values), outputs)
        key = None
        if self.shape_keyed is not None:
            key = tuple(tuple(values[i].shape) for i in self.shape_keyed)
            found = self.memo.get(key)
            if found is not None:
                return found
        keep = None
        if self.reads_values:
            if self.static is None:
                self._find_static(values)
            if self.static and all(_small_ints(values[i]) for i in self.small) and all(
                    _is_kept(values[i]) for i in self.shared):
                held = self.held
                key = (tuple(tuple(values[i].shape) for i in self.static_keys),
                       tuple(id(values[i]) for i in held),
                       tuple((values[i].dtype.str, values[i].shape, values[i].tobytes()) for i in self.small))
                kept = self.memo.get(key)
                if kept is not None:
                    return self._again(kept, values, outputs)
                if len(self.memo) < _MEMO_SIZES:
                    # the constants are held beside their results, so no other array takes their ids
                    keep = [[values[i] for i in held], [], None]
                    static_key = key
                key = None
        slots = list(values)
        for index, step in enumerate(self.run):
            made = len(slots)
            slots.extend(_run_step(step, slots))
            if keep is not None:
                results = slots[made:] if self.static[index] else None
                if results and any(_aliases(r, values, held) for r in results):
                    results = None   # a view of (or the very) input: run again on every call
                for array in results or ():
                    if hasattr(array, "flags"):
                        array.flags.writeable = False   # shared by every call with this key
                        _kept[id(array)] = array
                keep[1].append(results)
        if keep is not None:   # kept only once every step ran
            self.memo[static_key] = keep
        found = tuple(slots[i] for i in outputs)
        if key is not None and len(self.memo) < _MEMO_SIZES:
            for array in found:
                if hasattr(array, "flags"):
                    array.flags.writeable = False   # shared by every call at these shapes
                    _kept[id(array)] = array
            self.memo[key] = found
        return found

    def _again(self, kept, values, outputs):
        """A run with the results of the static steps ``kept`` (``[held values, results per step,
        fast form]``): only the other steps run. The fast form, made on the first such run, is
        every slot's value with the kept results in place, and the steps that still run."""
        if kept[2] is None:
            template, again = [None] * self.made, []
            for index, results in enumerate(kept[1]):
                start = self.starts[index]
                if self.static[index] and results is not None:
                    template[start:start + len(results)] = results
                else:
                    again.append((self.run[index], start))
            kept[2] = (template, again)
        template, again = kept[2]
        slots = template.copy()
        slots[:len(values)] = values
        for step, start in again:
            results = _run_step(step, slots)
            slots[start:start + len(results)] = results
        return tuple(slots[i] for i in outputs)


def _run_step(step, slots) -> list:
    """The results of one step (``_Compiled.run``'s entry) on ``slots``, in slot order; an error
    names the step."""
    name, function, fixed, direct, nested, out = step
    kwargs = dict(fixed)
    for k, i in direct:
        kwargs[k] = slots[i]
    for k, flat, template in nested:
        kwargs[k] = [slots[i] for i in flat] if flat is not None else map_arrays(
            template, lambda s: slots[s["slot"]], _is_slot)
    try:
        result = function(**kwargs)
    except IndexError as exc:
        raise ValueError(f"{name}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name}: {exc}") from None
    if out is None:
        return [result]
    return [value for _, value in sorted(by_output_index(out, result), key=lambda pair: pair[0])]


_compiled: dict = {}   # id(steps) -> _Compiled
_kept = weakref.WeakValueDictionary()   # id -> a static step's result a program keeps (while it does)
_MEMO_SIZES = 64       # input shapes remembered per program
_PROGRAMS = 4096       # programs compiled per process, before the oldest are dropped


def program(values, steps, outputs, shape_keyed=None, constants=None):
    """Run ``steps`` ([name, op, args, out] each, ``{"slot": i}`` in args for the i-th value: the
    ``values`` first, then each step's results in order) and return the ``outputs`` slots. A
    program whose values are only constants and tensors whose shapes it reads (the slots listed
    in ``shape_keyed``) gives the same results for the same shapes: they are kept (read-only)
    and given again. Otherwise ``constants`` lists the value slots that are the graph's
    constants: the steps that read only those, shapes of values and results of such steps are
    run once per shapes and constants and their results kept (read-only); the rest run on every
    call (an attention mask built from the mask input's values, with its shape steps kept)."""
    compiled = _compiled.get(id(steps))
    if compiled is None or compiled.steps is not steps:
        if len(_compiled) >= _PROGRAMS:
            _compiled.pop(next(iter(_compiled)))
        compiled = _compiled[id(steps)] = _Compiled(steps, shape_keyed, constants)
    return compiled(values, outputs)


def _aliases(result, values, constants) -> bool:
    """Whether ``result`` may share memory with a value that is not a constant (the caller's array,
    which the caller may change or reuse: such a result is never kept, nor made read-only)."""
    if not isinstance(result, np.ndarray):
        return False
    return any(i not in constants and isinstance(v, np.ndarray) and np.may_share_memory(result, v)
               for i, v in enumerate(values))


def _is_kept(value) -> bool:
    """Whether ``value`` is a result a program keeps for its static steps (the very array)."""
    return _kept.get(id(value)) is value


def _small_ints(value) -> bool:
    """Whether ``value`` is shape arithmetic: an integer array of at most one dim and 8 items."""
    return type(value) is np.ndarray and value.dtype.kind in "iu" and value.ndim <= 1 and value.size <= 8


def _slots_in(args) -> list:
    return leaves(args, _is_slot)


def _result_count(out) -> int:
    return len(leaves(out, lambda v: type(v) is int))


def result_dtypes(args, dtype_of) -> list:
    """The dtype of each output of a program whose ``values`` have ``dtype_of(ref)``, step by step
    by each host op's own rule (the mixed precision pass asks: a value read for its shape may
    have become bf16 without changing anything the program computes)."""
    from ..ops.catalogue import lookup
    dtypes = [dtype_of(ref) for ref in args["values"]]
    for _, op, step_args, out in args["steps"]:
        slots = _slots_in(step_args)
        first = dtypes[slots[0]["slot"]] if slots else None
        dtype = lookup(op).result_type(step_args, first)
        dtypes.extend([dtype] * _result_count(out))
    return [dtypes[i] for i in args["outputs"]]


def pass_through_source(node, name: str, passing) -> str | None:
    """The value a program's output ``name`` is made from through steps of ``passing`` ops only
    (each step's first input), when that is one of the program's inputs, else None."""
    args = node.args
    producer, count = {}, len(args["values"])
    for step in args["steps"]:
        for _ in range(_result_count(step[3])):
            producer[count] = step
            count += 1
    slot = args["outputs"][node.outputs.index(name)]
    while slot >= len(args["values"]):
        _, op, step_args, _ = producer[slot]
        slots = _slots_in(step_args)
        if op not in passing or not slots:
            return None
        slot = slots[0]["slot"]
    return args["values"][slot].name


# ops whose result has the shape of this argument, whatever the values: ``Shape`` of the result is
# ``Shape`` of that argument. Only the layer norm: a shape read of an activation's input would make
# a second reader of a convolution's result, which conv_activation then does not fuse
SAME_SHAPE = {"layer_norm": "x"}


def _earliest_shapes(nodes: list) -> list:
    """``nodes`` with each ``onnx.shape`` reading the earliest value of its input's shape through
    ``SAME_SHAPE`` ops (a layer norm's input): a program of such steps then waits only for that
    value, and does not split the run of nodes after it (BERT's mask program read the shape of the
    embeddings' layer norm, which so ran apart from the oneDNN program after it)."""
    made = {name: node for node in nodes for name in node.outputs}
    out = []
    for node in nodes:
        x = node.args.get("x") if node.op == "onnx.shape" else None
        if type(x) is Ref:
            source = x
            while source.name in made and made[source.name].op in SAME_SHAPE:
                producer = made[source.name]
                earlier = producer.args.get(SAME_SHAPE[producer.op])
                if type(earlier) is not Ref or len(producer.outputs) != 1:
                    break
                source = earlier
            if source is not x:
                node = dataclasses.replace(node, args={**node.args, "x": Ref(source.name)})
        out.append(node)
    return out


def fuse(nodes: list, constants, graph_inputs, outputs) -> list:
    """``nodes`` with each group of two or more host nodes that can run together replaced by one
    ``onnx.program`` node, placed after the last node the group waits for."""
    nodes = _earliest_shapes(nodes)
    position = {}          # value name -> index of the node that makes it
    for i, node in enumerate(nodes):
        for name in node.outputs:
            position[name] = i
    ready = {}             # node index -> the index of the last non-host node it waits for (-1: none)
    for i, node in enumerate(nodes):
        if node.op not in STEP_OPS:
            continue
        wait, ok = -1, True
        for arg, value in node.args.items():
            for ref in leaves(value):
                if ref.name in constants or ref.name in graph_inputs:
                    continue
                j = position[ref.name]
                if j in ready:
                    wait = max(wait, ready[j])
                elif node.op == "onnx.shape" and arg == "x":   # only the shape is read
                    wait = max(wait, j)
                else:
                    ok = False
        if ok:
            ready[i] = wait
    groups: dict = {}
    for i, wait in ready.items():
        groups.setdefault(wait, []).append(i)
    if all(len(members) == 1 for members in groups.values()):
        return nodes
    readers: dict = {}     # value name -> the waits of the groups reading it (None: a node in no group)
    for i, node in enumerate(nodes):
        for name in node.inputs:
            readers.setdefault(name, set()).add(ready.get(i))
    for ref in outputs:
        readers.setdefault(ref.name, set()).add(None)
    # each group runs right after the node it waits for: a lone node moves there as it is
    placed = {}
    for wait, members in groups.items():
        needed = {name for i in members for name in nodes[i].outputs if readers.get(name, set()) - {wait}}
        placed[wait] = _program(nodes, members, needed, constants) if len(members) > 1 else nodes[members[0]]
    result = [placed[-1]] if -1 in placed else []
    for i, node in enumerate(nodes):
        if i not in ready:
            result.append(node)
            if i in placed:
                result.append(placed[i])
    return result


def _program(nodes: list, members: list, needed: set, constants) -> Node:
    """One node running ``members`` (indices into ``nodes``, in order)."""
    slot_of, values, steps = {}, [], []

    def slot(ref):
        if ref.name not in slot_of:
            slot_of[ref.name] = len(values)
            values.append(Ref(ref.name))
        return {"slot": slot_of[ref.name]}
    inside = {name for i in members for name in nodes[i].outputs}
    for i in members:   # external inputs first: their slots come before any step's result
        for ref in leaves(nodes[i].args):
            if ref.name not in inside:
                slot(ref)
    count = len(values)
    for i in members:
        node = nodes[i]
        args = map_arrays(node.args, lambda ref: {"slot": slot_of[ref.name]} if ref.name in slot_of else slot(ref),
                          lambda v: type(v) is Ref)
        steps.append([node.name, node.op, args, node.out])
        for name in node.outputs:
            slot_of[name] = count
            count += 1
    out_names = [name for i in members for name in nodes[i].outputs if name in needed]
    # the values read only for their shape, and whether every other value is a constant
    read = {}
    for _, op, args, _ in steps:
        for key, value in args.items():
            for s in _slots_in(value):
                if s["slot"] < len(values):
                    read.setdefault(s["slot"], set()).add(op == "onnx.shape" and key == "x")
    shape_only = sorted(i for i, how in read.items() if how == {True})
    keyed = all(i in shape_only or values[i].name in constants for i in range(len(values)))
    fixed = [i for i in range(len(values)) if values[i].name in constants]
    types = {name: t for i in members for name, t in zip(nodes[i].outputs, nodes[i].types)}
    first = nodes[members[0]].name
    return Node(name=f"{first}.program", op=PROGRAM,
                args={"values": values, "steps": steps, "outputs": [slot_of[name] for name in out_names],
                      "shape_keyed": shape_only if keyed else None, "constants": None if keyed else fixed},
                outputs=out_names, out=tuple(range(len(out_names))), types=[types[n] for n in out_names])
