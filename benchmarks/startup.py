"""First-call cost of every NUMBA op in a fresh process, with the on-disk cache cold and warm.

Each op runs in its own new process (so nothing is already compiled in memory); the time
reported is the first ``polyeng.<op>`` call on the example input of ``polyeng.examples``,
after ``import polyeng`` and after numba itself is imported (a once-per-process cost,
reported separately) and after one other op has run (numba's once-per-process setup of
its typing and target registries happens on the first kernel load; reported separately as
the primer's time). Usage: ``python benchmarks/startup.py [--dtype f32] [--json PATH]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import polyeng
from polyeng.engine.dtypes import as_dtype
from polyeng.examples import example_calls
t1 = time.perf_counter()
import numba
t2 = time.perf_counter()
op, dtype = sys.argv[1], as_dtype(sys.argv[2])
calls = example_calls(np.random.default_rng(0), dtype)
primer = "cast" if op != "cast" else "gelu"
args, kwargs = calls[primer]
with polyeng.compute_eng("numba", fallback=False):
    t2b = time.perf_counter()
    getattr(polyeng, primer)(*args, **kwargs)   # numba's once-per-process initialisation happens here
    args, kwargs = calls[op]
    t3 = time.perf_counter()
    getattr(polyeng, op)(*args, **kwargs)
    t4 = time.perf_counter()
    getattr(polyeng, op)(*args, **kwargs)
    t5 = time.perf_counter()
print(json.dumps({"import_polyeng_ms": (t1 - t0) * 1e3, "import_numba_ms": (t2 - t1) * 1e3,
                  "primer_ms": (t3 - t2b) * 1e3,
                  "first_call_ms": (t4 - t3) * 1e3, "second_call_ms": (t5 - t4) * 1e3}))
"""


def first_call(op: str, dtype: str, cache_dir: str) -> dict:
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p))
    out = subprocess.run([sys.executable, "-c", CHILD, op, dtype], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="f32")
    parser.add_argument("--ops", default="", help="comma-separated ops (default: every op)")
    parser.add_argument("--json", default="")
    opts = parser.parse_args(argv)
    import polyeng
    ops = [o for o in (opts.ops.split(",") if opts.ops else polyeng.engines()[0].ops)]
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        print(f"{'op':<22}{'cold ms':>10}{'warm ms':>10}{'2nd ms':>9}")
        for op in ops:
            cold = first_call(op, opts.dtype, cache_dir)
            warm = first_call(op, opts.dtype, cache_dir)
            rows.append({"op": op, "cold": cold, "warm": warm})
            print(f"{op:<22}{cold['first_call_ms']:>10.1f}{warm['first_call_ms']:>10.1f}"
                  f"{warm['second_call_ms']:>9.3f}")
    def median(key):
        values = sorted(r["warm"][key] for r in rows)
        return values[len(values) // 2]
    print(f"once per process (warm cache, medians): import polyeng {median('import_polyeng_ms'):.0f} ms, "
          f"import numba {median('import_numba_ms'):.0f} ms, first kernel load incl. numba setup "
          f"{median('primer_ms'):.0f} ms")
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
