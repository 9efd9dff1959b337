"""``print(graph)``: one line per node with its op, inputs, output dtype and shape, and after a
mixed precision pass its category and why."""
from __future__ import annotations

import numpy as np

from ..engine.dtypes import short_name
from .ir import type_text


def _attrs_text(node) -> str:
    shown = []
    for name, value in node.attrs.items():
        if value is None:
            continue
        if name == "shape" and node.meta.get("batch_relative"):
            dims = ", ".join(["batch"] + [str(d) for d in value[1:]]) + ("," if len(value) == 1 else "")
            shown.append(f"shape=({dims})")   # shown whole: the batch's place is the point
            continue
        if name == "key" and node.op in ("np.getitem", "onnx.getitem"):
            text = key_text(value)
        elif isinstance(value, np.dtype) or isinstance(value, type) and issubclass(value, np.generic):
            text = short_name(np.dtype(value))
        else:
            text = repr(value)
        shown.append(f"{name}={text if len(text) <= 24 else text[:21] + '...'}")
    return ", ".join(shown)


def key_text(key) -> str:
    """An indexing key as written in Python: ``[:, 0]``, ``[..., 1:3]``."""
    def one(k):
        if isinstance(k, slice):
            text = ":".join("" if v is None else str(v) for v in (k.start, k.stop))
            return text + (f":{k.step}" if k.step is not None else "")
        if k is Ellipsis:
            return "..."
        if k is None:
            return "None"
        return repr(k)
    return "[" + ", ".join(one(k) for k in (key if isinstance(key, tuple) else (key,))) + "]"


def table(graph) -> str:
    const_bytes = sum(a.nbytes for a in graph.constants.values())
    lines = [f"graph {graph.name}: {len(graph.nodes)} nodes, {len(graph.constants)} constants "
             f"({const_bytes / 1e6:.2f} MB)"]
    lines.append("  inputs:  " + ", ".join(f"{v.name} {type_text(v.dtype, v.shape)}" for v in graph.inputs))
    rows = [("node", "op", "inputs", "output", "amp", "why")]
    for node in graph.nodes:
        inputs = ", ".join(node.inputs)
        attrs = _attrs_text(node)
        if node.op == "onnx.program":   # host steps run as one node: its inputs less the constants, and its steps
            inputs = ", ".join(dict.fromkeys(n for n in node.inputs if n not in graph.constants))
            steps = [step[1].removeprefix("onnx.") for step in node.args["steps"]]
            attrs = f"{len(steps)} host steps ({', '.join(f'{op} {steps.count(op)}' for op in dict.fromkeys(steps))})"
        if attrs:
            inputs = f"{inputs}; {attrs}" if inputs else attrs
        outputs = ", ".join(f"{name} {type_text(*t)}" for name, t in zip(node.outputs, node.types))
        amp = node.amp
        rows.append((node.name, node.op, inputs, outputs, amp.category if amp else "", amp.why if amp else ""))
    if not any(r[4] for r in rows[1:]):
        rows = [r[:4] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]
        lines.append("  " + "  ".join(cells).rstrip())
    lines.append("  outputs: " + ", ".join(f"{v.name} {type_text(v.dtype, v.shape)}" for v in graph.outputs))
    from .fusing import summary
    fused = summary(graph)
    if fused:
        lines.append(f"  {fused} (POLYENG_DISABLE_FUSIONS=<names> turns them off)")
    return "\n".join(lines)
