"""The op benchmark: every chosen case of the workload (``workload``) in every dtype, timed one case
at a time (``measure``) on every chosen engine beside PyTorch and a plain copy.

The result is a JSON-ready dict: the header (machine, versions, settings) and one entry per case
and dtype, with each engine, PyTorch and a plain ``np.copyto`` moving as many bytes as the case
timed side by side; ``report`` shows it.
"""
from __future__ import annotations

import contextlib
import datetime
import os
import platform

import numpy as np

import polyeng
from ..engine import dtypes as dt
from . import BenchError
from .measure import DEVICE_SUFFIX, device_engines, measure_case
from .runtimes import installed_version, load_torch, thread_policy_text, thread_settings
from .workload import CASES, cases as workload_cases

DTYPES = ("f32", "bf16", "f16")   # the dtypes of ``--dtype all``


def select_cases(names: str | None) -> list:
    """The workload's cases whose name contains one of the comma-separated ``names`` (all for None)."""
    wanted = [c for c in CASES if not names or any(s in c.name for s in names.split(","))]
    if not wanted:
        raise BenchError(f"--cases {names!r} matches no case; cases: {', '.join(c.name for c in CASES)}")
    return wanted


def default_engines(ops: set[str]) -> list[str]:
    """Every available engine implementing one of ``ops``."""
    return [e.name for e in polyeng.engines() if e.available and ops & set(e.ops)]


def header(threads_set: dict, *, threads: int, with_torch: bool, scale: float, repeat: int, dtypes: list) -> dict:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "affinity": affinity, "threads": threads, "threads_set": threads_set,
            "python": platform.python_version(), "numpy": np.__version__, "numba": installed_version("numba"),
            "torch": installed_version("torch") if with_torch else "not run (--no-torch)",
            "polyeng": polyeng.__version__, "machine": platform.machine(),
            "thread_policy": thread_policy_text(), "scale": scale, "repeat": repeat,
            "dtypes": dtypes}


def run_bench(wanted: list, dtypes: list[str], engines: list[str] | None = None, *, scale: float = 1.0,
              repeat: int = 7, threads: int = 2, with_torch: bool = True, progress=None) -> dict:
    """The whole benchmark of the ``wanted`` cases in ``dtypes`` (short names) as a JSON-ready dict:
    ``header`` and one ``results`` entry per case and dtype. ``engines``: the engines to time (None:
    every available one with one of the ops).

    ``progress(done, total, label)`` is called as work advances (units: timed rounds).
    """
    engines = default_engines({c.op for c in wanted}) if engines is None else engines
    torch = load_torch(with_torch)
    total, done, results = len(wanted) * len(dtypes) * repeat, 0, []
    with thread_settings(threads, torch) as threads_set, \
            (torch.no_grad() if torch is not None else contextlib.nullcontext()):
        info = header(threads_set, threads=threads, with_torch=with_torch, scale=scale, repeat=repeat, dtypes=dtypes)
        for dtype in dtypes:
            for case, call_args, kwargs in workload_cases(scale, dt.as_dtype(dtype)):
                if case not in wanted:
                    continue
                label = f"{case.name} {dtype}"
                if progress:
                    progress(done, total, label)
                step = (lambda rep, base=done, label=label: progress(base + rep, total, label)) if progress else None
                results.append(measure_case(case, call_args, kwargs, dtype, engines, torch, repeat, step))
                done += repeat
        info["thread_policy"] = thread_policy_text()   # the pools as the run started them
    timed = [n for name in engines for n in (name, name + DEVICE_SUFFIX) if n == name or name in device_engines()]
    return {"header": info, "engines": timed + (["torch"] if torch is not None else []), "results": results}
