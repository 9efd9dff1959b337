"""``polyeng bench``: the command. Checks its options, picks the engines and thread counts, times
every chosen case of the workload (``workload``, one case at a time by ``measure``) in every dtype,
and prints, writes and draws the result (``report``).

The result is a JSON-ready dict: the header (machine, versions, settings) and one entry per case
and dtype, with each engine, PyTorch and a plain ``np.copyto`` moving as many bytes as the case
timed side by side.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import time
from importlib import metadata

import numpy as np

import polyeng
from ..engine import dtypes as dt
from .console import UsageError
from .options import named_engines
from .measure import DEVICE_SUFFIX, device_engines, measure_case
from .report import Progress, check_plot_path, plot, table
from .workload import CASES, cases

ALL_DTYPES = ("f32", "bf16", "f16")


class BenchError(UsageError):
    """A bench setting or environment that prevents running; the message is one line for the user."""


def parse_dtypes(text: str) -> list[str]:
    names = list(ALL_DTYPES) if text.strip().lower() == "all" else [t.strip() for t in text.split(",") if t.strip()]
    out = []
    for name in names:
        try:
            dtype = dt.as_dtype(name, "--dtype")
        except TypeError as exc:
            raise BenchError(str(exc)) from None
        if dtype not in dt.FLOAT_DTYPES:
            raise BenchError(f"--dtype {name}: the workload needs a float dtype (f32, f64, bf16, f16)")
        out.append(dt.short_name(dtype))
    if not out:
        raise BenchError("--dtype is empty; expected e.g. f32, f32,bf16,f16 or all")
    return out


def select_engines(names: str | None, ops: set[str]) -> list[str]:
    """The engines to time: the named ones, else every available engine implementing one of ``ops``."""
    if names is not None:
        return named_engines(names, BenchError)
    return [e.name for e in polyeng.engines() if e.available and ops & set(e.ops)]


def load_torch(wanted: bool):
    if not wanted:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch


@contextlib.contextmanager
def thread_settings(threads: int, torch):
    """Sets torch's and numba's thread counts for the run; yields what was set, as text."""
    notes, restore = {}, []
    if torch is not None:
        restore.append((torch.set_num_threads, torch.get_num_threads()))
        torch.set_num_threads(threads)
        notes["torch"] = str(threads)
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:
        limit = numba.config.NUMBA_NUM_THREADS
        if threads <= limit:
            restore.append((numba.set_num_threads, numba.get_num_threads()))
            numba.set_num_threads(threads)
            notes["numba"] = str(threads)
        else:
            notes["numba"] = f"{numba.get_num_threads()} (NUMBA_NUM_THREADS={limit} < {threads})"
    try:
        yield notes
    finally:
        for setter, value in restore:
            setter(value)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)   # without importing it: torch takes seconds to import
    except metadata.PackageNotFoundError:
        return "not installed"


def check_writable(option: str, path: str) -> None:
    """Refuse an output path that cannot be written before the run, not after minutes of it."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise BenchError(f"{option} {path}: is a directory; expected a file name")
    if not os.path.isdir(folder):
        raise BenchError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise BenchError(f"{option} {path}: not writable")


def header(threads: dict, args) -> dict:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "affinity": affinity, "threads": args.threads, "threads_set": threads,
            "python": platform.python_version(), "numpy": np.__version__, "numba": _version("numba"),
            "torch": "not run (--no-torch)" if args.no_torch else _version("torch"),
            "polyeng": polyeng.__version__, "machine": platform.machine(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"), "scale": args.scale, "repeat": args.repeat, "dtypes": args.dtypes}


def run_bench(args, progress=None) -> dict:
    """The whole benchmark as a JSON-ready dict: ``header`` and one ``results`` entry per case and dtype.

    ``progress(done, total, label)`` is called as work advances (units: timed rounds).
    """
    wanted = [c for c in CASES if not args.cases or any(s in c.name for s in args.cases.split(","))]
    if not wanted:
        raise BenchError(f"--cases {args.cases!r} matches no case; cases: {', '.join(c.name for c in CASES)}")
    engines = select_engines(args.engines, {c.op for c in wanted})
    torch = load_torch(not args.no_torch)
    total, done, results = len(wanted) * len(args.dtypes) * args.repeat, 0, []
    with thread_settings(args.threads, torch) as threads, \
            (torch.no_grad() if torch is not None else contextlib.nullcontext()):
        info = header(threads, args)
        for dtype in args.dtypes:
            for case, call_args, kwargs in cases(args.scale, dt.as_dtype(dtype)):
                if case not in wanted:
                    continue
                label = f"{case.name} {dtype}"
                if progress:
                    progress(done, total, label)
                step = (lambda rep, base=done, label=label: progress(base + rep, total, label)) if progress else None
                results.append(measure_case(case, call_args, kwargs, dtype, engines, torch, args.repeat, step))
                done += args.repeat
    timed = [n for name in engines for n in (name, name + DEVICE_SUFFIX) if n == name or name in device_engines()]
    return {"header": info, "engines": timed + (["torch"] if torch is not None else []), "results": results}


def run(args) -> int:
    start = time.perf_counter()
    # Engines run interleaved: OpenMP workers that spin after a kernel (torch's, numba's) would steal
    # the cores from the next engine's call; main runs every command under console.passive_openmp.
    try:
        if args.models:   # the bundled ONNX models end to end, instead of the op workload
            from .bench_models import run_models_bench
            return run_models_bench(args)
        if args.quick:
            args.scale = 0.1 if args.scale is None else args.scale
            args.repeat = 3 if args.repeat is None else args.repeat
        args.scale = 1.0 if args.scale is None else args.scale
        args.repeat = 7 if args.repeat is None else args.repeat
        if args.repeat < 1 or args.threads < 1 or args.scale <= 0:
            raise BenchError(f"--repeat {args.repeat}, --threads {args.threads}, --scale {args.scale}: "
                             "expected positive numbers")
        args.dtypes = parse_dtypes(args.dtype)
        for option, path in (("--json", args.json), ("--plot", args.plot)):
            if path:   # checked before the run, not after minutes of it
                check_writable(option, path)
        if args.plot:
            check_plot_path(args.plot)
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
    except OSError as exc:   # the output files, checked beforehand, may still fail (disk full)
        raise BenchError(str(exc)) from None
    return 0
