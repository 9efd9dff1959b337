"""``graph.profile(*inputs)``: where a run's time goes, per node and per op type.

The graph runs once to plan (not timed), then ``repeat`` times with each node's wall time taken
around it in the runner (validation, dispatch, the kernel and the release of dead values: what the
node costs the run). Per node the median over the runs is kept, so one slow run does not skew it;
the whole run's median (``run_ms``) is taken from the same runs, and what it has beyond the
nodes' sum (``outside_ms``) is the graph's own cost: binding the inputs, the plan look-up, the
outputs. Engines are the selector's decisions (``graph.explain``) for these inputs. A run of
nodes executed as one oneDNN program (``segments.py``) is one row, op ``onednn program``.
"""
from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Profile:
    """A graph's profile: ``nodes`` (one dict per node, in node order: name, op, engine, ms,
    share), ``ops`` (one dict per op type, most time first: op, count, ms, share), ``run_ms`` (the
    median run) and ``outside_ms`` (the run less its nodes)."""
    nodes: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    run_ms: float = 0.0
    outside_ms: float = 0.0
    repeat: int = 0

    def table(self, top: int = 15) -> str:
        """The op types, then the ``top`` slowest nodes, as text."""
        lines = [f"profile: median run {self.run_ms:.3f} ms over {self.repeat} runs; nodes "
                 f"{self.run_ms - self.outside_ms:.3f} ms, outside the nodes {self.outside_ms:.3f} ms",
                 "per op type:"]
        rows = [("op", "nodes", "ms", "share")] + [(o["op"], str(o["count"]), f"{o['ms']:.3f}",
                                                     f"{o['share'] * 100:.1f}%") for o in self.ops]
        lines += _columns(rows)
        slowest = sorted(self.nodes, key=lambda n: -n["ms"])[:top]
        lines.append(f"slowest {len(slowest)} of {len(self.nodes)} nodes:")
        rows = [("node", "op", "engine", "ms", "share")] + [
            (n["name"], n["op"], n["engine"], f"{n['ms']:.3f}", f"{n['share'] * 100:.1f}%") for n in slowest]
        lines += _columns(rows)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _columns(rows) -> list:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def profile_graph(graph, inputs: list, repeat: int = 10) -> Profile:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat={repeat!r}: expected a positive int")
    program = graph._compiled()
    program.run(inputs)   # plans every node for this signature
    per_node = [[] for _ in program.steps]
    runs = []
    spans = set()   # the oneDNN programs the timed runs ran
    for _ in range(repeat):
        times = [0.0] * len(program.steps)
        start = time.perf_counter()
        program.run(inputs, times=times)
        runs.append(time.perf_counter() - start)
        spans.update(program.programs_ran)
        for i, t in enumerate(times):
            per_node[i].append(t)
    engines = {}
    try:
        for entry in graph.explain(*inputs):
            engines[entry.node.name] = entry.decision.engine if entry.decision is not None else "host"
    except Exception:   # explain is informative only
        pass
    medians = [statistics.median(t) * 1e3 for t in per_node]
    total = sum(medians) or 1.0
    nodes = [{"name": step.node.name, "op": step.node.op, "engine": engines.get(step.node.name, ""), "ms": ms,
              "share": ms / total} for step, ms in zip(program.steps, medians)]
    for first, stop in sorted(spans, reverse=True):   # a oneDNN program's nodes: one row, timed as one
        steps = program.steps[first:stop]
        ms = sum(medians[first:stop])
        nodes[first:stop] = [{"name": f"{steps[0].node.name} .. {steps[-1].node.name} ({len(steps)} nodes)",
                              "op": "onednn program", "engine": "onednn", "ms": ms, "share": ms / total}]
    by_op, count = defaultdict(float), defaultdict(int)
    for n in nodes:
        by_op[n["op"]] += n["ms"]
        count[n["op"]] += 1
    ops = [{"op": op, "count": count[op], "ms": ms, "share": ms / total}
           for op, ms in sorted(by_op.items(), key=lambda kv: -kv[1])]
    run_ms = statistics.median(runs) * 1e3
    return Profile(nodes=nodes, ops=ops, run_ms=run_ms, outside_ms=max(0.0, run_ms - sum(medians)), repeat=repeat)
