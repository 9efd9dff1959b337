"""What a model costs to start and to hold, on polyeng and on onnxruntime, each in a fresh process.

For every file of ``polyeng bench --models`` (or those whose name contains one of ``--cases``),
the same inputs (saved by this process) are run by a new Python process per runtime:

- ``import_s``: importing the runtime (``polyeng.onnx``; ``onnxruntime``);
- ``load_s``: ``polyeng.onnx.load`` / ``onnxruntime.InferenceSession``;
- ``first_s``, ``second_s``: the first two calls (polyeng plans a signature on its first call
  and builds its oneDNN programs on its second; both are part of what a user waits for);
- ``median_s``: the median of the next ``--calls`` calls;
- ``max_rel_diff``: the largest difference of the last outputs, relative to onnxruntime's largest
  magnitude (a fast wrong result is seen, not ranked);
- ``peak_mb``: the process's peak resident memory after those calls, less its resident memory
  before the runtime was imported (numpy and the inputs loaded; ``/proc/self/clear_refs``
  resets the peak there), so it counts the runtime's code, the model and every buffer the runs
  held.

Each process runs twice and the second is reported: the first fills numba's disk cache (a warm
kernel cache, as after ``polyeng warmup``) and the system's page cache (the libraries and the
file). Linux only (``/proc``). The processes get no environment variables
beyond PATH and HOME, as a user's plain script runs (and ``POLYENG_ONNX_CACHE_DIR`` where it is
set: the test suite keeps its converted models apart from the user's).

    python benchmarks/model_costs.py [--cases bert,resnet] [--calls 30] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import numpy as np
runtime, path, npz, calls, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
saved = np.load(npz)
names = [n for n in saved.files]
arrays = [saved[n] for n in names]

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024.0
with open("/proc/self/clear_refs", "w") as f:   # the peak resident set from here
    f.write("5")
base = status("VmRSS:")
t0 = time.perf_counter()
if runtime == "polyeng":
    import polyeng.onnx
    t1 = time.perf_counter()
    graph = polyeng.onnx.load(path)
    call = lambda: graph(*arrays)
else:
    import onnxruntime
    t1 = time.perf_counter()
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, arrays))
    call = lambda: session.run(None, feed)
t2 = time.perf_counter()
call()
t3 = time.perf_counter()
call()
t4 = time.perf_counter()
times = []
for _ in range(calls):
    began = time.perf_counter()
    result = call()
    times.append(time.perf_counter() - began)
peak = status("VmHWM:") - base
np.savez(out, *[np.asarray(r, np.float32) for r in (result if isinstance(result, (list, tuple)) else [result])])
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_s": t3 - t2, "second_s": t4 - t3,
                  "median_s": float(np.median(times)), "peak_mb": peak}))
"""


def _entries(cases):
    from polyeng.bench.models import model_files
    return model_files(cases)


def _path_and_inputs(entry):
    """(file path, {name: array}) as ``bench --models`` makes them."""
    from polyeng.bench.models import file_graph_and_inputs
    path, _, inputs = file_graph_and_inputs(entry)
    return path, {i["name"]: a for i, a in zip(inputs.described, inputs.arrays)}


def _child(runtime, path, npz, calls, out) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    # where kept conversions go, only where it is set (the test suite keeps its own apart)
    env.update({k: os.environ[k] for k in ("POLYENG_ONNX_CACHE_DIR",) if os.environ.get(k)})
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, runtime, path, npz, str(calls), out], env=env,
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"error": "no result in 600 s"}
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _largest_difference(ours: str, theirs: str) -> float:
    """The largest difference of the outputs, relative to the largest magnitude of onnxruntime's;
    inf where the outputs differ in count or shape, or hold NaN in other places."""
    import numpy as np
    with np.load(ours) as a, np.load(theirs) as b:
        if sorted(a.files) != sorted(b.files):
            return float("inf")
        worst = 0.0
        for name in b.files:
            got, want = a[name], b[name]
            if got.shape != want.shape or not np.array_equal(np.isnan(got), np.isnan(want)):
                return float("inf")
            if not want.size or np.isnan(want).all():
                continue
            scale = max(float(np.nanmax(np.abs(want))), 1e-30)
            worst = max(worst, float(np.nanmax(np.abs(got - want))) / scale)
        return worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated parts of file names (default: every file)")
    parser.add_argument("--calls", type=int, default=30, help="timed calls after the first two")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    import numpy as np
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for entry in _entries(args.cases):
            path, feed = _path_and_inputs(entry)
            npz = os.path.join(folder, "inputs.npz")
            np.savez(npz, **feed)
            size = "x".join(str(n) for n in next(iter(feed.values())).shape)
            ours, theirs = os.path.join(folder, "polyeng.npz"), os.path.join(folder, "onnxruntime.npz")
            _child("polyeng", path, npz, args.calls, ours)   # fills numba's disk cache
            _child("onnxruntime", path, npz, args.calls, theirs)   # and the page cache, for both
            row = {"file": entry["file"], "input": size,
                   "polyeng": _child("polyeng", path, npz, args.calls, ours),
                   "onnxruntime": _child("onnxruntime", path, npz, args.calls, theirs)}
            if "error" not in row["polyeng"] and "error" not in row["onnxruntime"]:
                row["max_rel_diff"] = _largest_difference(ours, theirs)
            rows.append(row)
            _print(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def _print(row) -> None:
    def cell(r, key, scale, fmt):
        return "error" if "error" in r else format(r[key] * scale, fmt)
    p, o = row["polyeng"], row["onnxruntime"]
    parts = [f"{row['file']:<28} {row['input']:<10}"]
    for key, scale, fmt, unit in (("import_s", 1e3, ".0f", "ms"), ("load_s", 1e3, ".0f", "ms"),
                                  ("first_s", 1e3, ".1f", "ms"), ("second_s", 1e3, ".1f", "ms"),
                                  ("median_s", 1e3, ".3f", "ms"), ("peak_mb", 1, ".1f", "MB")):
        parts.append(f"{key[:-2] if key.endswith('_s') else key[:-3]} {cell(p, key, scale, fmt)}/{cell(o, key, scale, fmt)} {unit}")
    if "max_rel_diff" in row:
        parts.append(f"diff {row['max_rel_diff']:.1e}")
    print("  ".join(parts), flush=True)
    for name, r in (("polyeng", p), ("onnxruntime", o)):
        if "error" in r:
            print(f"  {name}: {r['error']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
