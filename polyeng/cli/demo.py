"""``polyeng demo``: the main job on a real model.

The bundled BERT-style encoder (an ONNX file exported from PyTorch) runs on every available
engine, in float32, in float32 under ``fp_math_mode("bf16")`` (products may compute in bf16), and
converted to bfloat16 by the mixed precision pass; each run, after up to 12 untimed calls (at most
2 s, as ``polyeng bench --models``: a graph builds its oneDNN programs and tries its thread counts
in its first calls), shows its median time, its speed against onnxruntime's on the same file and
inputs (timed in the same process), how far it is from BASIC's float32 result and from
onnxruntime's, and which engine each op ran on. Sizes are small so that a first run, compiling
numba's kernels, stays short.
"""
from __future__ import annotations

from collections import Counter

import polyeng
from .. import models
from ..ops import OPS
from ..bench.inputs import model_inputs
from ..bench.models import warm_up
from ..bench.runtimes import as_list, load_graph, onnxruntime_session
from .console import UsageError
from .run import amp_counts, amp_text, decisions, engine_scope, max_abs_diff, time_runs

MODEL = "encoder_opset17.onnx"
SIZES = {"batch": 4, "seq": 32}
PRECISIONS = ("f32", "f32 fpm:bf16", "bf16 AMP")


def ops_by_engine(rows: list[dict]) -> str:
    """Where the selector put the calls: ``numba 44`` when one engine ran them all, else each
    engine's ops; the host's shape plumbing is left out (the header counts it)."""
    ops: dict = {}
    for row in rows:
        if row["engine"] != "host":
            ops.setdefault(row["engine"], Counter())[row["op"]] += 1
    if len(ops) == 1:
        [(engine, counts)] = ops.items()
        return f"all on {engine} ({sum(counts.values())} calls)"
    return "; ".join(f"{engine}: {', '.join(sorted(counts))}" for engine, counts in ops.items())


def _diff(got: list, want: list | None) -> str:
    if want is None:
        return "-"
    worst = [max_abs_diff(g, w) for g, w in zip(got, want)]
    return "shapes differ" if None in worst else f"{max(worst):.2e}"


def _kept_in_f32(graph) -> str:
    kept = Counter(n.op for n in graph.nodes
                   if n.amp is not None and n.amp.category == "deny" and n.op in OPS)
    return ", ".join(f"{op} {count}" for op, count in kept.items()) or "none"


def run_demo(repeats: int = 3) -> int:
    entry = models.entry(MODEL)
    path = str(models.path(MODEL))
    graph = load_graph(path)
    prepared = model_inputs(graph, {}, SIZES)
    inputs = prepared.arrays
    mixed = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="ignore")
    engines = [e.name for e in polyeng.engines() if e.available]
    host = sum(1 for n in graph.nodes if n.op not in OPS)
    print(f"model: {MODEL} ({entry['exporter']} exporter, opset {entry['opset']}): {entry['description']}")
    print(f"  {len(graph.nodes)} nodes, {host} of them shape plumbing run on the host (numpy); inputs "
          + ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in prepared.described))
    print(f"  bf16 AMP (polyeng.amp.to_mixed_precision): {amp_text(amp_counts(mixed))}; "
          f"kept in f32 by their rule: {_kept_in_f32(mixed)}")
    session = onnxruntime_session(path)
    reference = peer_ms = None
    if session is None:
        print("  onnxruntime is not installed (pip install 'polyeng[onnx]'): no reference column")
    else:
        import onnxruntime
        feed = {i["name"]: a for i, a in zip(prepared.described, inputs)}
        reference = session.run(None, feed)
        peer_ms = time_runs(lambda: session.run(None, feed), max(repeats, 5))["median_s"] * 1e3
        print(f"  reference: onnxruntime {onnxruntime.__version__} on the same file: {peer_ms:.3f} ms "
              f"(median of {max(repeats, 5)} runs)")
    print(f"  engines: {', '.join(engines)}, then the default selection (recommend); median of {repeats} runs; "
          "speed: onnxruntime's time / this row's (above 1: faster); vs: max |difference| of the outputs")
    if "numba" in engines:
        print("compiling numba kernels (first run only)...", flush=True)
    header = ("engine", "precision", "median ms", "speed", "vs basic f32", "vs onnxruntime", "ops by engine")
    print(f"\n  {header[0]:<10} {header[1]:<12} {header[2]:>10}  {header[3]:>6}  {header[4]:>12}  {header[5]:>14}  "
          f"{header[6]}")
    basic_f32 = None
    for engine in [e for e in engines if e == "basic"] + [e for e in engines if e != "basic"] + ["recommend"]:
        for precision, runnable in zip(PRECISIONS, (graph, graph, mixed)):
            mode = "bf16" if "fpm:bf16" in precision else "strict"
            with engine_scope(engine), polyeng.fp_math_mode(mode):
                # as polyeng bench --models: a graph plans on its first call, builds its oneDNN
                # programs on the second and chooses its thread counts on the next few
                warm_up(lambda: runnable(*inputs))
                timing = time_runs(lambda: runnable(*inputs), repeats)
                rows = decisions(runnable.explain(*inputs))
            outputs = as_list(timing["result"])
            basic_f32 = outputs if basic_f32 is None else basic_f32
            ms = timing["median_s"] * 1e3
            speed = f"{peer_ms / ms:6.2f}" if peer_ms else "     -"
            print(f"  {engine:<10} {precision:<12} {ms:10.3f}  {speed}  {_diff(outputs, basic_f32):>12}  "
                  f"{_diff(outputs, reference):>14}  {ops_by_engine(rows)}", flush=True)
    return 0


def run(args) -> int:
    if args.repeats < 1:
        raise UsageError(f"--repeats {args.repeats}: expected a positive number")
    return run_demo(repeats=args.repeats)
