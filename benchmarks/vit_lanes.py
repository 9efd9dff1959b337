"""A ViT wider than the bundled benchmark's, with and without the ``batch_first_unbind`` rewrite.

The ViT of ``polyeng/models/vision_zoo.py`` (timm's layout: qkv permuted to (3, B, H, N, D) and
unbound) is exported at the width given (default 192, 3 heads, 4 blocks, 64x64 pixels in 8x8
patches: 65 tokens), by the TorchScript exporter, and timed at batch 8 in this process,
interleaved: polyeng as loaded (the rewrite lets its oneDNN program split the batch into lanes),
polyeng with the rewrite turned off, and onnxruntime. Needs torch, onnx and onnxruntime.

    python benchmarks/vit_lanes.py [--width 192] [--repeat 7] [--calls 20] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np

import polyeng.onnx


def export(path: str, width: int, heads: int, depth: int, size: int = 64) -> None:
    import torch
    from polyeng.models import vision_zoo
    torch.manual_seed(0)
    model = vision_zoo._constructors()["vit"](size=size, patch=8, dim=width, heads=heads, depth=depth).eval()
    x = torch.randn(2, 3, size, size)
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["logits"], opset_version=17,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)


def measure(width=192, heads=3, depth=4, batch=8, repeat=7, calls=20) -> dict:
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "vit.onnx")
        export(path, width, heads, depth)
        x = np.random.default_rng(0).standard_normal((batch, 3, 64, 64)).astype(np.float32)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        runners = {"polyeng": polyeng.onnx.load(path),
                   "polyeng, rewrite off": polyeng.onnx.load(path, disable_fusions="batch_first_unbind"),
                   "onnxruntime": lambda a: session.run(None, {"x": a})}
        want = session.run(None, {"x": x})[0]
        diffs = {}
        for name, run in runners.items():
            got = run(x)
            got = got[0] if isinstance(got, (list, tuple)) else got
            diffs[name] = float(np.max(np.abs(np.asarray(got) - want)))
            for _ in range(30):   # the trials of whole against lanes settle
                run(x)
        times = {name: [] for name in runners}
        for _ in range(repeat):
            for name, run in runners.items():
                began = time.perf_counter()
                for _ in range(calls):
                    run(x)
                times[name].append((time.perf_counter() - began) / calls * 1e3)
    medians = {name: statistics.median(t) for name, t in times.items()}
    return {"width": width, "heads": heads, "depth": depth, "batch": batch,
            "median_ms": medians, "ort_over_runner": {n: medians["onnxruntime"] / m for n, m in medians.items()},
            "max_abs_diff": diffs}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=192)
    parser.add_argument("--heads", type=int, default=3)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    result = measure(args.width, args.heads, args.depth, repeat=args.repeat, calls=args.calls)
    print(f"ViT width {result['width']}, {result['heads']} heads, {result['depth']} blocks, batch {result['batch']}")
    for name, ms in result["median_ms"].items():
        print(f"  {name:22s} {ms:8.3f} ms   ort/runner {result['ort_over_runner'][name]:.2f}   "
              f"max |diff| {result['max_abs_diff'][name]:.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
