"""``polyeng demo``: every op and a small model on every available engine, with the decisions made."""
from __future__ import annotations

import collections
import logging
import statistics
import time

import numpy as np

import polyeng
from ..examples import example_calls
from .info import report


def _time(fn, repeats: int) -> tuple[object, float]:
    result = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times) * 1e3


def _max_diff(a, b) -> float:
    if isinstance(a, (tuple, list)):
        return max([_max_diff(x, y) for x, y in zip(a, b)] or [0.0])
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def tiny_model(x, tokens_mask, weights):
    """An image-to-sequence classifier touching every op family."""
    feat = polyeng.max_pool2d(x, 3, stride=2, padding=1)                    # (N, C, 8, 8)
    up = polyeng.upsample_bilinear2d(feat, scale_factor=2.0)                # (N, C, 16, 16)
    near = polyeng.upsample_nearest(feat, size=(16, 16))
    both = polyeng.concat([x, up, near], axis=1)                            # (N, 3C, 16, 16)
    pooled = polyeng.avg_pool2d(both, 4)                                    # (N, 3C, 4, 4)
    n, c = pooled.shape[:2]
    tokens = polyeng.permute_contiguous(pooled.reshape(n, c, 16), (0, 2, 1))  # (N, 16, 3C)
    h = polyeng.layer_norm(tokens, c, weights["ln_w"], weights["ln_b"])
    q = polyeng.linear(h, weights["wq"])
    k = polyeng.linear(h, weights["wk"])
    scores = polyeng.matmul(q, polyeng.permute_contiguous(k, (0, 2, 1))) / np.float32(np.sqrt(c))
    scores = polyeng.select(tokens_mask, scores, np.full((1, 1, 1), -1e9, np.float32))
    attn = polyeng.softmax(scores, axis=-1)
    h = h + polyeng.gelu(polyeng.matmul(attn, h))
    seq, _ = polyeng.lstm(h, [weights["lstm"]], batch_first=True)
    return polyeng.log_softmax(polyeng.linear(seq[:, -1], weights["head"]), axis=-1)


def _model_inputs(rng):
    c, hidden = 8, 16
    x = rng.standard_normal((2, c, 16, 16)).astype(np.float32)
    mask = np.tril(np.ones((16, 16), dtype=bool))[None]
    f = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)   # noqa: E731
    weights = {"ln_w": f(3 * c), "ln_b": f(3 * c), "wq": f(3 * c, 3 * c), "wk": f(3 * c, 3 * c),
               "lstm": (f(4 * hidden, 3 * c), f(4 * hidden, hidden), f(4 * hidden), f(4 * hidden)),
               "head": f(10, hidden)}
    return x, mask, weights


class _EngineCounter(logging.Handler):
    """Counts verbose exec lines by (engine, step) while installed on the ``polyeng`` logger."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def emit(self, record):
        fields = record.getMessage().split(",")
        if len(fields) > 4 and fields[:2] == ["polyeng", "exec"]:   # not the logger's other messages
            self.counts[f"{fields[3]}/{fields[4]}"] += 1


def _engines_used(fn) -> str:
    logger = logging.getLogger("polyeng")
    counter, propagate = _EngineCounter(), logger.propagate
    logger.addHandler(counter)
    logger.propagate = False
    try:
        with polyeng.verbose(1):
            fn()
    finally:
        logger.removeHandler(counter)
        logger.propagate = propagate
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.counts.items()))


def run_demo(repeats: int = 3) -> int:
    print(report())
    engines = [e for e in polyeng.engines() if e.available]
    calls = example_calls()
    print("\nops (median of %d runs; diff = max |result - BASIC|):" % repeats)
    print(f"  {'op':<20} {'engine':<8} {'ms':>8} {'diff':>9}   decision under RECOMMEND")
    for op, (args, kwargs) in calls.items():
        decision = polyeng.explain(op, *args, **kwargs)
        others = "; ".join(f"{c.engine}: {c.verdict}" for c in decision.candidates if c.verdict != "chosen")
        timed = {}
        for engine in engines:
            if op in engine.ops:
                with polyeng.compute_eng(engine.name, fallback=False):
                    timed[engine.name] = _time(lambda: getattr(polyeng, op)(*args, **kwargs), repeats)
        reference = timed["basic"][0]
        for name, (result, ms) in timed.items():
            note = f"{decision.engine} via {decision.step} ({others})" if name == "basic" else ""
            print(f"  {op:<20} {name:<8} {ms:8.3f} {_max_diff(result, reference):9.2e}   {note}")
    missing = [f"{e.name} ({len(e.ops)} ops)" for e in engines if len(e.ops) < len(calls)]
    if missing:
        print("  engines without every kernel, shown only where they have one: " + ", ".join(missing))

    print("\nmodel: pooling -> upsample -> concat -> attention (layer_norm, linear, matmul, select, softmax, "
          "gelu) -> lstm -> log_softmax")
    x, mask, weights = _model_inputs(np.random.default_rng(1))
    reference = None
    for engine in ["recommend"] + [e.name for e in engines]:
        with polyeng.compute_eng(engine):
            out, ms = _time(lambda: tiny_model(x, mask, weights), repeats)
            used = _engines_used(lambda: tiny_model(x, mask, weights))
        reference = out if reference is None else reference
        print(f"  compute_eng({engine!r:<11}) {ms:8.3f} ms   max |diff| vs recommend {_max_diff(out, reference):.2e}"
              f"   predictions {np.argmax(out, axis=-1).tolist()}   calls by engine/step: {used}")
    return 0


def run(args) -> int:
    if args.repeats < 1:
        from .console import UsageError
        raise UsageError(f"--repeats {args.repeats}: expected a positive number")
    return run_demo(repeats=args.repeats)
