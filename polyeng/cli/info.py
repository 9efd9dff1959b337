"""The text of ``polyeng info``: versions, engines and why, OpenCL devices, defaults."""
from __future__ import annotations

import json
import os
import platform
from importlib import metadata


# the optional packages behind polyeng[onnx] and polyeng[dask]
EXTRAS = ("onnx", "onnxruntime", "dask", "distributed")
DEPENDENCIES = ("numpy", "ml_dtypes", "pluggy", "numba", "llvmlite", "pyopencl")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _engine_details(registry) -> list[str]:
    """What engines say of themselves (OpenCL: its devices), one section each."""
    out = []
    for record in registry.engines.values():
        if record.details is None:
            continue
        try:
            lines = list(record.details())
        except Exception as exc:   # a plugin's description must not break info
            lines = [f"(could not be listed: {type(exc).__name__}: {exc})"]
        title = "OpenCL devices" if record.name == "opencl" else f"{record.name} details"
        out += ["", f"{title}:"] + [f"  {line}" for line in lines]
    return out


def _ops_text(ops, every) -> str:
    """An engine's ops, short: every op, most of them but a few, or the list."""
    missing = [name for name in every if name not in ops]
    if not missing:
        return f"all {len(every)} ops"
    if len(missing) < len(ops):
        return f"{len(ops)} of {len(every)} ops (not {', '.join(missing)})"
    return f"{len(ops)} op{'' if len(ops) == 1 else 's'}" + (": " + ", ".join(ops) if ops else "")


def report() -> str:
    import polyeng
    from ..engine import fpmath, settings, verbose
    from ..engine.plugins import autoload_enabled, registry
    out = [f"polyeng {polyeng.__version__} on Python {platform.python_version()} ({platform.machine()}, "
           f"{os.cpu_count()} CPUs)",
           "versions: " + ", ".join(f"{d} {_version(d)}" for d in
                                    DEPENDENCIES),
           "extras: " + ", ".join(f"{d} {_version(d)}" for d in EXTRAS),
           "", "engines:"]
    from ..ops import OPS
    for e in polyeng.engines():
        state = "available" if e.available else f"unavailable: {e.reason}"
        out.append(f"  {e.name:<10} {state}; {_ops_text(e.ops, OPS)}")
    out += _engine_details(registry())
    env_eng = os.environ.get(settings.ENV_COMPUTE_ENG)
    out += ["", "defaults:",
            f"  compute engine: {polyeng.get_compute_eng()} "
            f"({'env ' + settings.ENV_COMPUTE_ENG if env_eng else 'default'})",
            f"  fp math mode:   {fpmath.get_fp_math_mode().value} ({fpmath.default_source()})",
            f"  verbose level:  {verbose.level()}",
            f"  plugin autoload: {'on' if autoload_enabled() else 'off (POLYENG_DISABLE_PLUGIN_AUTOLOAD)'}"]
    threads = thread_policy()
    from ..engine import thread_trials
    numba, blas = threads["pools"].get("numba"), threads["blas"]
    out += ["", "threads:",
            f"  budget:         {threads['num_threads']} (default {threads['default']}: {threads['source']}; "
            f"{threads['cores']} cores usable)",
            "  numba:          " + (f"{numba['layer']} layer, {numba['size']} workers; {numba['wait']}; "
                                     f"set by the user: {numba['set_by_user']}" if numba else "not available"),
            "  BLAS:           " + (f"{blas.get('library', '?')} {blas.get('version', '')} ({blas.get('threading', '?')}), "
                                     f"{blas['threads']} threads; small products on 1, large on the budget, matmul and linear on the faster of the two"
                                     if blas else "not driven (not an OpenBLAS with its own threads)"),
            "  BLAS workers:   " + _spin_text(),
            f"  now:            {threads['threads_now']} threads for a parallel kernel "
            f"(fewer while other processes keep cores busy)",
            "  per kernel:     " + ("the budget or one thread, whichever its first calls ran faster on "
                                    "(NUMBA launches and ONEDNN primitives)" if thread_trials.enabled
                                    else "the budget (trials off)")]
    from ..engine import memory
    kept = memory.keep_freed_memory()   # what a graph's first run does
    out += ["", "memory:", "  freed memory:   " + ("kept for the next run; " if kept["kept"] else "given back (") + kept["why"]
            + ("" if kept["kept"] else ")")]
    return "\n".join(out)


def _spin_text() -> str:
    from ..backends import _blas_spin
    spin = _blas_spin.apply()
    return spin["why"] if spin["short"] else f"spin as OpenBLAS sets them ({spin['why']})"


def thread_policy() -> dict:
    """polyeng's thread policy (``engine.threads.policy``) with numba's pool started under it and
    numpy's BLAS as polyeng drives it."""
    from ..backends._blas_threads import blas_info
    from ..engine import threads
    try:
        from ..backends.numba._runtime import start_pool
        start_pool()
    except Exception:   # numba unavailable: the engine list says why
        pass
    return dict(threads.policy(), blas=blas_info())


def opencl_devices() -> list[dict]:
    """Every OpenCL device as plain values, the one OPENCL uses marked ``used``; [] without a platform."""
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception:
        return []
    try:
        from ..backends.opencl._runtime import choose_device
        chosen = choose_device()
    except Exception:   # no device matches POLYENG_OPENCL_DEVICE: the engine says so in its reason
        chosen = None
    return [{"index": f"{i}:{j}", "platform": p.name, "device": d.name,
             "type": cl.device_type.to_string(d.type), "compute_units": d.max_compute_units,
             "memory_mib": d.global_mem_size // 2**20, "fp64": "cl_khr_fp64" in d.extensions,
             "used": chosen is not None and d == chosen}
            for i, p in enumerate(platforms) for j, d in enumerate(p.get_devices())]


def as_json() -> dict:
    """What ``report`` prints, as one JSON-ready dict."""
    import polyeng
    from ..cli import version
    from ..engine import fpmath, settings, verbose
    from ..engine.plugins import autoload_enabled, registry
    details = {}
    for record in registry().engines.values():
        if record.details is not None and record.name != "opencl":   # OpenCL's: ``opencl_devices``
            try:
                details[record.name] = [str(line) for line in record.details()]
            except Exception as exc:
                details[record.name] = [f"(could not be listed: {type(exc).__name__}: {exc})"]
    return {
        "polyeng": version(), "python": platform.python_version(), "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {"python": platform.python_version(), "polyeng": version(),
                     **{d: _version(d) for d in DEPENDENCIES + EXTRAS}},
        "engines": [{"name": e.name, "available": e.available, "reason": e.reason, "ops": list(e.ops)}
                    for e in polyeng.engines()],
        "opencl_devices": opencl_devices(),
        "details": details,
        "defaults": {"compute_engine": polyeng.get_compute_eng(),
                     "compute_engine_source": f"env {settings.ENV_COMPUTE_ENG}"
                     if os.environ.get(settings.ENV_COMPUTE_ENG, "").strip() else "default",
                     "fp_math_mode": fpmath.get_fp_math_mode().value, "fp_math_mode_source": fpmath.default_source(),
                     "verbose": verbose.level(), "plugin_autoload": autoload_enabled()},
        "threads": thread_policy(),
    }


def run(args) -> int:
    print(json.dumps(as_json(), indent=2) if args.json else report())
    return 0
