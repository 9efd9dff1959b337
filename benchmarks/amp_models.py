"""The mixed precision pass on two models: the converted graph against its f32 graph, same engine.

Models (``polyeng.model_zoo``), batch 1:
- lstm_lm: embedding 10000x256, LSTM 256->512, linear 512->10000, 64 steps (ids (64, 1));
- encoder: a transformer encoder layer, hidden 768, 12 heads, ffn 3072, seq 128.

Each model is traced once, converted with ``to_mixed_precision`` to bfloat16 (and float16 with
``--dtypes``), and the graphs are timed in alternating blocks on the engine (NUMBA by default);
the speed-up is the f32 graph's median steady time over the converted graph's. The first run
after switching graphs is reported apart ("switch ms"): right after an f32 graph, OpenBLAS's
threads still spin and slow the parallel JIT kernels of a 16-bit graph. Accuracy beside it: the
largest absolute difference from the f32 graph's output and that difference relative to the
output's largest magnitude. The per-call fp math mode (f32 graph under ``fp_math_mode("bf16")``)
is timed too, for comparison.

    python benchmarks/amp_models.py [--engine numba] [--repeat 15] [--models lstm_lm encoder] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np

import polyeng
from polyeng import model_zoo
from polyeng.amp import to_mixed_precision
from polyeng.graph import trace


def build(name: str):
    rng = np.random.default_rng(1)
    if name == "lstm_lm":
        fn = model_zoo.lstm_language_model(vocab=10000, embed=256, hidden=512)
        x = rng.integers(0, 10000, size=(64, 1)).astype(np.int64)
    else:
        fn = model_zoo.encoder_layer(hidden=768, heads=12, ffn=3072)
        x = rng.standard_normal((1, 128, 768)).astype(np.float32)
    return fn, x


SAMPLES = 5     # steady runs per block
SETTLE = 0.25   # seconds of runs of the same graph before its steady runs


def _time(fns: dict, repeat: int) -> tuple:
    """Medians in ms: (steady, after a switch). Each round runs every graph in a block of its own.
    The first run of a block follows another graph's run: OpenBLAS's threads keep spinning for
    about 0.1 s after an f32 graph's products and slow the parallel JIT kernels of a 16-bit graph
    meanwhile; that first run is reported apart. The block then runs the graph for SETTLE
    seconds, and its last SAMPLES runs are the steady state of a model run again and again."""
    for fn in fns.values():   # warm: compile, plan
        fn()
        fn()
    steady = {name: [] for name in fns}
    switch = {name: [] for name in fns}
    for _ in range(max(1, repeat // SAMPLES)):
        for name, fn in fns.items():
            block_start = start = time.perf_counter()
            fn()
            switch[name].append(time.perf_counter() - start)
            while time.perf_counter() - block_start < SETTLE:
                fn()
            for _ in range(SAMPLES):
                start = time.perf_counter()
                fn()
                steady[name].append(time.perf_counter() - start)
    median = lambda d: {name: statistics.median(t) * 1e3 for name, t in d.items()}   # noqa: E731
    return median(steady), median(switch)


def _output(result):
    return result[0] if isinstance(result, tuple) else result


def measure(name: str, engine: str, dtypes, repeat: int) -> dict:
    fn, x = build(name)
    graph = trace(fn, x)
    converted = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy nodes have no rule: FOLLOW
        for dtype in dtypes:
            converted[dtype] = to_mixed_precision(graph, dtype)
    with polyeng.compute_eng(engine):
        reference = _output(graph(x)).astype(np.float64)
        fns = {"f32": lambda: graph(x)}
        fns.update({dtype: (lambda g=g: g(x)) for dtype, g in converted.items()})

        def per_call_mode():
            with polyeng.fp_math_mode("bf16"):
                return graph(x)
        fns["f32 graph, fp_math_mode bf16"] = per_call_mode
        ms, after_switch = _time(fns, repeat)
        rows = {}
        scale = float(np.max(np.abs(reference))) or 1.0
        for label, fn_ in fns.items():
            out = _output(fn_()).astype(np.float64)
            diff = float(np.max(np.abs(out - reference)))
            rows[label] = {"ms": ms[label], "speedup_vs_f32": ms["f32"] / ms[label], "max_abs_diff": diff,
                           "max_rel_diff": diff / scale, "ms_after_switch": after_switch[label]}
    for dtype, g in converted.items():
        rows[dtype]["casts"] = sum(1 for n in g.nodes if n.amp and n.amp.category == "cast")
        rows[dtype]["nodes_mixed"] = sum(1 for n in g.nodes if n.amp and n.amp.mixed)
        rows[dtype]["nodes"] = len(g.nodes)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="numba")
    parser.add_argument("--models", nargs="+", default=["lstm_lm", "encoder"], choices=["lstm_lm", "encoder"])
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16"], choices=["bfloat16", "float16"])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    results = {}
    print(f"{'model':8} {'graph':30} {'ms':>8} {'f32/this':>9} {'switch ms':>10} {'max|diff|':>10} {'rel':>9}  "
          f"(engine {args.engine}, medians of about {args.repeat})")
    for name in args.models:
        rows = results[name] = measure(name, args.engine, args.dtypes, args.repeat)
        for label, r in rows.items():
            extra = f"  {r['nodes_mixed']} of {r['nodes']} nodes mixed, {r['casts']} casts" if "casts" in r else ""
            print(f"{name:8} {label:30} {r['ms']:8.2f} {r['speedup_vs_f32']:9.2f} {r['ms_after_switch']:10.2f} "
                  f"{r['max_abs_diff']:10.3g} "
                  f"{r['max_rel_diff']:9.2g}{extra}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"engine": args.engine, "repeat": args.repeat, "results": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
