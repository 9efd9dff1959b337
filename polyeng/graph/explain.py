"""``graph.explain(*inputs)``: the selector's decision for every node on these inputs."""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.dispatch import decide, make_call
from ..engine.plugins import registry
from .runner import Program


@dataclass
class NodeDecision:
    """A node and its decision (None for numpy nodes, which run with numpy on the host), and what the
    chosen kernel says it does beyond the op (``note``: ONEDNN's constant weights reordered once)."""
    node: object
    decision: object
    note: str = ""

    def cells(self) -> tuple:
        d = self.decision
        if d is None:
            return (self.node.name, self.node.op, "numpy", "(host)", "", "", "")
        return (self.node.name, self.node.op, d.engine, d.step, f"fpm:{d.fp_math_mode}", d.compute_type, self.note)

    def __str__(self) -> str:
        return "  ".join(self.cells()).rstrip()


class GraphExplanation(list):
    """One :class:`NodeDecision` per node, in node order; ``str()`` is a table."""

    def __str__(self) -> str:
        rows = [("node", "op", "engine", "step", "mode", "compute", "note")] + [entry.cells() for entry in self]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def explain_graph(graph, inputs: list) -> GraphExplanation:
    """The graph run on ``inputs`` (as any run) with an observer asking the selector, with every
    engine probed, for each node's decision before the node runs."""
    reg = registry()
    found = GraphExplanation()

    def observe(step, kwargs):
        spec = step.spec
        if spec.host:
            found.append(NodeDecision(step.node, None))
            return
        call = make_call(spec, spec.validate(**kwargs))
        decision = decide(call, reg, probe_all=True)
        found.append(NodeDecision(step.node, decision, _note(reg.kernel(spec.name, decision.engine), call)))
    Program(graph).run(inputs, observe)
    return found


def _note(kernel, call) -> str:
    """The chosen kernel's ``note(call)`` (a kernel function may carry one), else ""."""
    fn = kernel.fn
    load = getattr(fn, "load", None)   # a lazy kernel: its module is imported by now (the node ran)
    try:
        fn = load() if load is not None else fn
        note = getattr(fn, "note", None)
        return (note(call) or "") if note is not None else ""
    except Exception as exc:
        return f"note raised {type(exc).__name__}"
