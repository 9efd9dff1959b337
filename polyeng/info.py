"""The text of ``polyeng info``: versions, engines and why, OpenCL devices, defaults."""
from __future__ import annotations

import os
import platform
from importlib import metadata


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _opencl_devices() -> list[str]:
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception as exc:
        return [f"none ({type(exc).__name__}: {exc})"]
    try:
        from .backends.opencl.runtime import choose_device
        chosen = choose_device()
    except Exception:
        chosen = None
    lines = []
    for i, p in enumerate(platforms):
        for j, d in enumerate(p.get_devices()):
            fp64 = "fp64" if "cl_khr_fp64" in d.extensions else "no fp64"
            mark = "*" if chosen is not None and d == chosen else " "
            lines.append(f"{mark} {i}:{j} {p.name} | {d.name} | {cl.device_type.to_string(d.type)} | "
                         f"{d.max_compute_units} CUs | {d.global_mem_size // 2**20} MiB | {fp64}")
    if lines:
        lines.append("(* the device polyeng uses; POLYENG_OPENCL_DEVICE=gpu, cpu, P:D or part of a name picks one)")
    return lines or ["none (platforms report no devices)"]


def report() -> str:
    import polyeng
    from .engine import fpmath, settings, verbose
    from .engine.plugins import autoload_enabled
    out = [f"polyeng {polyeng.__version__} on Python {platform.python_version()} ({platform.machine()}, "
           f"{os.cpu_count()} CPUs)",
           "versions: " + ", ".join(f"{d} {_version(d)}" for d in
                                    ("numpy", "ml_dtypes", "pluggy", "numba", "pyopencl")),
           "", "engines:"]
    for e in polyeng.engines():
        state = "available" if e.available else f"unavailable: {e.reason}"
        out.append(f"  {e.name:<10} {state}; {len(e.ops)} ops{': ' + ', '.join(e.ops) if e.ops else ''}")
    out += ["", "OpenCL devices:"] + [f"  {line}" for line in _opencl_devices()]
    env_eng = os.environ.get(settings.ENV_COMPUTE_ENG)
    out += ["", "defaults:",
            f"  compute engine: {polyeng.get_compute_eng()} "
            f"({'env ' + settings.ENV_COMPUTE_ENG if env_eng else 'default'})",
            f"  fp math mode:   {fpmath.get_fp_math_mode().value} ({fpmath.default_source()})",
            f"  verbose level:  {verbose.level()}",
            f"  plugin autoload: {'on' if autoload_enabled() else 'off (POLYENG_DISABLE_PLUGIN_AUTOLOAD)'}"]
    return "\n".join(out)
