"""``polyeng bench``: time the benchmark workload on each engine and on PyTorch, against copy bandwidth.

The workload lives in ``benchmarks/workload.py`` of a source checkout, defined there once.
Per case every runner (one per engine, PyTorch, and a plain ``np.copyto`` moving as many bytes
as the case) is called once to warm up, then ``repeat`` times in a rotating order so that drift
(clock, other processes) hits all of them alike; the median is reported. An engine with device
tensors (OPENCL) is timed twice: with numpy arrays in and out (transfers included), and as
``engine:device`` with its inputs uploaded before timing and its result left on the device.
"""
from __future__ import annotations

import contextlib
import datetime
import gc
import importlib
import importlib.util
import math
import os
import pathlib
import platform
import statistics
import sys
import time
from importlib import metadata

import numpy as np

import polyeng
from .engine import dtypes as dt

ALL_DTYPES = ("f32", "bf16", "f16")
# Loose on purpose: the check catches wrong results, not rounding differences between kernels.
TOLERANCE = {"f32": 1e-3, "f64": 1e-6, "bf16": 5e-2, "f16": 5e-2}


class BenchError(Exception):
    """A bench setting or environment that prevents running; the message is one line for the user."""


def load_workload():
    """The ``workload`` module of the checkout this package was imported from (or one on sys.path)."""
    path = pathlib.Path(polyeng.__file__).resolve().parent.parent / "benchmarks" / "workload.py"
    if path.is_file():
        name = "polyeng_benchmarks_workload"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module   # dataclasses look the module up while the file executes
            spec.loader.exec_module(module)
        return sys.modules[name]
    try:
        return importlib.import_module("benchmarks.workload")
    except ImportError:
        raise BenchError(f"the benchmark workload was not found: no {path} and no importable "
                         "benchmarks.workload; bench runs from a source checkout of polyeng") from None


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
    records = {e.name.lower(): e for e in polyeng.engines()}
    if names is None:
        return [e.name for e in records.values() if e.available and ops & set(e.ops)]
    chosen = []
    for name in (n.strip().lower() for n in names.split(",") if n.strip()):
        if name not in records:
            raise BenchError(f"--engines {name!r} is not a registered engine; registered: {', '.join(records)}")
        if not records[name].available:
            raise BenchError(f"--engines {name!r} is unavailable: {records[name].reason}")
        chosen.append(records[name].name)
    return chosen


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


def header(threads: dict, args) -> dict:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "affinity": affinity, "threads": args.threads, "threads_set": threads,
            "python": platform.python_version(), "numpy": np.__version__, "numba": _version("numba"),
            "torch": _version("torch"), "polyeng": polyeng.__version__, "machine": platform.machine(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"), "scale": args.scale, "repeat": args.repeat, "dtypes": args.dtypes}


def _leaves(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield np.asarray(value)


def max_relative_diff(result, reference) -> float:
    """max |result - reference| over all outputs, relative to max |reference|; inf if shapes differ."""
    got, want = list(_leaves(result)), list(_leaves(reference))
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        if g.size == 0:
            continue
        if not np.array_equal(np.isnan(g), np.isnan(w)):
            return float("inf")
        finite = ~np.isnan(w)
        diff = float(np.max(np.abs(g - w), where=finite, initial=0.0))
        worst = max(worst, diff / max(float(np.max(np.abs(w), where=finite, initial=0.0)), 1e-30))
    return worst


def _to_torch(torch, value):
    if isinstance(value, np.ndarray):
        if value.dtype == dt.bfloat16:
            return torch.from_numpy(value.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(torch, v) for v in value)
    if isinstance(value, dict):
        return {k: _to_torch(torch, v) for k, v in value.items()}
    return value


def _from_torch(torch, value):
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return (value.float() if value.is_floating_point() else value).numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_from_torch(torch, v) for v in value)
    return value


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]


DEVICE_SUFFIX = ":device"


def device_engines() -> set[str]:
    """Engines with device tensors (``polyeng.to_device``): timed once more with inputs already there."""
    from .engine.plugins import registry
    return {name for name, record in registry().engines.items() if record.to_device is not None}


def _to_device(value, engine):
    if isinstance(value, np.ndarray):
        return polyeng.to_device(value, engine)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, engine) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, engine) for k, v in value.items()}
    return value


def _from_device(value):
    if isinstance(value, (list, tuple)):
        return type(value)(_from_device(v) for v in value)
    return polyeng.to_numpy(value) if not isinstance(value, np.ndarray) and hasattr(value, "shape") else value


def _runners(case, args, kwargs, engines, torch):
    """name -> no-argument callable, for every engine implementing the op (engines with device
    tensors twice: host arrays in and out, then inputs uploaded beforehand with the result left
    on the device, named ``engine:device``), then torch if it builds."""
    records = {e.name: e for e in polyeng.engines()}
    op = getattr(polyeng, case.op)
    runners, errors = {}, {}
    on_device = device_engines()
    for name in engines:
        if case.op in records[name].ops:
            def run(name=name):
                with polyeng.compute_eng(name, fallback=False):
                    return op(*args, **kwargs)
            runners[name] = run
            if name in on_device:
                try:
                    dargs, dkwargs = _to_device(args, name), _to_device(kwargs, name)
                except Exception as exc:
                    errors[name + DEVICE_SUFFIX] = _error_text(exc)
                    continue

                def run_on_device(name=name, dargs=dargs, dkwargs=dkwargs):
                    with polyeng.compute_eng(name, fallback=False):
                        return op(*dargs, **dkwargs)
                runners[name + DEVICE_SUFFIX] = run_on_device
    if torch is not None and case.torch is not None:
        try:
            runners["torch"] = case.torch(torch, torch.nn.functional, _to_torch(torch, args), _to_torch(torch, kwargs))
        except Exception as exc:
            errors["torch"] = _error_text(exc)
    return runners, errors


def measure_case(workload, case, args, kwargs, dtype, engines, torch, repeat, progress=None) -> dict:
    """One case: warm-up, correctness against BASIC, then ``repeat`` interleaved timed rounds."""
    with polyeng.compute_eng("basic", fallback=False):
        reference = getattr(polyeng, case.op)(*args, **kwargs)
    nbytes = workload.moved_bytes(args, kwargs, reference)
    runners, errors = _runners(case, args, kwargs, engines, torch)
    results = {}
    for name, run in list(runners.items()):
        try:
            result = reference if name == "basic" else run()   # computing the reference warmed BASIC up
            if name == "torch":
                result = _from_torch(torch, result)
            elif name.endswith(DEVICE_SUFFIX):
                result = _from_device(result)
        except Exception as exc:
            errors[name] = _error_text(exc)
            del runners[name]
            continue
        diff = 0.0 if name == "basic" else max_relative_diff(result, reference)
        results[name] = {"max_rel_diff": diff if math.isfinite(diff) else None,   # None: shapes or NaNs differ
                         "ok": diff <= TOLERANCE.get(dtype, 1e-3), "times_s": []}
    reference = result = None   # free the outputs before timing
    # The copy reads half the case's bytes and writes the other half: the same traffic as the case.
    src, dst = np.ones(max(nbytes // 2, 1), np.uint8), np.zeros(max(nbytes // 2, 1), np.uint8)
    runners["copy"] = lambda: np.copyto(dst, src)
    runners["copy"]()
    results["copy"] = {"times_s": []}
    order = list(runners)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeat):
            shift = rep % len(order)
            for name in order[shift:] + order[:shift]:
                start = time.perf_counter()
                runners[name]()
                results[name]["times_s"].append(time.perf_counter() - start)
            if progress:
                progress(rep + 1)
    finally:
        if gc_was_enabled:
            gc.enable()
    for entry in results.values():
        entry["median_s"] = statistics.median(entry["times_s"])
        entry["gbps"] = nbytes / entry["median_s"] / 1e9
    copy_gbps = results["copy"]["gbps"]
    torch_s = results["torch"]["median_s"] if results.get("torch", {}).get("ok") else None
    basic_s = results["basic"]["median_s"] if "basic" in results else None
    for name, entry in results.items():
        if name == "copy":
            continue
        good = entry["ok"]
        entry["copy_pct"] = 100 * entry["gbps"] / copy_gbps if good else None
        entry["torch_ratio"] = torch_s / entry["median_s"] if good and torch_s else None
        entry["basic_ratio"] = basic_s / entry["median_s"] if good and basic_s else None
    copy = results.pop("copy")
    return {"case": case.name, "op": case.op, "dtype": dtype, "bytes": nbytes, "copy": copy,
            "engines": results, "errors": errors}


def run_bench(args, progress=None) -> dict:
    """The whole benchmark as a JSON-ready dict: ``header`` and one ``results`` entry per case and dtype.

    ``progress(done, total, label)`` is called as work advances (units: timed rounds).
    """
    workload = load_workload()
    wanted = [c for c in workload.CASES if not args.cases or any(s in c.name for s in args.cases.split(","))]
    if not wanted:
        raise BenchError(f"--cases {args.cases!r} matches no case; cases: {', '.join(c.name for c in workload.CASES)}")
    engines = select_engines(args.engines, {c.op for c in wanted})
    torch = load_torch(not args.no_torch)
    total, done, results = len(wanted) * len(args.dtypes) * args.repeat, 0, []
    with thread_settings(args.threads, torch) as threads, \
            (torch.no_grad() if torch is not None else contextlib.nullcontext()):
        info = header(threads, args)
        for dtype in args.dtypes:
            for case, call_args, kwargs in workload.cases(args.scale, dt.as_dtype(dtype)):
                if case not in wanted:
                    continue
                label = f"{case.name} {dtype}"
                if progress:
                    progress(done, total, label)
                step = (lambda rep, base=done, label=label: progress(base + rep, total, label)) if progress else None
                results.append(measure_case(workload, case, call_args, kwargs, dtype, engines, torch,
                                            args.repeat, step))
                done += args.repeat
    timed = [n for name in engines for n in (name, name + DEVICE_SUFFIX) if n == name or name in device_engines()]
    return {"header": info, "engines": timed + (["torch"] if torch is not None else []), "results": results}
