"""``to_mixed_precision``: a graph converted to a 16-bit float type once, ahead of time (SPEC §6).

One pass over the nodes in order. Each node's rule (``polyeng.amp``: a ``conversion_override``,
else the highest registered level, else the op's default category) puts it in ALLOW, FOLLOW or
DENY:

- ALLOW: its float inputs are taken in the mixed dtype; the kernels accumulate 16-bit storage
  in f32. A rule's float64 accumulation casts the (mixed) inputs to float64.
- FOLLOW: runs in the mixed dtype when every float input computed by the graph already is
  (constants follow: they are converted); otherwise in the original dtypes, which the inputs
  get back. Nodes without a rule (numpy nodes) are FOLLOW too.
- DENY: every float input gets its original dtype back (not float32: an f16 graph stays f16).

Only float16, bfloat16 and float32 values are converted; integer, bool and float64 values are
never touched. There is one cast per (value, dtype): a cast, once made, is reused by every
consumer, and casting a cast back to its source's dtype gives the source itself. Constants are
converted here, once, and stored converted; a float16 constant that would overflow is an
error naming it. With every node DENY no cast is inserted at all, so the result is
bit-identical to the original graph's.
"""
from __future__ import annotations

import warnings
from collections import Counter

import numpy as np

from ..engine import dtypes as dt
from ..engine.signal_safe import quietly
from ..engine import mixed_precision as mp
from ..engine.call import Call
from ..ops.catalogue import lookup
from ..engine.mixed_precision import Category
from .graph import Graph
from .ir import AmpInfo, Node, Ref, fill, ref_names

_CONVERTIBLE = (dt.float32, dt.float16, dt.bfloat16)
_MISSING_MODES = {"error": "error", "warn": "warn", "ignore": "ignore", 0: "error", 1: "warn", 2: "ignore"}


def mixed_dtype(dtype) -> np.dtype:
    try:
        target = dt.as_dtype(dtype, "dtype")
    except TypeError:
        target = None
    if target not in dt.SIXTEEN_BIT_FLOATS:
        raise ValueError(f"dtype={dtype!r}: the mixed precision dtype must be bfloat16 or float16")
    return target


def missing_mode(value) -> str:
    key = value.strip().lower() if isinstance(value, str) else value
    if isinstance(key, bool) or key not in _MISSING_MODES:
        raise ValueError(f"missing_op_mode={value!r}: expected 'error', 'warn' or 'ignore' (or 0, 1, 2)")
    return _MISSING_MODES[key]


def to_mixed_precision(graph, dtype="bfloat16", keep_orig_output_dtype=True, missing_op_mode="warn", *,
                       keep=()):
    """``graph`` converted to mixed precision in ``dtype`` (bfloat16 or float16).

    ``keep_orig_output_dtype`` casts outputs back to their original dtypes. ``missing_op_mode``
    says what happens with nodes that have no rule: "error" raises listing them, "warn" issues
    one warning listing them, "ignore" is silent (or 0, 1, 2); they are treated as FOLLOW.
    ``keep``: names of nodes to leave in their original dtype whatever their rule says.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph={graph!r} is not a polyeng.graph.Graph")
    if not isinstance(keep_orig_output_dtype, (bool, np.bool_)):
        raise TypeError(f"keep_orig_output_dtype={keep_orig_output_dtype!r}: expected True or False")
    target, mode = mixed_dtype(dtype), missing_mode(missing_op_mode)
    names = {n.name for n in graph.nodes}
    unknown = sorted(set(keep) - names)
    if unknown:
        raise ValueError(f"keep: no node named {', '.join(map(repr, unknown))} in the graph")
    missing = Counter(n.op for n in graph.nodes if lookup(n.op, "node op").category is None)
    if missing and mode != "ignore":
        listed = ", ".join(f"{op} ({count} node{'s' if count > 1 else ''})" for op, count in sorted(missing.items()))
        if mode == "error":
            raise ValueError(f"to_mixed_precision: no mixed precision rule for {listed}; register one, or pass "
                             f"missing_op_mode='warn' or 'ignore' to treat them as FOLLOW")
        warnings.warn(f"to_mixed_precision: no mixed precision rule for {listed}; treated as FOLLOW",
                      RuntimeWarning, stacklevel=2)
    return _Pass(graph, target, frozenset(keep)).run(bool(keep_orig_output_dtype))


class _Pass:
    def __init__(self, graph, mixed, keep):
        self.graph, self.mixed, self.keep = graph, mixed, keep
        self.original = {name: t[0] for name, t in graph._types.items()}   # dtypes before the pass
        self.types = dict(graph._types)        # value -> (dtype, shape) in the converted graph
        self.constants = dict(graph.constants)
        self.nodes: list[Node] = []
        self.casts: dict = {}                  # (value, dtype) -> value of that dtype
        self.fits: dict = {}                   # constant -> whether the mixed dtype holds it

    def run(self, keep_outputs: bool) -> Graph:
        for node in self.graph.nodes:
            self._convert(node)
        outputs = self.graph._output_structure
        if keep_outputs:
            outputs = fill(outputs, lambda name: Ref(self.as_dtype(name, self.original[name])))
        used = set()
        for node in self.nodes:
            used.update(node.inputs)
        used.update(ref_names(outputs))
        constants = {k: v for k, v in self.constants.items() if k in used}
        types = {k: v for k, v in self.types.items() if k not in self.constants or k in constants}
        return Graph(inputs=self.graph.inputs, input_structure=self.graph._input_structure,
                     input_names=self.graph._input_names, nodes=self.nodes, constants=constants,
                     output_structure=outputs, types=types, fn_name=self.graph.name,
                     leading_free=self.graph.leading_free)

    # --- casts -----------------------------------------------------------------------------------
    def as_dtype(self, name: str, dtype) -> str:
        """The value holding ``name`` in ``dtype``: itself, a cast made before, or a new one."""
        dtype = np.dtype(dtype)
        have = self.types[name][0]
        if have == dtype:
            return name
        found = self.casts.get((name, dtype))
        if found is not None:
            return found
        new = f"{name}.{dt.short_name(dtype)}"
        while new in self.types:
            new += "'"
        shape = self.types[name][1]
        if name in self.constants:
            self.constants[new] = _converted_constant(name, self.constants[name], dtype)
        else:
            self.nodes.append(Node(name=new, op="cast", args={"x": Ref(name), "dtype": dtype}, outputs=[new], out=0,
                                   types=[(dtype, shape)],
                                   amp=AmpInfo("cast", f"{name} as {dt.short_name(dtype)}, shared by its consumers")))
        self.types[new] = (dtype, shape)
        self.casts[(name, dtype)] = new
        self.casts[(new, have)] = name   # casting it back reuses the source
        return new

    # --- nodes -----------------------------------------------------------------------------------
    def _convert(self, node: Node) -> None:
        floats = [n for n in dict.fromkeys(node.inputs) if self.types[n][0] in _CONVERTIBLE]
        computed = [n for n in floats if n not in self.graph.constants]
        spec = lookup(node.op, "node op")
        if spec.host:   # host ops move data: FOLLOW, by their own category or for want of a rule
            category, accumulation, out_dtype, source = Category.FOLLOW, "float32", self.mixed.name, \
                "data movement: FOLLOW" if spec.category is not None else "no rule (numpy node): FOLLOW"
        else:
            category, accumulation, out_dtype, source = self._rule(node, spec)
        to, why = self._targets(node, category, floats, computed)
        if to == "mixed" and category is Category.ALLOW and accumulation == "float64":
            rename = {n: self.as_dtype(self.as_dtype(n, self.mixed), dt.float64) for n in floats}
        elif to == "mixed":
            rename = {n: self.as_dtype(n, self.mixed) for n in floats}
        else:
            rename = {n: self.as_dtype(n, self.original[n]) for n in floats}
        args = fill(node.args, lambda n: Ref(rename.get(n, n)))
        natural = self._output_dtypes(node, args)
        wanted = list(natural)
        if to == "mixed" and category is not Category.DENY:
            wanted = [np.dtype(dt.as_dtype(out_dtype)) if d in dt.FLOAT_DTYPES and d != dt.float64 or
                      (d == dt.float64 and accumulation == "float64") else d for d in natural]
        outputs = list(node.outputs)
        renamed = {}
        if wanted != natural:   # the kernel's result, then a cast to the rule's output dtype
            for i, (name, have, want) in enumerate(zip(node.outputs, natural, wanted)):
                if have != want:
                    outputs[i] = renamed[name] = f"{name}.raw"
        types = [(d, shape) for d, (_, shape) in zip(natural, node.types)]
        for name, t in zip(outputs, types):
            self.types[name] = t
        acc = accumulation if to == "mixed" and category is Category.ALLOW else "float32"
        note = "" if acc in ("float32", "float64") else f" (asked {acc}; kernels accumulate in f32)"
        self.nodes.append(Node(name=node.name, op=node.op, args=args, outputs=outputs, out=node.out, types=types,
                               meta=dict(node.meta), amp=AmpInfo(category.value, f"{source}; {why}{note}",
                                                                 acc if acc == "float64" else "float32",
                                                                 mixed=to == "mixed")))
        for name, raw in renamed.items():
            want = wanted[node.outputs.index(name)]
            shape = self.types[raw][1]
            # named after the value it makes, as the other casts are
            self.nodes.append(Node(name=name, op="cast", args={"x": Ref(raw), "dtype": want},
                                   outputs=[name], out=0, types=[(want, shape)],
                                   amp=AmpInfo("cast", f"{node.name}'s rule gives output dtype "
                                                       f"{dt.short_name(want)}")))
            self.types[name] = (want, shape)

    def _targets(self, node, category, floats, computed) -> tuple:
        """("mixed" or "original", why)."""
        mixed = dt.short_name(self.mixed)
        if node.name in self.keep:
            return "original", "kept in its original dtype (keep=)"
        if not floats:
            return "original", "no float input to convert"
        if category is Category.ALLOW:
            return "mixed", f"float inputs in {mixed}"
        if category is Category.DENY:
            return "original", "float inputs in their original dtypes"
        if not computed:
            return "original", "no computed float input (constants only)"
        for n in computed:
            if self.types[n][0] != self.mixed:
                return "original", f"input {n} is {dt.short_name(self.types[n][0])}"
        for n in floats:
            if n in self.constants and self.types[n][0] != self.mixed and not self._fits(n):
                return "original", f"constant {n} has values outside {mixed}'s finite range"
        return "mixed", f"every computed float input is {mixed}"

    def _fits(self, name: str) -> bool:
        """Whether a constant converts to the mixed dtype without finite values becoming inf
        (checked once per constant: several nodes may read it)."""
        found = self.fits.get(name)
        if found is None:
            try:
                _converted_constant(name, self.constants[name], self.mixed)
                found = True
            except ValueError:
                found = False
            self.fits[name] = found
        return found

    def _rule(self, node, spec) -> tuple:
        call = Call(spec, _placeholders(node.args, self.types, self.graph.constants))
        call.storage_dtype = np.dtype(node.dtype)
        category, accumulation, output = mp.conversion_for(call, self.mixed.name)
        return category, accumulation, output, _rule_source(node.op, category)

    def _output_dtypes(self, node, args) -> list:
        """The dtypes the node's outputs have with these (converted) arguments."""
        spec = lookup(node.op, "node op")
        if node.op == "onnx.program":   # host steps of an imported model, each by its own rule
            from ..onnx.host_programs import result_dtypes
            return [np.dtype(d) for d in result_dtypes(args, lambda ref: self.types[ref.name][0])]
        if spec.host:
            names = ref_names(args)
            out = spec.result_type(args, self.types[names[0]][0] if names else node.dtype)
        else:
            concrete = _placeholders(args, self.types, self.constants)
            try:
                out = spec.prepare(spec.validate(**concrete)).dtype
            except (ValueError, TypeError):
                # Shapes with dims known only at run time (an imported model's named dims) can
                # make placeholders inconsistent; the result then follows the float inputs.
                out = _following_dtype(node, args, self.types)
        result = []
        for i, (dtype, _) in enumerate(node.types):
            if i == 0:
                result.append(np.dtype(out))
            else:   # further results (lstm's states) follow the first when they are float
                result.append(np.dtype(out) if dtype in dt.FLOAT_DTYPES and out in dt.FLOAT_DTYPES else dtype)
        return result


def _following_dtype(node, args, types) -> np.dtype:
    """A node's result dtype as its float inputs have it now (the first float one), for a float node."""
    if node.dtype not in dt.FLOAT_DTYPES:
        return node.dtype
    for name in ref_names(args):
        if types[name][0] in dt.FLOAT_DTYPES:
            return types[name][0]
    return node.dtype


def _placeholders(args, types, constants):
    """``args`` with each computed value as a zero-strided array of its dtype and shape (no memory)
    and each constant as itself: what validation and the rules look at. A dim known only at run
    time (a name or None) is 1."""
    def value(name):
        if name in constants:
            return constants[name]
        dtype, shape = types[name]
        shape = tuple(d if type(d) is int else 1 for d in shape)
        return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=shape, strides=(0,) * len(shape),
                                               writeable=False)
    return fill(args, value)


def _rule_source(op: str, category) -> str:
    for name, func in reversed(mp.override.get()):
        if name == op:
            return f"conversion_override {getattr(func, '__name__', 'rule')}: {category.name}"
    levels = mp.user_rules.get(op)
    if levels:
        level = max(levels)
        return f"rule {getattr(levels[level], '__name__', 'rule')} (level {level}): {category.name}"
    return f"default rule: {category.name}"


def _converted_constant(name, array, dtype) -> np.ndarray:
    converted = quietly(dt.round_to, array, dtype, over="ignore", invalid="ignore") if array.dtype != dtype else array
    converted = np.asarray(converted, dtype=dtype)
    overflow = np.isfinite(array.astype(np.float64)) & ~np.isfinite(converted.astype(np.float64))
    if overflow.any():
        worst = float(np.max(np.abs(array.astype(np.float64)[overflow])))
        raise ValueError(f"constant {name}: {int(overflow.sum())} value(s) outside {np.dtype(dtype).name}'s finite "
                         f"range (largest magnitude {worst:g}); they would become inf, and polyeng does not clamp "
                         f"silently. Keep the nodes that read it in their original dtype (keep=, or a rule)"
                         + (", or use bfloat16" if np.dtype(dtype) == np.float16 else ""))
    converted.flags.writeable = False
    return converted
