"""The ``polyeng`` command line: its arguments, and which module runs each command."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..bench import BenchError
from .console import INTERRUPTED_EXIT, USAGE_EXIT, UsageError, check_environment, error, interrupts_kept, notices

FP_MATH_MODES = "strict, bf16, f16, tf32, any"


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported on one line (and where to find the usage)."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(USAGE_EXIT)


def version() -> str:
    """The installed distribution's version; the package's own when it runs from a source tree."""
    from importlib import metadata
    try:
        return metadata.version("polyeng")
    except metadata.PackageNotFoundError:
        import polyeng
        return getattr(polyeng, "__version__", "unknown")


class _Version(argparse.Action):
    """``--version``, reading the metadata only when asked."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print polyeng's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"polyeng {version()}")
        raise SystemExit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="polyeng", description="Deep-learning operators on several compute engines.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="engines, availability and why, versions, OpenCL devices, defaults")
    info.add_argument("--json", action="store_true", help="print the same as one JSON object")
    _add_explain(sub)
    _add_bench(sub)
    _add_run(sub)
    demo = sub.add_parser("demo", help="the bundled ONNX encoder on every available engine, in f32 and with bf16 "
                                       "mixed precision, against onnxruntime")
    demo.add_argument("--repeats", type=int, default=3, help="timed runs per engine and precision (default 3)")
    warmup = sub.add_parser("warmup", help="compile every kernel ahead of time (numba, OpenCL), for images and CI "
                                           "caches", epilog="example: polyeng warmup --engines numba --dtype f32,bf16")
    warmup.add_argument("--engines", help="comma list of engines (default: every available one but basic)")
    warmup.add_argument("--dtype", default="all", help="dtypes to compile for: all (default: every float dtype, "
                                                       "and the integer and bool ones of the ops taking them) or a "
                                                       "comma list such as f32,bf16")
    warmup.add_argument("--ops", help="comma list of ops (default: every op), e.g. softmax,layer_norm")
    warmup.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    return parser


def _add_explain(sub) -> None:
    explain = sub.add_parser(
        "explain", help="show which engine one op call would run on, and why",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Show the engine decision for one op call, without running it.\n\n"
                    "The op's arguments follow its name, positional or as name=value, in the order of the\n"
                    "Python function (polyeng.<op>). A tensor is written as its shape and dtype:\n"
                    "  1x3x8x8:f32   a 4-D float32 array (the dtype defaults to f32)\n"
                    "  8:bf16        a 1-D bfloat16 array;  scalar:f16  a 0-d one\n"
                    "  [2x3,2x4]     a list of tensors (concat)\n"
                    "dtypes: f32, f64, bf16, f16, s8, u8, s32, s64, bool. Any other value is a Python\n"
                    "literal: 3, 2.0, (2, 2), True, None, 'tanh'. No data is allocated, so shapes may be huge.",
        epilog="examples:\n"
               "  polyeng explain upsample_bilinear2d 1x3x8x8 scale_factor=2 align_corners=True --engine numba\n"
               "  polyeng explain max_pool2d 2x3x32x32:bf16 3 stride=2 padding=1\n"
               "  polyeng explain matmul 64x768:f32 768x768:f32 --fp-math bf16 --json")
    explain.add_argument("op", help="the op's name, e.g. softmax, max_pool2d, matmul")
    explain.add_argument("args", nargs="*", metavar="ARG",
                         help="the op's arguments: tensors as SHAPE:DTYPE, others as Python literals, "
                              "by position or as name=value")
    explain.add_argument("--engine", help="the user engine, as compute_eng(ENGINE): recommend, basic, numba, "
                                          "opencl or a plugin's (default: the process default, POLYENG_COMPUTE_ENG)")
    explain.add_argument("--no-fallback", action="store_true",
                         help="as compute_eng(ENGINE, fallback=False): only that engine may run the call")
    explain.add_argument("--fp-math", metavar="MODE", help=f"fp math mode for the call: {FP_MATH_MODES} (default: "
                                                           "the process default, POLYENG_DEFAULT_FP_MATH_MODE)")
    explain.add_argument("--json", action="store_true", help="print the decision as one JSON object")


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="time the benchmark workload per op and engine, against PyTorch and "
                                         "copy bandwidth", epilog="example: polyeng bench --cases softmax,pool "
                                                                  "--dtype all --json out.json --plot out.png")
    bench.add_argument("--dtype", default="f32", help="f32 (default), a comma list such as f32,bf16,f16, or all")
    bench.add_argument("--cases", help="comma list of substrings; only cases whose name contains one run")
    bench.add_argument("--engines", help="comma list of engines (default: every available one with the op)")
    bench.add_argument("--scale", type=float, help="batch scale of the workload (default 1.0; 0.1 with --quick)")
    bench.add_argument("--repeat", type=int, help="timed repetitions per case and engine (default 7; 3 with --quick)")
    bench.add_argument("--quick", action="store_true", help="a short run to see that everything works: "
                                                            "--scale 0.1 --repeat 3 unless given")
    bench.add_argument("--threads", type=int, default=2, help="threads for torch and numba (default 2)")
    bench.add_argument("--no-torch", action="store_true", help="do not run the PyTorch equivalents")
    bench.add_argument("--json", metavar="PATH", help="write every time, the medians and the header as JSON")
    bench.add_argument("--plot", metavar="PATH", help="write a chart of torch/engine (basic/engine without torch) "
                                                      "as PNG, or SVG or PDF by the file name (needs matplotlib)")
    bench.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    bench.add_argument("--models", action="store_true",
                       help="time the bundled ONNX models end to end instead (polyeng f32, numba, bf16 AMP, "
                            "onnxruntime, PyTorch); --cases filters them by file name")


def _add_run(sub) -> None:
    run = sub.add_parser(
        "run", help="run an ONNX model: outputs, engines per op, median time, and the difference from onnxruntime",
        description="Run an ONNX model through polyeng. Inputs not given with --input are drawn at random\n"
                    "from the model's signature (fixed seed): ids that index an embedding within its rows,\n"
                    "masks with the first place of the last axis True, other integers in [0, 10), floats\n"
                    "standard normal. Named dims take 8 unless --dim sets them.\n\n"
                    "With --dask the inputs are split along their batch dim into chunks that run\n"
                    "the whole model on the workers of a dask cluster, under the same --engine; each timed\n"
                    "run is one computation over the cluster, its outputs gathered (and --compare'd) here.",
        epilog="examples:\n"
               "  polyeng run model.onnx --compare\n"
               "  polyeng run model.onnx --input input_ids=ids.npy --dim seq=32 --amp bf16 --json out.json\n"
               "  polyeng run model.onnx --dim batch=64 --dask local:4 --compare\n"
               "  polyeng run model.onnx --dim batch=256 --dask tcp://10.0.0.5:8786 --chunk 16",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("model", help="the .onnx file")
    run.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                     help="an input of the model from a .npy file (repeat for each input)")
    run.add_argument("--dim", action="append", metavar="NAME=N",
                     help="the size of a named dim (batch, seq ...) for the random inputs (default 8)")
    run.add_argument("--engine", help="run under compute_eng(ENGINE): recommend, basic, numba, opencl or a "
                                      "plugin's (default: the process default, POLYENG_COMPUTE_ENG)")
    run.add_argument("--amp", choices=("bf16", "f16", "auto"),
                     help="convert to mixed precision first: to_mixed_precision in bf16 or f16, or "
                          "auto_mixed_precision in bf16 on these inputs")
    run.add_argument("--compare", action="store_true",
                     help="also run onnxruntime (the ONNX reference evaluator without it) and print the largest "
                          "difference per output")
    run.add_argument("--repeat", type=int, default=10, help="timed runs after one warm-up (default 10)")
    run.add_argument("--profile", action="store_true",
                     help="also print the time per op type and the slowest nodes (medians over --repeat runs)")
    run.add_argument("--disable-fusions", metavar="NAMES",
                     help="load without these fusions (comma-separated names, or all; see polyeng.graph.fusions())")
    run.add_argument("--json", metavar="FILE", help="write everything printed, and each node's decision, as JSON")
    run.add_argument("--dask", metavar="SPEC",
                     help="split the batch over a dask cluster (needs polyeng[dask]): local:N starts N worker "
                          "processes on this machine for the run; tcp://HOST:PORT uses a running scheduler")
    run.add_argument("--chunk", type=int, metavar="ROWS",
                     help="rows of each batch chunk with --dask (default: the batch over twice the number of "
                          "workers, rounded up: about 2 chunks per worker)")


def main(argv=None) -> int:
    """Runs one command; returns its exit status (2: bad argument or setting, 130: interrupted)."""
    with interrupts_kept() as caught:
        try:
            return _run_command(argv)
        except KeyboardInterrupt:
            caught()
            return _interrupted()
        except BrokenPipeError:
            # the reader went away (polyeng info | head): stop quietly, and keep the interpreter's
            # final flush of stdout from failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1


def _interrupted() -> int:
    clear = "\r\x1b[K" if sys.stderr.isatty() else ""   # the progress bar's line
    print(f"{clear}polyeng: interrupted", file=sys.stderr)
    return INTERRUPTED_EXIT


def _run_command(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return error("no command given; one of info, explain, bench, run, demo, warmup (see polyeng --help)")
    prog = f"polyeng {args.command}"
    # Warmup compiles on purpose: its progress bar says so, the per-op notices would only repeat it.
    with notices(show=args.command != "warmup"):
        try:
            check_environment()
        except UsageError as exc:   # a setting of the whole process, not of this command
            return error(str(exc))
        try:
            # Each command is this package's module of that name, with ``run(args) -> int``; imported only
            # when it runs, so ``polyeng info`` does not pay for the bench's imports.
            return importlib.import_module(f"{__name__}.{args.command}").run(args)
        except (UsageError, BenchError) as exc:   # the harness's refusals, of options and files, read alike
            return error(str(exc), prog)
        except MemoryError as exc:   # a batch or --dim too large for this machine: the user's to change
            detail = f" ({exc})" if str(exc) else ""
            return error(f"out of memory{detail}; try a smaller batch or --dim", prog)
