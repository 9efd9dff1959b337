"""What the fp math mode buys on ONEDNN: f32 work computed on the CPU's bf16 units.

- ``product``: ``linear`` of a (4096, 768) input by a constant (768, 768) weight: every engine
  in f32 (STRICT), then ONEDNN under ``fp_math_mode("bf16")``; the ratio is polyeng's best f32
  time over ONEDNN's bf16 time, with the bf16 result's largest error relative to the f32 result's
  largest magnitude.
- ``models``: the bundled encoder (``encoder_opset17.onnx``, batch 8, seq 64: its longest) and
  BERT from ``polyeng.models.text_zoo`` (batch 8, seq 128), each as an imported graph under the
  default selection: f32, f32 under ``fp_math_mode("bf16")``, and the bf16 AMP graph, against
  onnxruntime on the same file, all timed in this process.

Usage: ``python benchmarks/onednn_fpmath.py [--repeat 15]``. Compare ratios from one run only.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import crossover   # benchmarks/ is on the path of a script run from it
import polyeng


def median_ms(fn, repeat):
    fn()   # warm up: the first call builds the primitives
    return crossover.median_ms(fn, repeat)


def worst(got, want) -> float:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return float(np.abs(got - want).max() / np.abs(want).max())


def product(repeat) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 768)).astype(np.float32)
    w = rng.standard_normal((768, 768)).astype(np.float32)
    w.flags.writeable = False
    engines = [e.name for e in polyeng.engines() if e.available and e.name != "opencl"]
    f32 = {}
    for engine in engines:
        with polyeng.compute_eng(engine, fallback=False):
            f32[engine] = median_ms(lambda: polyeng.linear(x, w), repeat)
    best = min(f32, key=f32.get)
    want = polyeng.linear(x, w)
    print("linear 4096x768 by 768x768, f32: " + ", ".join(f"{e} {t:.2f} ms" for e, t in f32.items()))
    if "onednn" in engines:
        with polyeng.compute_eng("onednn", fallback=False), polyeng.fp_math_mode("bf16"):
            compute = polyeng.explain("linear", x, w).compute_type
            bf16 = median_ms(lambda: polyeng.linear(x, w), repeat)
            err = worst(polyeng.linear(x, w), want)
        print(f"onednn under fp_math_mode('bf16') (compute {compute}): {bf16:.2f} ms; best f32 ({best}) / this: "
              f"{f32[best] / bf16:.2f}x; relative error {err:.1e}")


def models(repeat) -> None:
    from polyeng import models as bundled
    from polyeng.bench.inputs import model_inputs
    from polyeng.bench.runtimes import as_list, load_graph, onnxruntime_session
    from polyeng.models import text_zoo
    files = [("encoder", str(bundled.path("encoder_opset17.onnx")), {"batch": 8, "seq": 64})]
    try:
        files.append(("bert", str(text_zoo.cached_export("bert", "torchscript")), {"batch": 8, "sequence": 128}))
    except Exception as exc:   # transformers or torch missing
        print(f"bert: not exported ({type(exc).__name__}: {exc})")
    for name, path, sizes in files:
        graph = load_graph(path)
        if name == "bert":
            feed = text_zoo.example_inputs("bert", sizes["batch"], sizes["sequence"])
            inputs = [feed[v.name] for v in graph.inputs]
        else:
            inputs = model_inputs(graph, {}, sizes).arrays
        mixed = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="ignore")
        want = as_list(graph(*inputs))
        row = {}
        session = onnxruntime_session(path)
        if session is not None:
            feed = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
            row["onnxruntime"] = median_ms(lambda: session.run(None, feed), repeat)
        row["f32"] = median_ms(lambda: graph(*inputs), repeat)
        with polyeng.fp_math_mode("bf16"):
            row["f32 fpm:bf16"] = median_ms(lambda: graph(*inputs), repeat)
            err_fpm = worst(as_list(graph(*inputs))[0], want[0])
        row["bf16 AMP"] = median_ms(lambda: mixed(*inputs), repeat)
        err_amp = worst(as_list(mixed(*inputs))[0], want[0])
        print(f"{name} {sizes}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in row.items())
              + f"; f32/fpm:bf16 {row['f32'] / row['f32 fpm:bf16']:.2f}x (error {err_fpm:.1e}), "
              f"f32/AMP {row['f32'] / row['bf16 AMP']:.2f}x (error {err_amp:.1e})"
              + (f"; onnxruntime/f32 {row['onnxruntime'] / row['f32']:.2f}, onnxruntime/fpm:bf16 "
                 f"{row['onnxruntime'] / row['f32 fpm:bf16']:.2f}" if "onnxruntime" in row else ""), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    opts = parser.parse_args(argv)
    product(opts.repeat)
    models(opts.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
