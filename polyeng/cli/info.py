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


def report() -> str:
    import polyeng
    from ..engine import fpmath, settings, verbose
    from ..engine.plugins import autoload_enabled, registry
    out = [f"polyeng {polyeng.__version__} on Python {platform.python_version()} ({platform.machine()}, "
           f"{os.cpu_count()} CPUs)",
           "versions: " + ", ".join(f"{d} {_version(d)}" for d in
                                    ("numpy", "ml_dtypes", "pluggy", "numba", "pyopencl")),
           "", "engines:"]
    for e in polyeng.engines():
        state = "available" if e.available else f"unavailable: {e.reason}"
        out.append(f"  {e.name:<10} {state}; {len(e.ops)} ops{': ' + ', '.join(e.ops) if e.ops else ''}")
    out += _engine_details(registry())
    env_eng = os.environ.get(settings.ENV_COMPUTE_ENG)
    out += ["", "defaults:",
            f"  compute engine: {polyeng.get_compute_eng()} "
            f"({'env ' + settings.ENV_COMPUTE_ENG if env_eng else 'default'})",
            f"  fp math mode:   {fpmath.get_fp_math_mode().value} ({fpmath.default_source()})",
            f"  verbose level:  {verbose.level()}",
            f"  plugin autoload: {'on' if autoload_enabled() else 'off (POLYENG_DISABLE_PLUGIN_AUTOLOAD)'}"]
    return "\n".join(out)


def run(args) -> int:
    print(report())
    return 0
