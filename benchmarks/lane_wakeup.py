"""What a oneDNN program's lanes cost above their work: a small CNN at batch 8, run as one program.

Interleaved, in one process, the median of each of:

- one thread: the whole program in the compiled loop on this thread;
- each lane alone: a lane's program (4 images) on this thread;
- lanes, Python thread: the second lane on a Python thread woken by a queue
  (``lanes._on_threads``), as before the compiled lane workers;
- lanes, compiled worker: the second lane on a thread that waits in compiled code
  (``_lane_worker.py``), as lanes run now.

The lanes' ideal is the slower lane alone; the rest is the cost of handing a lane over.

    python benchmarks/lane_wakeup.py [--repeat 15] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import polyeng
from polyeng.graph import fuse, trace
from polyeng.graph.segments import Segment

RNG = np.random.default_rng(0)


def _w(cout, cin, k):
    return (RNG.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5).astype(np.float32)


STEM = _w(32, 3, 3)
FIRES = [(_w(8, 32, 1), _w(32, 8, 1), _w(32, 8, 3)), (_w(16, 64, 1), _w(32, 16, 1), _w(32, 16, 3))]
HEAD = _w(10, 64, 1)


def net(x):
    """A SqueezeNet of two fire modules: a stem, squeeze 1x1, expand 1x1 and 3x3, concat, pools."""
    y = polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(x, STEM, stride=2, padding=1)), 2)
    for squeeze, e1, e3 in FIRES:
        s = polyeng.relu(polyeng.conv2d(y, squeeze))
        y = polyeng.concat([polyeng.relu(polyeng.conv2d(s, e1)), polyeng.relu(polyeng.conv2d(s, e3, padding=1))],
                           axis=1)
    return polyeng.mean(polyeng.relu(polyeng.conv2d(y, HEAD)), axis=(2, 3))


def _median_us(fn, calls=40):
    for _ in range(10):
        fn()
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    from polyeng.backends.onednn import _lane_worker
    x = RNG.standard_normal((8, 3, 64, 64)).astype(np.float32)
    graph = fuse(trace(net, x))
    graph(x)
    plan = graph._compiled().plans[next(iter(graph._compiled().plans))]
    segments = [e for e in plan if type(e) is Segment]
    if len(segments) != 1 or not hasattr(segments[0].program, "_lanes"):
        raise SystemExit("the net did not plan as one oneDNN program (is the onednn engine available?)")
    program = segments[0].program
    program.run([x])
    lanes = program._lanes.get(2) or program._make(2)
    if lanes is None or len(lanes) != 2:
        raise SystemExit("the program did not build two lanes")
    outs = [np.empty(shape, dtype) for shape, dtype in program.outputs_as]
    arrays = [x]
    compiled = _lane_worker.available()

    def on_python_threads():
        real = _lane_worker.available
        _lane_worker.available = lambda: False
        try:
            program._in_lanes(lanes, arrays, 2)
        finally:
            _lane_worker.available = real

    ways = {"one thread": lambda: program.whole.run(arrays, outs, 1, True),
            "lane 1 alone": lambda: lanes[0][2].run(*program._part(*lanes[0][:2], arrays, outs), 1, True),
            "lane 2 alone": lambda: lanes[1][2].run(*program._part(*lanes[1][:2], arrays, outs), 1, True),
            "lanes, Python thread": on_python_threads}
    if compiled:
        ways["lanes, compiled worker"] = lambda: program._in_lanes(lanes, arrays, 2)
    results = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, fn in ways.items():
            results[name].append(_median_us(fn))
    medians = {name: statistics.median(v) for name, v in results.items()}
    print(f"lanes of a CNN at batch 8 (x {x.shape}), median us of {args.repeat} rounds of 40 calls; "
          f"threads {polyeng.get_num_threads()}")
    for name, value in medians.items():
        print(f"  {name:<24} {value:9.1f}")
    if not compiled:
        print("  (no compiled lane worker here: " + str(_lane_worker._state.get("error")) + ")")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"medians_us": medians, "rounds_us": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
