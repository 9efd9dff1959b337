"""Where NUMBA and ONEDNN overtake BASIC: the evidence behind each op's recommendation rule.

Times BASIC, NUMBA and ONEDNN (medians) for every op on three sizes: the small
example call of ``polyeng.examples`` and the workload case at batch 1 and at full size.
Usage: ``python benchmarks/crossover.py [--repeat 7]``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import polyeng
from polyeng.bench.workload import cases
from polyeng.examples import example_calls


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


def elements(args):
    first = args[0][0] if isinstance(args[0], list) else args[0]
    return int(np.asarray(first).size)


ENGINES = [e.name for e in polyeng.engines() if e.available and e.name in ("basic", "numba", "onednn")]


def measure(op, args, kwargs, repeat):
    """Each engine's median ms, or None where it turns the call down (or lacks the op)."""
    fn = getattr(polyeng, op)
    out = {}
    for engine in ENGINES:
        with polyeng.compute_eng(engine, fallback=False):
            try:
                fn(*args, **kwargs)   # warm up (compile or load)
            except polyeng.EngineError:
                out[engine] = None
                continue
            out[engine] = median_ms(lambda: fn(*args, **kwargs), repeat)
    return out


def ratio(t, engine) -> str:
    return f"{t['basic'] / t[engine]:>13.2f}" if t.get(engine) else f"{'-':>13}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args(argv)
    rows = [(op, "example", a, k) for op, (a, k) in example_calls(np.random.default_rng(0)).items()]
    for scale, label in ((1e-9, "batch 1"), (1.0, "full")):
        rows += [(case.op, f"{case.name} {label}", a, k) for case, a, k in cases(scale)]
    others = [e for e in ENGINES if e != "basic"]
    print(f"{'op':<22}{'size':<42}{'elements':>11}" + "".join(f"{e + ' ms':>11}" for e in ENGINES)
          + "".join(f"{'basic/' + e:>13}" for e in others))
    for op, label, args, kwargs in sorted(rows, key=lambda r: r[0]):
        t = measure(op, args, kwargs, opts.repeat)
        print(f"{op:<22}{label:<42}{elements(args):>11}"
              + "".join(f"{t[e]:>11.3f}" if t[e] else f"{'-':>11}" for e in ENGINES)
              + "".join(ratio(t, e) for e in others), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
