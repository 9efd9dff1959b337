"""One case of ``polyeng bench`` timed: a runner per engine (and per engine on device tensors, and
PyTorch), each result checked against BASIC's, then interleaved timed rounds beside a plain copy.

Every runner is called once (its result checked), then up to ``WARMUP_CALLS`` more times untimed
(at most ``WARMUP_S`` seconds), then ``repeat`` times in a rotating order so that drift (clock,
other processes) hits all of them alike; the median is reported. An engine with device
tensors (OPENCL) is timed twice: with numpy arrays in and out (transfers included), and as
``engine:device`` with its inputs uploaded before timing and its result left on the device.
"""
from __future__ import annotations

import gc
import math
import statistics
import time

import numpy as np

import polyeng
from ..engine import dtypes as dt
from .workload import moved_bytes

# Calls of each runner after its checked one, before the timed rounds: a NUMBA kernel's or ONEDNN
# primitive's first 7 calls alternate between the thread budget and one thread to choose
# (engine/thread_trials.py), so timed right away half the rounds ran on one thread (a ONEDNN
# 3x3 convolution of 8x64x56x56: 9-10 ms and 17-18 ms, alternately).
WARMUP_CALLS = 8
WARMUP_S = 1.0

# Loose on purpose: the check catches wrong results, not rounding differences between kernels.
TOLERANCE = {"f32": 1e-3, "f64": 1e-6, "bf16": 5e-2, "f16": 5e-2}
DEVICE_SUFFIX = ":device"


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


def device_engines() -> set[str]:
    """Engines with device tensors (``polyeng.to_device``): timed once more with inputs already there."""
    from ..engine.plugins import registry
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


def warm_up(call, calls: int = WARMUP_CALLS, seconds: float = WARMUP_S) -> None:
    """``call`` up to ``calls`` times, stopping after ``seconds``."""
    began = time.perf_counter()
    for _ in range(calls):
        call()
        if time.perf_counter() - began > seconds:
            break


def interleaved_rounds(runners: dict, results: dict, repeat: int, after_call=None, after_round=None,
                       settle_s: float = 0.0, timed: int = 1) -> None:
    """``repeat`` rounds calling every runner ``timed`` times, appending each call's time to
    ``results[name]["times_s"]`` (after calling it untimed for ``settle_s`` seconds, at least
    once, when that is above 0). Each round starts one runner later than the last, so no runner
    always follows the same one; the garbage collector is off while timing."""
    order = list(runners)
    if not order:   # every runner failed its first call: nothing to time
        return
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeat):
            shift = rep % len(order)
            for name in order[shift:] + order[:shift]:
                call = runners[name]
                if settle_s > 0:
                    end = time.perf_counter() + settle_s
                    call()
                    while time.perf_counter() < end:
                        call()
                for _ in range(timed):
                    start = time.perf_counter()
                    call()
                    results[name]["times_s"].append(time.perf_counter() - start)
                if after_call:
                    after_call()
            if after_round:
                after_round(rep + 1)
    finally:
        if gc_was_enabled:
            gc.enable()


def measure_case(case, args, kwargs, dtype, engines, torch, repeat, progress=None) -> dict:
    """One case: warm-up, correctness against BASIC, then ``repeat`` interleaved timed rounds."""
    with polyeng.compute_eng("basic", fallback=False):
        reference = getattr(polyeng, case.op)(*args, **kwargs)
    nbytes = moved_bytes(args, kwargs, reference, case)
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
    for call in runners.values():
        warm_up(call)
    interleaved_rounds(runners, results, repeat, after_round=progress)
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
