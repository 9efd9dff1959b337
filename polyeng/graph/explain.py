"""``graph.explain(*inputs)``: the selector's decision for every node on these inputs."""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.dispatch import decide, make_call, run
from ..engine.plugins import registry
from .runner import Program


@dataclass
class NodeDecision:
    """A node and its decision (None for numpy nodes, which run with numpy on the host)."""
    node: object
    decision: object

    def __str__(self) -> str:
        d = self.decision
        if d is None:
            return f"{self.node.name:<6} {self.node.op:<20} numpy (host)"
        return (f"{self.node.name:<6} {self.node.op:<20} {d.engine:<8} {d.step:<16} fpm:{d.fp_math_mode:<6} "
                f"{d.compute_type}")


class GraphExplanation(list):
    """One :class:`NodeDecision` per node, in node order; ``str()`` is a table."""

    def __str__(self) -> str:
        return "\n".join(str(entry) for entry in self)


def explain_graph(graph, inputs: list) -> GraphExplanation:
    program = Program(graph)
    env = [None] * program.size
    for s, array in program.constants:
        env[s] = array
    for s, value in zip(program.input_slots, inputs):
        env[s] = value
    reg = registry()
    found = GraphExplanation()
    for step in program.steps:
        kwargs = step.kwargs(env)
        if step.numpy is not None:
            found.append(NodeDecision(step.node, None))
            step.store(step.numpy(**kwargs), env)
            continue
        call = make_call(step.spec, step.spec.validate(**kwargs))
        found.append(NodeDecision(step.node, decide(call, reg, probe_all=True)))
        step.store(run(step.spec, **kwargs), env)
    return found
