"""Accuracy of the fp math modes and of 16-bit storage on the benchmark workload.

For every case: the max and median relative error against BASIC run in float64 on the
same input values, of f32 storage under STRICT, TF32, BF16 and F16 modes, and of bf16
and f16 storage (inputs rounded to the 16-bit type; the reference uses those values).

Relative error per element: ``|y - ref| / max(|ref|, 0.01 * rms(ref))``: the floor keeps
elements whose exact value is (nearly) zero from dividing by nothing.

    python benchmarks/accuracy.py              # the full workload, a Markdown table
    python benchmarks/accuracy.py --scale 0.1  # smaller batches
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import polyeng
from polyeng.bench.workload import cases
from polyeng.engine import dtypes as dt
from polyeng.engine.call import map_arrays
from polyeng.ops import OPS

MODES = ("strict", "tf32", "bf16", "f16")
STORAGES = (("bf16 storage", polyeng.bfloat16), ("f16 storage", np.float16))


def _main_output(result):
    return result[0] if isinstance(result, tuple) else result


def _to64(value):
    return map_arrays(value, lambda a: a.astype(np.float64) if a.dtype in dt.FLOAT_DTYPES else a)


def _astype(value, dtype):
    return map_arrays(value, lambda a: a.astype(dtype) if a.dtype == np.float32 else a)


def relative_errors(result, reference) -> tuple[float, float]:
    y = _main_output(result).astype(np.float64)
    ref = _main_output(reference)
    rms = float(np.sqrt(np.mean(ref * ref))) or 1.0
    err = np.abs(y - ref) / np.maximum(np.abs(ref), 0.01 * rms)
    return float(err.max()), float(np.median(err))


def _run(op, args, kwargs, mode="strict"):
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode(mode):
        return getattr(polyeng, op)(*args, **kwargs)


def measure(scale: float = 1.0, progress=None) -> list[dict]:
    rows = []
    for case, args, kwargs in cases(scale):
        row = {"case": case.name, "category": str(OPS[case.op].category)}
        reference = _run(case.op, _to64(args), _to64(kwargs))
        for mode in MODES:
            row[mode] = relative_errors(_run(case.op, args, kwargs, mode), reference)
        for label, dtype in STORAGES:
            args16, kwargs16 = _astype(args, dtype), _astype(kwargs, dtype)
            reference16 = _run(case.op, _to64(args16), _to64(kwargs16))
            row[label] = relative_errors(_run(case.op, args16, kwargs16), reference16)
        rows.append(row)
        if progress:
            progress(case.name)
    return rows


def markdown(rows: list[dict]) -> str:
    columns = list(MODES) + [label for label, _ in STORAGES]
    lines = ["| case | category | " + " | ".join(columns) + " |",
             "| --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        cells = [f"{row[c][0]:.1e} / {row[c][1]:.1e}" for c in columns]
        lines.append(f"| {row['case']} | {row['category']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="batch scale of the workload (default 1)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = measure(args.scale, progress=lambda name: print(f"  measured {name}", file=sys.stderr))
    print("max / median relative error vs float64 (BASIC engine)\n")
    print(markdown(rows))
    print(f"\n(scale {args.scale}, {time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
