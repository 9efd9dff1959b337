"""Dispatch overhead: a full polyeng call minus the direct kernel call, on a tiny input with
the decision cached. Usage: ``python benchmarks/dispatch.py``."""
from __future__ import annotations

import sys
import timeit

import numpy as np

import polyeng
from polyeng.engine.plugins import registry
from polyeng.ops import OPS


def best_us(fn, number=20000, repeat=7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def overhead(op: str, engine: str, args: dict) -> tuple[float, float]:
    kernel = registry().kernel(op, engine).fn
    validated = OPS[op].validate(**args)
    prepared = OPS[op].prepare(validated)
    public = getattr(polyeng, op)
    with polyeng.compute_eng(engine, fallback=False):
        public(**args)   # compile or load, and fill the decision cache
        kernel(prepared, **validated)
        full = best_us(lambda: public(**args))
    direct = best_us(lambda: kernel(prepared, **validated))
    return full, direct


def main() -> int:
    x = np.arange(4, dtype=np.float32)
    cases = [("softmax", {"x": x, "axis": -1}), ("gelu", {"x": x, "approximate": "none"}),
             ("permute_contiguous", {"x": x.reshape(2, 2), "dims": (1, 0)})]
    print(f"{'op':<20}{'engine':<8}{'full us':>9}{'kernel us':>11}{'overhead us':>13}")
    for op, args in cases:
        for engine in ("basic", "numba"):
            full, direct = overhead(op, engine, args)
            print(f"{op:<20}{engine:<8}{full:>9.2f}{direct:>11.2f}{full - direct:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
