"""bfloat16 against float32 on NUMBA for two models whose time is in matrix products.

- ``lstm_lm``: an LSTM language model at batch 1: embedding (10000 x 256) of 64 ids, a
  one-layer LSTM (hidden 512, time-major, 64 steps), and a linear layer back to 10000 logits.
- ``encoder``: one transformer encoder layer (seq 128, hidden 768, 12 heads, batch 1): the
  q/k/v, output and feed-forward linears, the two batched attention products, softmax, gelu,
  residual adds and layer norms.

Each model is called op by op through polyeng, once with every weight and activation in
float32 and once with the weights stored in bfloat16 (the activations follow). Runs of the two
are interleaved; the script prints (and with ``--json`` writes) the median time of each, the
ratio f32 / bf16 (above 1: bf16 is faster), and the largest error of the bf16 output against
the f32 one relative to the f32 output's largest magnitude.

Usage: ``python benchmarks/bf16_products.py [--repeat 15] [--json out.json]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import polyeng
from polyeng.engine import dtypes as dt


def lstm_lm_weights(rng):
    w = lambda *s, scale=0.05: (rng.standard_normal(s) * scale).astype(np.float32)   # noqa: E731
    return {"ids": rng.integers(0, 10000, (64, 1)).astype(np.int64), "E": w(10000, 256, scale=0.5),
            "w_ih": w(2048, 256), "w_hh": w(2048, 512), "b_ih": w(2048), "b_hh": w(2048),
            "W": w(10000, 512), "b": w(10000)}


def lstm_lm(p):
    x = polyeng.embedding(p["ids"], p["E"])
    y, _ = polyeng.lstm(x, [(p["w_ih"], p["w_hh"], p["b_ih"], p["b_hh"])])
    return polyeng.linear(y, p["W"], p["b"])


def encoder_weights(rng, hidden=768, ffn=3072):
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)   # noqa: E731
    b = lambda n: (rng.standard_normal(n) * 0.02).astype(np.float32)   # noqa: E731
    return {"x": rng.standard_normal((128, hidden)).astype(np.float32),
            "w_qkv": w(3 * hidden, hidden), "b_qkv": b(3 * hidden), "w_o": w(hidden, hidden), "b_o": b(hidden),
            "w_1": w(ffn, hidden), "b_1": b(ffn), "w_2": w(hidden, ffn), "b_2": b(hidden),
            "g_1": 1 + b(hidden), "beta_1": b(hidden), "g_2": 1 + b(hidden), "beta_2": b(hidden),
            "scale": np.array(0.125, np.float32)}


def encoder(p, heads=12):
    x = p["x"]
    seq, hidden = x.shape
    qkv = polyeng.linear(x, p["w_qkv"], p["b_qkv"])
    qkv = polyeng.permute_contiguous(polyeng.reshape(qkv, (seq, 3, heads, hidden // heads)), (1, 2, 0, 3))
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = polyeng.mul(polyeng.matmul(q, polyeng.permute_contiguous(k, (0, 2, 1))), p["scale"])
    context = polyeng.matmul(polyeng.softmax(scores, axis=-1), v)
    context = polyeng.reshape(polyeng.permute_contiguous(context, (1, 0, 2)), (seq, hidden))
    h = polyeng.layer_norm(polyeng.add(x, polyeng.linear(context, p["w_o"], p["b_o"])), (hidden,),
                           p["g_1"], p["beta_1"])
    f = polyeng.linear(polyeng.gelu(polyeng.linear(h, p["w_1"], p["b_1"])), p["w_2"], p["b_2"])
    return polyeng.layer_norm(polyeng.add(h, f), (hidden,), p["g_2"], p["beta_2"])


MODELS = {"lstm_lm": (lstm_lm_weights, lstm_lm), "encoder": (encoder_weights, encoder)}


def in_bf16(params):
    return {k: v.astype(dt.bfloat16) if v.dtype == np.float32 else v for k, v in params.items()}


def measure(name, repeat, rng):
    make, model = MODELS[name]
    f32 = make(rng)
    variants = {"f32": f32, "bf16": in_bf16(f32)}
    times = {k: [] for k in variants}
    outputs = {}
    with polyeng.compute_eng("numba", fallback=False):
        for k, p in variants.items():
            outputs[k] = model(p)   # compile or load, and the outputs compared
        for _ in range(repeat):
            for k, p in variants.items():
                start = time.perf_counter()
                model(p)
                times[k].append(time.perf_counter() - start)
    ref, got = outputs["f32"].astype(np.float64), outputs["bf16"].astype(np.float64)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    return {"f32_ms": med["f32"], "bf16_ms": med["bf16"], "f32_over_bf16": med["f32"] / med["bf16"],
            "max_rel_error": float(np.max(np.abs(got - ref)) / np.max(np.abs(ref))), "repeat": repeat}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    opts = parser.parse_args(argv)
    results = {}
    for name in opts.models:
        r = results[name] = measure(name, opts.repeat, np.random.default_rng(0))
        print(f"{name:<8} f32 {r['f32_ms']:8.2f} ms  bf16 {r['bf16_ms']:8.2f} ms  f32/bf16 {r['f32_over_bf16']:5.2f}"
              f"  max rel error {r['max_rel_error']:.2e}", flush=True)
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
