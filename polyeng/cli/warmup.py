"""``polyeng warmup``: compile every kernel ahead of time, for container images and CI caches.

Each engine runs small calls of every op in every dtype the op takes (and the variants whose
kernels differ: softmax over the last axis and over another, a transposing permute, ...), so
numba compiles each kernel for each signature and writes it to its on-disk cache, and OpenCL
builds its programs (cached by pyopencl and the driver). NUMBA's calls run twice, the second
time on the serial compiles of its parallel kernels, which a one-thread launch runs where numba
is on its workqueue layer (a process that imported torch first). A second warmup finds
everything cached and only loads it.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import polyeng
from ..engine import dtypes as dt
from ..examples import example_calls, warmup_variants
from ..bench.progress import Progress
from .console import UsageError
from .options import named_engines

FLOATS = ("f32", "f64", "bf16", "f16")
EXACT = ("s8", "u8", "s32", "s64", "bool")   # taken by the data-movement ops (and matmul, cast)


def warmup_calls(dtype_name: str, seed: int = 0) -> list:
    """Every warm-up call in one dtype: (op, args, kwargs)."""
    rng, dtype = np.random.default_rng(seed), dt.as_dtype(dtype_name)
    calls = [(op, args, kwargs) for op, (args, kwargs) in example_calls(rng, dtype).items()]
    return calls + warmup_variants(rng, dtype)


def _choose_engines(names: str | None) -> tuple[list[str], list[str]]:
    """(engines to warm up, notes on the available-by-default ones that are skipped)."""
    if names is None:
        records = polyeng.engines()
        chosen = [e.name for e in records if e.name != "basic" and e.available]
        skipped = [f"{e.name}: unavailable ({e.reason})" for e in records if not e.available]
        return chosen, skipped
    chosen = named_engines(names)
    if not chosen:
        raise UsageError("--engines is empty; expected e.g. numba,opencl")
    return chosen, []


def _dtypes(text: str) -> list[str]:
    if text.strip().lower() == "all":
        return list(FLOATS + EXACT)
    out = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        try:
            out.append(dt.short_name(dt.as_dtype(name, "--dtype")))
        except TypeError as exc:
            raise UsageError(str(exc)) from None
    if not out:
        raise UsageError("--dtype is empty; expected all or a comma list such as f32,bf16")
    return out


def _ops(text: str | None) -> set | None:
    if text is None:
        return None
    from ..ops import OPS
    names = {n.strip().lower() for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(OPS))
    if unknown or not names:
        raise UsageError(f"--ops {text!r}: {', '.join(unknown) or 'empty'} is not an op; ops: {', '.join(OPS)}")
    return names


def numba_cache_counts() -> tuple[int, int, str | None]:
    """(compiles, loads from the disk cache, cache folder) of the numba kernels this process used."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        return 0, 0, None
    compiled = loaded = 0
    folder = None
    dispatchers = []
    for name, module in list(sys.modules.items()):
        if name.startswith("polyeng.backends.numba.") and module is not None:
            dispatchers += [value for value in list(vars(module).values()) if isinstance(value, Dispatcher)]
    runtime = sys.modules.get("polyeng.backends.numba._runtime")
    if runtime is not None:   # the serial compiles of parallel kernels
        dispatchers += list(runtime._serial.values())
    for value in dispatchers:
        compiled += sum(value.stats.cache_misses.values())
        loaded += sum(value.stats.cache_hits.values())
        folder = folder or getattr(getattr(value, "_cache", None), "_cache_path", None)
    import numba
    return compiled, loaded, numba.config.CACHE_DIR or folder   # NUMBA_CACHE_DIR, else next to the sources


def _warm_program_loops(entry: dict) -> None:
    """The compiled loops a graph's oneDNN programs run in (``backends/onednn/_native.py``, the lane
    worker's) and their guards' scans: llvmlite's, compiled here into polyeng's cache folder as a
    program's first run would compile them (``backends/onednn/_llvm.py``)."""
    from ..backends.onednn import _lane_worker, _native, _scans
    began = time.perf_counter()
    if _native.available():   # else (llvmlite missing) programs run from Python
        _lane_worker.available()   # where the C library has POSIX semaphores
    _scans.compiled()   # None where llvmlite cannot make them
    entry["seconds"] += time.perf_counter() - began


def run(args) -> int:
    start = time.perf_counter()
    engines, skipped = _choose_engines(args.engines)
    dtypes = _dtypes(args.dtype)
    ops = _ops(args.ops)
    records = {e.name: e for e in polyeng.engines()}
    work = [(engine, dtype, op, call_args, kwargs) for engine in engines for dtype in dtypes
            for op, call_args, kwargs in warmup_calls(dtype)
            if op in records[engine].ops and (ops is None or op in ops)]
    progress = Progress(quiet=args.quiet)
    summary = {engine: {"calls": 0, "invalid": 0, "seconds": 0.0, "rejected": {}} for engine in engines}
    failures = []
    for done, (engine, dtype, op, call_args, kwargs) in enumerate(work):
        progress(done, len(work), f"{engine} {op} {dtype}")
        entry = summary[engine]
        with polyeng.compute_eng(engine, fallback=False):
            try:   # a dtype the op does not take is skipped; so is a call the engine rejects, with its reason
                polyeng.explain(op, *call_args, **kwargs)
            except (TypeError, ValueError):
                entry["invalid"] += 1
                continue
            except polyeng.EngineError as exc:
                entry["rejected"][exc.reason] = entry["rejected"].get(exc.reason, 0) + 1
                continue
            began = time.perf_counter()
            try:
                getattr(polyeng, op)(*call_args, **kwargs)
                if engine == "numba":   # and the serial compiles a one-thread launch runs on numba's workqueue layer
                    from ..backends.numba._runtime import serial_variants
                    with serial_variants():
                        getattr(polyeng, op)(*call_args, **kwargs)
            except Exception as exc:   # a kernel that fails to compile or run: a bug to report
                first_line = str(exc).splitlines()[0] if str(exc) else ""
                failures.append(f"{engine} {op} {dtype}: {type(exc).__name__}: {first_line}")
            entry["seconds"] += time.perf_counter() - began
            entry["calls"] += 1
    if "onednn" in engines and ops is None:
        progress(len(work), len(work), "onednn program loops")
        _warm_program_loops(summary["onednn"])
    progress.finish(f"polyeng warmup: {', '.join(engines) or 'no engine'} done in {time.perf_counter() - start:.1f} s")
    for engine, entry in summary.items():
        line = f"  {engine:<8} {entry['calls']} calls in {entry['seconds']:.1f} s, dtypes {','.join(dtypes)}"
        if entry["invalid"]:
            line += f"; {entry['invalid']} calls skipped: the op does not take that dtype"
        if engine == "numba":
            compiled, loaded, folder = numba_cache_counts()
            line += f"; {compiled} kernels compiled, {loaded} loaded from the disk cache"
            if folder:
                line += f" ({folder})"
        print(line)
        for reason, count in entry["rejected"].items():
            print(f"  {engine:<8} rejected {count} calls: {reason}")
    for note in skipped:
        print(f"  skipped {note}")
    for failure in failures:
        print(f"polyeng warmup: failed: {failure}", file=sys.stderr)
    return 1 if failures else 0
