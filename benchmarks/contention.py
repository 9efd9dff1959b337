"""Small calls on a busy machine: the median time of small calls (outputs of a few KB to
~100 KB) per op and engine, first with the machine idle, then with one competing CPU-bound
process (``while True: pass``, started here, pinned to nothing, killed at the end).

It measures what a library user gets: the timing runs in a child process whose environment
does not set ``OMP_WAIT_POLICY`` (``polyeng bench`` sets it for itself; a library user's
process usually does not). Also timed: the small model of ``polyeng demo`` (recommended
engines against BASIC), linear and an lstm each right after an untimed parallel NUMBA launch
("after launch"), and with ``--large`` one large call per op family on NUMBA, idle.
Idle and busy phases alternate ``--rounds`` times; every figure is the median over all
rounds. ``--crossover`` instead times BASIC against NUMBA at a quarter to four times each
op's recommendation threshold (idle), the evidence for the thresholds of small calls.
Usage: ``python benchmarks/contention.py [--rounds 3] [--calls 30] [--large | --crossover]``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

import numpy as np

WORKER = "--worker"
AFTER_LAUNCH = ("linear (128, 192) x (192, 192)", "lstm seq 16 batch 8 64->128")   # also timed after one


def small_cases(rng):
    """(label, op, args, kwargs): two sizes per op, a few KB and up to ~100 KB of output."""
    def t(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def lstm(seq, batch, inp, hidden):
        w = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)   # noqa: E731
        return (t(seq, batch, inp), [(w(4 * hidden, inp), w(4 * hidden, hidden), w(4 * hidden), w(4 * hidden))]), {}

    return [
        ("softmax (16, 64)", "softmax", (t(16, 64),), {"axis": -1}),
        ("softmax (96, 256)", "softmax", (t(96, 256),), {"axis": -1}),
        ("softmax (4, 32, 64) axis=1", "softmax", (t(4, 32, 64),), {"axis": 1}),
        ("layer_norm (32, 32)", "layer_norm", (t(32, 32), 32), {}),
        ("layer_norm (64, 384)", "layer_norm", (t(64, 384), 384), {}),
        ("gelu (1024,)", "gelu", (t(1024),), {}),
        ("gelu (24576,)", "gelu", (t(24576),), {}),
        ("matmul (16, 64) @ (64, 64)", "matmul", (t(16, 64), t(64, 64)), {}),
        ("linear (128, 192) x (192, 192)", "linear", (t(128, 192), t(192, 192), t(192)), {}),
        ("max_pool2d (2, 8, 32, 32)", "max_pool2d", (t(2, 8, 32, 32), 3), {"stride": 2, "padding": 1}),
        ("max_pool2d (2, 16, 56, 56)", "max_pool2d", (t(2, 16, 56, 56), 3), {"stride": 2, "padding": 1}),
        ("avg_pool2d (2, 16, 56, 56)", "avg_pool2d", (t(2, 16, 56, 56), 3), {"stride": 2, "padding": 1}),
        ("max_pool3d (1, 4, 8, 16, 16)", "max_pool3d", (t(1, 4, 8, 16, 16), 3), {"stride": 2, "padding": 1}),
        ("upsample_bilinear2d (2, 4, 8, 8)", "upsample_bilinear2d", (t(2, 4, 8, 8),), {"scale_factor": 2.0}),
        ("upsample_bilinear2d (2, 8, 20, 20)", "upsample_bilinear2d", (t(2, 8, 20, 20),), {"scale_factor": 2.0}),
        ("upsample_nearest (2, 8, 20, 20)", "upsample_nearest", (t(2, 8, 20, 20),), {"scale_factor": 2.0}),
        ("concat 2 x (2, 8, 8, 8)", "concat", ([t(2, 8, 8, 8), t(2, 8, 8, 8)],), {"axis": 1}),
        ("concat 2 x (2, 8, 28, 28)", "concat", ([t(2, 8, 28, 28), t(2, 8, 28, 28)],), {"axis": 1}),
        ("permute (4, 32, 8, 4)", "permute_contiguous", (t(4, 32, 8, 4), (0, 2, 1, 3)), {}),
        ("permute (32, 12, 64)", "permute_contiguous", (t(32, 12, 64), (1, 0, 2)), {}),
        ("select (2, 3, 16, 16)", "select", (rng.random((2, 3, 16, 16)) > 0.5, t(2, 3, 16, 16), t(1, 1, 1, 16)), {}),
        ("select (2, 12, 32, 32)", "select", (rng.random((2, 12, 32, 32)) > 0.5, t(2, 12, 32, 32), t(1, 1, 1, 32)), {}),
        ("cast (1024,) to bf16", "cast", (t(1024), "bfloat16"), {}),
        ("cast (49152,) to bf16", "cast", (t(49152), "bfloat16"), {}),
        ("lstm seq 8 batch 4 32->32", "lstm", *lstm(8, 4, 32, 32)),
        ("lstm seq 16 batch 8 64->128", "lstm", *lstm(16, 8, 64, 128)),
    ]


def large_cases(rng):
    """One large call per op family (NUMBA runs it in parallel)."""
    from polyeng.bench.workload import cases
    picked = {}
    for case, args, kwargs in cases(0.25, seed=1):
        family = case.op.split("_")[0]
        picked.setdefault(family, (case.name, case.op, args, kwargs))
    rows = list(picked.values())
    rows.insert(0, ("softmax (256, 8192)", "softmax", (rng.standard_normal((256, 8192)).astype(np.float32),), {}))
    x = rng.standard_normal(1 << 21).astype(np.float32)
    rows += [("gelu (2M,)", "gelu", (x,), {}), ("cast (2M,) to bf16", "cast", (x, "bfloat16"), {})]
    return rows


def threshold_call(op, n, rng):
    """A call of ``op`` with about ``n`` elements in all its array arguments (what the
    recommendation rules count)."""
    def t(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    side = max(3, int(round((n / 6) ** 0.5)))
    pool = ((t(2, 3, side, side), 3), {"stride": 2, "padding": 1})
    makers = {
        "softmax": lambda: ((t(max(1, n // 64), 64),), {}),
        "log_softmax": lambda: ((t(max(1, n // 64), 64),), {}),
        "layer_norm": lambda: ((t(max(1, n // 64), 64), 64), {}),
        "gelu": lambda: ((t(n),), {}),
        "avg_pool2d": lambda: pool, "max_pool2d": lambda: pool,
        "upsample_bilinear2d": lambda: ((t(2, 3, side, side),), {"scale_factor": 2.0}),
        "upsample_nearest": lambda: ((t(2, 3, side, side),), {"scale_factor": 2.0}),
        "select": lambda: ((rng.random(n // 2) > 0.5, t(n // 2), t(1)), {}),
        "cast": lambda: ((t(n), "bfloat16"), {}),
        "concat": lambda: (([t(n // 2), t(n // 2)],), {}),
        "permute_contiguous": lambda: ((t(max(1, n // 4096), 64, 64), (0, 2, 1)), {}),
    }
    return makers[op]() if op in makers else None


def crossover(opts) -> int:
    """BASIC against NUMBA, idle, at a quarter to four times each op's recommendation threshold."""
    import polyeng
    from polyeng.ops import OPS
    rng = np.random.default_rng(0)
    print(f"{'op':<22}{'elements':>10}{'threshold':>11}{'recommended':>13}{'basic us':>10}{'numba us':>10}"
          f"{'basic/numba':>13}")
    for op, spec in sorted(OPS.items()):
        threshold = getattr(spec.recommend, "min_elements", 0)
        for factor in (0.25, 0.5, 1, 2, 4):
            call = threshold_call(op, int(threshold * factor), rng) if threshold else None
            if call is None:
                continue
            args, kwargs = call
            fn = getattr(polyeng, op)
            times = {}
            for _ in range(opts.rounds):
                for engine in ("basic", "numba"):
                    times.setdefault(engine, []).extend(sample(lambda: _scoped(fn, args, kwargs, engine), opts.calls))
            basic, numba = (statistics.median(times[e]) * 1e6 for e in ("basic", "numba"))
            elements = sum(np.size(a) for a in (args[0] if isinstance(args[0], list) else args)
                           if isinstance(a, np.ndarray))
            print(f"{op:<22}{elements:>10}{threshold:>11}{polyeng.explain(op, *args, **kwargs).engine:>13}"
                  f"{basic:>10.1f}{numba:>10.1f}{basic / numba:>13.2f}", flush=True)
    return 0


def output_kb(result) -> float:
    first = result[0] if isinstance(result, tuple) else result
    return np.asarray(first).nbytes / 1024


@contextlib.contextmanager
def competitor():
    """One other CPU-bound process for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)   # let it start spinning
        yield
    finally:
        proc.kill()
        proc.wait()


def sample(fn, calls, prelude=None) -> list[float]:
    """Times of ``calls`` calls of ``fn``, each after an untimed ``prelude()`` if given."""
    times = []
    for _ in range(calls):
        if prelude is not None:
            prelude()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# A small model calling every op family, timed beside the single calls.
def tiny_model(x, tokens_mask, weights):
    """An image-to-sequence classifier touching every op family."""
    import polyeng
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


def engine_scope(engine):
    import polyeng
    return contextlib.nullcontext() if engine == "recommend" else polyeng.compute_eng(engine, fallback=False)


def run_worker(opts) -> int:
    import polyeng
    assert "OMP_WAIT_POLICY" not in os.environ
    rng = np.random.default_rng(0)
    engines = opts.engines.split(",") + ["recommend"]
    rows = []
    for label, op, args, kwargs in small_cases(rng):
        fn = getattr(polyeng, op)
        for engine in engines:
            if engine != "recommend" and op not in next(e.ops for e in polyeng.engines() if e.name == engine):
                continue
            call = (lambda fn=fn, a=args, k=kwargs, e=engine: _scoped(fn, a, k, e))
            result = call()   # compile or load
            rows.append({"case": label, "engine": engine, "call": call, "kb": output_kb(result),
                         "chosen": polyeng.explain(op, *args, **kwargs).engine if engine == "recommend" else engine})
    x, mask, weights = _model_inputs(np.random.default_rng(1))
    for engine in ["recommend", "basic"]:
        call = (lambda e=engine: _scoped(tiny_model, (x, mask, weights), {}, e))
        call()
        rows.append({"case": "demo tiny_model", "engine": engine, "call": call, "kb": 0.0, "chosen": engine})
    # numpy's BLAS right after a parallel NUMBA launch, whose OpenMP workers still spin (as in a
    # model mixing both): the products OpenBLAS would split stalled here (docs/performance.md)
    big = np.zeros(1 << 20, np.float32)
    launch = (lambda: _scoped(polyeng.gelu, (big,), {}, "numba"))   # 4 MB out: a parallel launch
    for label, op, args, kwargs in small_cases(rng):
        if label in AFTER_LAUNCH:
            fn = getattr(polyeng, op)
            for engine in opts.engines.split(","):
                call = (lambda fn=fn, a=args, k=kwargs, e=engine: _scoped(fn, a, k, e))
                rows.append({"case": f"{label} after launch", "engine": engine, "call": call, "prelude": launch,
                             "kb": output_kb(call()), "chosen": engine})

    times = {id(r): {"idle": [], "busy": []} for r in rows}
    for _ in range(opts.rounds):
        for phase in ("idle", "busy"):
            with competitor() if phase == "busy" else contextlib.nullcontext():
                for r in rows:
                    times[id(r)][phase] += sample(r["call"], opts.calls, r.get("prelude"))

    import numba
    print(f"numba {numba.__version__}, threading layer {numba.threading_layer()}, {numba.get_num_threads()} threads, "
          f"OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')}, {os.cpu_count()} cores; "
          f"{opts.rounds} rounds x {opts.calls} calls per phase, medians in us")
    print("busy mean: the mean of the busy calls, which counts the rare stalls a median hides")
    print(f"{'case':<44}{'engine':<10}{'runs on':<8}{'out KB':>7}{'idle us':>10}{'busy us':>10}{'busy/idle':>10}"
          f"{'busy mean':>11}")
    for r in rows:
        idle, busy = (statistics.median(times[id(r)][p]) * 1e6 for p in ("idle", "busy"))
        mean = statistics.fmean(times[id(r)]["busy"]) * 1e6
        print(f"{r['case']:<44}{r['engine']:<10}{r['chosen']:<8}{r['kb']:>7.1f}{idle:>10.1f}{busy:>10.1f}"
              f"{busy / idle:>10.2f}{mean:>11.1f}", flush=True)

    if opts.large:
        print(f"\nlarge calls on numba, idle, median of {opts.calls} calls per round x {opts.rounds} rounds")
        print(f"{'case':<36}{'out KB':>9}{'ms':>9}")
        for label, op, args, kwargs in large_cases(rng):
            fn = getattr(polyeng, op)
            result = _scoped(fn, args, kwargs, "numba")
            ms = statistics.median(t for _ in range(opts.rounds)
                                   for t in sample(lambda: _scoped(fn, args, kwargs, "numba"), max(3, opts.calls // 5)))
            print(f"{label:<36}{output_kb(result):>9.0f}{ms * 1e3:>9.3f}", flush=True)
    return 0


def _scoped(fn, args, kwargs, engine):
    with engine_scope(engine):
        return fn(*args, **kwargs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="idle/busy phase pairs (default 3)")
    parser.add_argument("--calls", type=int, default=30, help="calls per case, engine and phase in a round")
    parser.add_argument("--engines", default="basic,numba", help="engines timed besides the recommended one")
    parser.add_argument("--large", action="store_true", help="also time one large call per op family, idle")
    parser.add_argument("--crossover", action="store_true",
                        help="instead: BASIC against NUMBA around each op's recommendation threshold, idle")
    parser.add_argument(WORKER, action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        return crossover(opts) if opts.crossover else run_worker(opts)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    return subprocess.call([sys.executable, os.path.abspath(__file__), WORKER, *(argv or sys.argv[1:])], env=env)


if __name__ == "__main__":
    sys.exit(main())
