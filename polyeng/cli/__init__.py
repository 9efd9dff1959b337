"""The ``polyeng`` command line: its arguments, and which module runs each command."""
from __future__ import annotations

import argparse
import importlib


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
    # Each command is this package's module of that name, with ``run(args) -> int``; imported only
    # when it runs, so ``polyeng info`` does not pay for the bench's imports.
    return importlib.import_module(f"{__name__}.{args.command}").run(args)
