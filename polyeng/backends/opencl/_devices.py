"""The OpenCL devices as ``polyeng info`` lists them, the one OPENCL uses marked."""
from __future__ import annotations


def describe() -> list[str]:
    """One line per OpenCL device (platform:device numbers, type, compute units, memory, fp64)."""
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception as exc:
        return [f"no OpenCL platform ({type(exc).__name__}: {exc})"]
    try:
        from ._runtime import choose_device
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
    return lines or ["no devices (the platforms report none)"]
