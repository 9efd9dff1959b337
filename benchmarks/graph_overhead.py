"""What running a graph costs above its kernels, per node, against calling the ops directly.

A chain of 200 tiny elementwise ops (4x4 f32: the kernels take about a microsecond) is run three
ways, interleaved, and the median of each is divided by the node count:

- direct: the op functions called one after another (validation and plan look-up per call);
- graph: the traced graph called (its plan for this input signature already made);
- kernels: the same kernels called in a loop with their arguments ready, nothing else.

graph - kernels is the graph's overhead per node.

    python benchmarks/graph_overhead.py [--engines basic numba] [--repeat 41] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import polyeng
from polyeng.graph import trace

NODES = 200


def chain(x):
    for _ in range(NODES // 4):
        x = polyeng.relu(x)
        x = polyeng.add(x, 1.0)
        x = polyeng.mul(x, 0.5)
        x = polyeng.sub(x, 0.25)
    return x


def _kernel_loop(graph, x):
    """A function calling each node's kernel with its arguments prepared in advance."""
    program = graph._compiled()
    released, program.released = program.released, [[] for _ in program.steps]
    try:   # every value kept, so each node's arguments can be read after the run
        env = program.run([x])
    finally:
        program.released = released
    plan = next(iter(program.plans.values()))
    calls = []
    for entry in plan:
        if entry is None:
            raise RuntimeError("a node has no planned entry; the comparison would be meaningless")
        bound = entry.execute.__self__   # the node's BoundPlan
        kernel = bound.first.kernel
        kwargs = dict(entry.fixed)
        kwargs.update((name, env[s]) for name, s in entry.simple)
        calls.append((kernel.fn, bound.prepared, kwargs))

    def run():
        for fn, prepared, kwargs in calls:
            fn(prepared, **kwargs)
    return run


def measure(engine: str, repeat: int) -> dict:
    x = np.full((4, 4), 0.5, np.float32)
    with polyeng.compute_eng(engine):
        graph = trace(chain, x)
        assert len(graph.nodes) == NODES
        np.testing.assert_array_equal(graph(x), chain(x))
        kernels = _kernel_loop(graph, x)
        times = {"direct": [], "graph": [], "kernels": []}
        runs = {"direct": lambda: chain(x), "graph": lambda: graph(x), "kernels": kernels}
        for _ in range(3):
            for fn in runs.values():
                fn()
        for _ in range(repeat):
            for name, fn in runs.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    per_node = {name: statistics.median(t) * 1e6 / NODES for name, t in times.items()}
    per_node["overhead"] = per_node["graph"] - per_node["kernels"]
    per_node["direct_overhead"] = per_node["direct"] - per_node["kernels"]
    return per_node


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", default=["basic", "numba"])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    results = {}
    print(f"{'engine':8} {'direct':>8} {'graph':>8} {'kernels':>8} {'graph overhead':>15} {'direct overhead':>16}"
          "   (us per node, medians)")
    for engine in args.engines:
        r = results[engine] = measure(engine, args.repeat)
        print(f"{engine:8} {r['direct']:8.2f} {r['graph']:8.2f} {r['kernels']:8.2f} {r['overhead']:15.2f} "
              f"{r['direct_overhead']:16.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"nodes": NODES, "us_per_node": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
