"""How much of polyeng one call runs through, and what the first call of a process costs.

    python benchmarks/call_path.py [--json FILE]

Call path: a cached call (the plan already made) is traced with ``sys.setprofile``; it
reports the polyeng files whose functions ran and the hops, calls from a function in one
file to a function in another. Three calls are traced: ``softmax(x)`` on a host array,
``max_pool2d`` on an OpenCL device tensor (skipped when OPENCL is unavailable), and a planned
run of a one-node graph (``softmax``: the graph call around the node included).

First call: a fresh interpreter imports polyeng, then times a small ``softmax`` and lists
the modules that call imported (numba and pyopencl should not be among them when BASIC
runs it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

import numpy as np


def trace(fn) -> dict:
    """Files and cross-file hops of one call of ``fn`` inside the polyeng package."""
    import polyeng
    root = os.path.dirname(polyeng.__file__)
    files, hops = set(), 0

    def profile(frame, event, arg):
        nonlocal hops
        if event != "call":
            return
        callee = frame.f_code.co_filename
        if not callee.startswith(root):
            return
        files.add(os.path.relpath(callee, root))
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(root):
            caller = caller.f_back   # through numpy or library frames back to polyeng
        if caller is not None and caller.f_code.co_filename != callee:
            hops += 1
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return {"files": len(files), "hops": hops, "file_list": sorted(files)}


def call_paths() -> dict:
    import polyeng
    import polyeng.graph
    out = {}
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    polyeng.softmax(x)
    out["softmax"] = trace(lambda: polyeng.softmax(x))
    if {e.name: e for e in polyeng.engines()}["opencl"].available:
        t = polyeng.to_device(np.random.default_rng(0).standard_normal((1, 2, 16, 16)).astype(np.float32))
        polyeng.max_pool2d(t, 2)
        out["max_pool2d_opencl"] = trace(lambda: polyeng.max_pool2d(t, 2))
    node = polyeng.graph.trace(lambda v: polyeng.softmax(v), x)
    node(x)   # planned for this signature
    out["graph_node"] = trace(lambda: node(x))
    return out


FIRST_CALL = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import polyeng
    before = set(sys.modules)
    start = time.perf_counter()
    polyeng.softmax(np.ones(8, np.float32))
    seconds = time.perf_counter() - start
    new = sorted(set(sys.modules) - before)
    print(json.dumps({"seconds": seconds, "modules": len(new),
                      "numba": "numba" in sys.modules, "pyopencl": "pyopencl" in sys.modules,
                      "new_top_level": sorted({m.split('.')[0] for m in new})}))
""")


def first_call(runs: int = 3) -> dict:
    """Median of ``runs`` fresh processes."""
    results = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    results.sort(key=lambda r: r["seconds"])
    return results[len(results) // 2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures to this file")
    opts = parser.parse_args(argv)
    report = {"call_path": call_paths(), "first_call": first_call()}
    for name, r in report["call_path"].items():
        print(f"cached {name}: {r['files']} files, {r['hops']} hops")
        print("   " + ", ".join(r["file_list"]))
    f = report["first_call"]
    print(f"first small call in a fresh process: {f['seconds'] * 1e3:.1f} ms, {f['modules']} modules imported "
          f"(numba {'imported' if f['numba'] else 'not imported'}, "
          f"pyopencl {'imported' if f['pyopencl'] else 'not imported'})")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
