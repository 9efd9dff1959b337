"""polyeng's thread policy as a user meets it: each case in a fresh plain process.

Every case runs in a child process whose environment has none of the variables that tune thread
pools (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``, ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
``NUMBA_NUM_THREADS``, ``NUMBA_THREADING_LAYER``, ``POLYENG_NUM_THREADS``), three ways:

- idle: nothing else runs;
- busy: one neighbour process spins (``python -c "while True: pass"``) for the whole child;
- tuned: idle, with ``OMP_WAIT_POLICY=PASSIVE`` exported first, the setting that made a plain
  process as fast as ``polyeng run`` before polyeng set a policy of its own.

Cases: the three bundled models (opset 17 exports, ``bench --models`` sizes) with onnxruntime
timed in the same child; lstm (seq 64, batch 32, 256 -> 256), linear (64, 512) x (2048, 512),
layer_norm (64, 384), softmax (96, 256), all f32; and a loop of 200 x (layer_norm (256, 384) then
linear 384 -> 384). Each child reports the median of its timed calls; the parent prints
in-process/tuned and busy/idle per case, and polyeng/onnxruntime per model.

    python benchmarks/threads.py [--cases lstm,encoder] [--repeat 30] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

SCRUBBED = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS",
            "NUMBA_THREADING_LAYER", "POLYENG_NUM_THREADS", "MKL_NUM_THREADS")
MODELS = ("lstm_lm", "encoder", "unet")
OPS = ("lstm", "linear", "layer_norm", "softmax", "loop")

CHILD = r'''
import json, statistics, sys, time
import numpy as np
case, repeat = sys.argv[1], int(sys.argv[2])
import polyeng
rng = np.random.default_rng(0)

def timed(fn, repeat):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3

out = {}
if case in ("lstm_lm", "encoder", "unet"):
    import os
    import polyeng.onnx
    from polyeng import models
    from polyeng.bench.inputs import model_inputs
    from polyeng.bench.models import SIZES
    from polyeng.bench.runtimes import onnxruntime_session
    path = os.path.join(os.path.dirname(models.__file__), f"{case}_opset17.onnx")
    graph = polyeng.onnx.load(path)
    arrays = model_inputs(graph, {}, SIZES[case]).arrays
    out["polyeng"] = timed(lambda: graph(*arrays), repeat)
    session = onnxruntime_session(path)
    if session is not None:
        feed = {i.name: a for i, a in zip(session.get_inputs(), arrays)}
        out["onnxruntime"] = timed(lambda: session.run(None, feed), repeat)
else:
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    if case == "lstm":
        x, params = f32(64, 32, 256), [(f32(1024, 256), f32(1024, 256), f32(1024), f32(1024))]
        fn = lambda: polyeng.lstm(x, params)
    elif case == "linear":
        x, w = f32(64, 512), f32(2048, 512)
        fn = lambda: polyeng.linear(x, w)
    elif case == "layer_norm":
        x = f32(64, 384)
        fn = lambda: polyeng.layer_norm(x, 384)
    elif case == "softmax":
        x = f32(96, 256)
        fn = lambda: polyeng.softmax(x)
    else:
        x, w, b = f32(256, 384), f32(384, 384), f32(384)
        def fn():
            h = x
            for _ in range(200):
                h = polyeng.linear(polyeng.layer_norm(h, 384), w, b)
    out["polyeng"] = timed(fn, repeat if case != "loop" else max(5, repeat // 3))
print(json.dumps(out))
'''


def child_env(tuned: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    if tuned:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def run_child(case: str, repeat: int, *, busy: bool = False, tuned: bool = False) -> dict:
    neighbour = None
    if busy:
        neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.2)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, case, str(repeat)], env=child_env(tuned),
                              capture_output=True, text=True, timeout=900)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    if done.returncode != 0:
        raise RuntimeError(f"case {case} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help="comma list of cases (default: all): " + ", ".join(MODELS + OPS))
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",")] if args.cases else list(MODELS + OPS)
    rows, report = [], {"cases": {}}
    print(f"{'case':12} {'idle ms':>9} {'busy ms':>9} {'tuned ms':>9} {'idle/tuned':>11} {'busy/idle':>10} "
          f"{'ort ms':>8} {'ort/polyeng':>12}")
    for case in cases:
        idle = run_child(case, args.repeat)
        busy = run_child(case, args.repeat, busy=True)
        tuned = run_child(case, args.repeat, tuned=True)
        entry = {"idle": idle, "busy": busy, "tuned": tuned,
                 "idle_over_tuned": idle["polyeng"] / tuned["polyeng"],
                 "busy_over_idle": busy["polyeng"] / idle["polyeng"]}
        ort = idle.get("onnxruntime")
        if ort:
            entry["ort_over_polyeng"] = ort / idle["polyeng"]
        report["cases"][case] = entry
        rows.append(entry)
        ort_cells = f"{ort:8.2f} {entry['ort_over_polyeng']:12.2f}" if ort else f"{'-':>8} {'-':>12}"
        print(f"{case:12} {idle['polyeng']:9.2f} {busy['polyeng']:9.2f} {tuned['polyeng']:9.2f} "
              f"{entry['idle_over_tuned']:11.2f} {entry['busy_over_idle']:10.2f} {ort_cells}", flush=True)
    ratios = [report["cases"][m]["ort_over_polyeng"] for m in MODELS
              if m in report["cases"] and "ort_over_polyeng" in report["cases"][m]]
    if ratios:
        report["models_geomean_ort_over_polyeng"] = math.exp(statistics.fmean(map(math.log, ratios)))
        print(f"bundled models: onnxruntime/polyeng geometric mean {report['models_geomean_ort_over_polyeng']:.2f}x "
              f"(higher: polyeng faster)")
    print(f"worst idle/tuned {max(e['idle_over_tuned'] for e in rows):.2f}, "
          f"worst busy/idle {max(e['busy_over_idle'] for e in rows):.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
