"""The ``polyeng`` command line: info, bench, explain, demo."""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys

import numpy as np

_TENSOR = re.compile(r"^(\d+(?:x\d+)*|scalar)(?::(\w+))?$")


def _is_tensor_spec(text: str) -> bool:
    match = _TENSOR.match(text.strip())
    return bool(match) and ("x" in match.group(1) or bool(match.group(2)) or match.group(1) == "scalar")


def parse_value(text: str):
    """A CLI argument value: ``2x3x8x8:f32`` is a tensor (``8:f16`` a 1-D one, ``scalar:f32`` a 0-d
    one), ``[2x3,2x3]`` a list of them, anything else a Python literal (or a plain string).

    Tensors are zero-stride placeholders: explain looks at shapes and dtypes only, so even
    huge shapes cost no memory.
    """
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        items = [t for t in text[1:-1].split(",") if t.strip()]
        if items and all(_is_tensor_spec(t) for t in items):
            return [parse_value(t) for t in items]
    if _is_tensor_spec(text):
        from .engine.dtypes import as_dtype
        match = _TENSOR.match(text)
        shape = () if match.group(1) == "scalar" else tuple(int(d) for d in match.group(1).split("x"))
        return np.broadcast_to(np.zeros((), as_dtype(match.group(2) or "f32")), shape)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def cmd_info(args) -> int:
    from .info import report
    print(report())
    return 0


def cmd_explain(args) -> int:
    import polyeng
    positional, keywords = [], {}
    try:
        for item in args.args:
            name, sep, value = item.partition("=")
            if sep and name.isidentifier():
                keywords[name] = parse_value(value)
            else:
                positional.append(parse_value(item))
        with polyeng.compute_eng(args.engine, fallback=not args.no_fallback), polyeng.fp_math_mode(args.fp_math):
            decision = polyeng.explain(args.op, *positional, **keywords)
    except (ValueError, TypeError, polyeng.EngineError) as exc:
        print(f"polyeng explain: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(decision)
    return 0


def cmd_bench(args) -> int:
    import json
    import time
    from .bench import BenchError, parse_dtypes, run_bench
    from .bench_report import Progress, plot, require_matplotlib, table
    start = time.perf_counter()
    # Engines run interleaved: OpenMP workers that spin after a kernel (torch's, numba's) would steal
    # the cores from the next engine's call. Read when an OpenMP runtime loads, so set it before torch.
    policy_was_set = "OMP_WAIT_POLICY" in os.environ
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        if args.repeat < 1 or args.threads < 1 or args.scale <= 0:
            raise BenchError(f"--repeat {args.repeat}, --threads {args.threads}, --scale {args.scale}: "
                             "expected positive numbers")
        args.dtypes = parse_dtypes(args.dtype)
        if args.plot:
            require_matplotlib()   # before the run, not after minutes of it
        progress = Progress(quiet=args.quiet)
        report = run_bench(args, progress)
        progress.finish(f"polyeng bench: {len(report['results'])} case runs on {', '.join(report['engines'])} "
                        f"in {time.perf_counter() - start:.1f} s")
        print(table(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        if args.plot:
            plot(report, args.plot)
    except (BenchError, OSError) as exc:
        print(f"polyeng bench: {exc}", file=sys.stderr)
        return 2
    finally:
        if not policy_was_set:
            os.environ.pop("OMP_WAIT_POLICY", None)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo
    return run_demo(repeats=args.repeats)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="polyeng", description="Deep-learning operators on several compute engines.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="engines, availability and why, versions, OpenCL devices, defaults")
    explain = sub.add_parser("explain", help="show which engine one op call would run on, and why",
                             description="Arguments are positional or name=value. A tensor is written as its "
                                         "shape and dtype, e.g. 1x3x8x8:f32 (bf16, f16, f64, s8, u8, s32, bool); "
                                         "a list of tensors as [2x3,2x4]; other values as Python literals.",
                             epilog="example: polyeng explain upsample_bilinear2d 1x3x8x8 scale_factor=2 "
                                    "align_corners=True --engine numba")
    explain.add_argument("op")
    explain.add_argument("args", nargs="*")
    explain.add_argument("--engine", default="recommend", help="the user engine (as compute_eng)")
    explain.add_argument("--no-fallback", action="store_true", help="as compute_eng(..., fallback=False)")
    explain.add_argument("--fp-math", default="strict", help="fp math mode for the call")
    bench = sub.add_parser("bench", help="time the benchmark workload per op and engine, against PyTorch and "
                                         "copy bandwidth", epilog="example: polyeng bench --cases softmax,pool "
                                                                  "--dtype all --json out.json --plot out.png")
    bench.add_argument("--dtype", default="f32", help="f32 (default), a comma list such as f32,bf16,f16, or all")
    bench.add_argument("--cases", help="comma list of substrings; only cases whose name contains one run")
    bench.add_argument("--engines", help="comma list of engines (default: every available one with the op)")
    bench.add_argument("--scale", type=float, default=1.0, help="batch scale of the workload (default 1.0)")
    bench.add_argument("--repeat", type=int, default=7, help="timed repetitions per case and engine (default 7)")
    bench.add_argument("--threads", type=int, default=2, help="threads for torch and numba (default 2)")
    bench.add_argument("--no-torch", action="store_true", help="do not run the PyTorch equivalents")
    bench.add_argument("--json", metavar="PATH", help="write every time, the medians and the header as JSON")
    bench.add_argument("--plot", metavar="PATH", help="write a PNG chart of torch/engine (needs matplotlib)")
    bench.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    demo = sub.add_parser("demo", help="run every op and a small model on every available engine")
    demo.add_argument("--repeats", type=int, default=3, help="timed repetitions per op and engine")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return {"info": cmd_info, "bench": cmd_bench, "explain": cmd_explain, "demo": cmd_demo}[args.command](args)
