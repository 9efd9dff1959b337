"""``polyeng bench``: the command. Checks its options, then times the op workload
(``polyeng.bench.ops``) or, with ``--models``, the bundled ONNX models end to end
(``polyeng.bench.models``), prints the table and writes the JSON and the chart.
"""
from __future__ import annotations

import json
import time

from ..bench import models as model_bench, ops as op_bench, report as op_report
from ..bench.progress import Progress
from ..bench.runtimes import check_writable
from ..engine import dtypes as dt
from .console import UsageError
from .options import named_engines


def parse_dtypes(text: str) -> list[str]:
    """``--dtype``: a comma list of float dtypes, or ``all``; short names."""
    names = list(op_bench.DTYPES) if text.strip().lower() == "all" else [t.strip() for t in text.split(",")
                                                                         if t.strip()]
    out = []
    for name in names:
        try:
            dtype = dt.as_dtype(name, "--dtype")
        except TypeError as exc:
            raise UsageError(str(exc)) from None
        if dtype not in dt.FLOAT_DTYPES:
            raise UsageError(f"--dtype {name}: the workload needs a float dtype (f32, f64, bf16, f16)")
        out.append(dt.short_name(dtype))
    if not out:
        raise UsageError("--dtype is empty; expected e.g. f32, f32,bf16,f16 or all")
    return out


def check_outputs(args) -> str | None:
    """``--json`` and ``--plot`` refused before the run, not after minutes of it; the chart's format."""
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path:
            check_writable(option, path)
    return op_report.check_plot_path(args.plot) if args.plot else None


def write_outputs(args, report: dict, chart, plot_format: str | None) -> None:
    """The JSON and the chart (``chart(report)``, a matplotlib Figure); the files, checked
    beforehand, may still fail (disk full)."""
    try:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        if args.plot:
            chart(report).savefig(args.plot, dpi=110, format=plot_format)
    except OSError as exc:
        raise UsageError(str(exc)) from None


def run_ops(args) -> int:
    """The op workload per case, dtype and engine."""
    start = time.perf_counter()
    if args.quick:
        args.scale = 0.1 if args.scale is None else args.scale
        args.repeat = 3 if args.repeat is None else args.repeat
    args.scale = 1.0 if args.scale is None else args.scale
    args.repeat = 7 if args.repeat is None else args.repeat
    if args.repeat < 1 or args.threads < 1 or args.scale <= 0:
        raise UsageError(f"--repeat {args.repeat}, --threads {args.threads}, --scale {args.scale}: "
                         "expected positive numbers")
    dtypes = parse_dtypes(args.dtype)
    wanted = op_bench.select_cases(args.cases)
    engines = None if args.engines is None else named_engines(args.engines)
    plot_format = check_outputs(args)
    progress = Progress(quiet=args.quiet)
    report = op_bench.run_bench(wanted, dtypes, engines, scale=args.scale, repeat=args.repeat, threads=args.threads,
                                with_torch=not args.no_torch, progress=progress)
    return _finish(args, start, progress, report, op_report, plot_format,
                   f"polyeng bench: {len(report['results'])} case runs on {', '.join(report['engines'])}")


def run_models(args) -> int:
    """The bundled ONNX models end to end, on every runner."""
    start = time.perf_counter()
    if args.scale is not None or args.engines is not None or args.dtype != "f32":
        sizes = ", ".join(f"{m} {s}" for m, s in model_bench.SIZES.items())
        raise UsageError("--scale, --engines and --dtype choose the op workload; --models times every runner at "
                         f"fixed sizes ({sizes}) in f32 and bf16")
    args.repeat = (3 if args.quick else 7) if args.repeat is None else args.repeat
    if args.repeat < 1 or args.threads < 1:
        raise UsageError(f"--repeat {args.repeat}, --threads {args.threads}: expected positive numbers")
    plot_format = check_outputs(args)
    files = model_bench.model_files(args.cases)
    progress = Progress(quiet=args.quiet)
    report = model_bench.run_models(files, repeat=args.repeat, threads=args.threads, with_torch=not args.no_torch,
                                    progress=progress)
    return _finish(args, start, progress, report, model_bench, plot_format,
                   f"polyeng bench --models: {len(report['results'])} files on {', '.join(report['runners'])}")


def _finish(args, start, progress, report, kind, plot_format, summary: str) -> int:
    """The summary line, the table and the files asked for; ``kind`` is the module with the
    benchmark's ``table`` and ``chart``."""
    progress.finish(f"{summary} in {time.perf_counter() - start:.1f} s")
    print(kind.table(report))
    write_outputs(args, report, kind.chart, plot_format)
    return 0


def run(args) -> int:
    # Engines run interleaved: OpenMP workers that spin after a kernel would steal the cores from the
    # next engine's call; polyeng's thread policy keeps numba's asleep between kernels.
    return run_models(args) if args.models else run_ops(args)
