"""polyeng's fp math mode as oneDNN's fpmath attribute (seed 000).

ALLOW ops (matmul, linear, conv, lstm, gru) on f32 data compute in the mode's most preferred type
that this CPU computes natively: bf16 where it has AVX512-BF16 or AMX-BF16, f16 where it has
AVX512-FP16 or AMX-FP16; f32 otherwise (tf32 has no CPU instructions, and ``tf32`` allows f32).
The kernel receives the f32 data as it is and oneDNN rounds it as it loads it, so nothing is
rounded ahead in numpy. 16-bit storage and FOLLOW/DENY ops compute in f32 (``fpmath.ALLOWED``).
"""
from __future__ import annotations

import functools

from ...engine import dtypes as dt
from ...engine import fpmath
from ...engine.mixed_precision import Category


@functools.lru_cache(maxsize=None)
def cpuinfo(field: str) -> str:
    """The first value of ``field`` in /proc/cpuinfo ("" where there is none, or no such file)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset:
    return frozenset(cpuinfo("flags").split())


def cpu_vendor() -> str:
    """``GenuineIntel``, ``AuthenticAMD`` ... ("" where /proc/cpuinfo does not say)."""
    return cpuinfo("vendor_id")


@functools.lru_cache(maxsize=1)
def native_types() -> tuple:
    """The down-conversion types this CPU has instructions for, most preferred first."""
    flags = cpu_flags()
    found = []
    if flags & {"avx512_bf16", "amx_bf16"}:
        found.append("bf16")
    if flags & {"avx512_fp16", "amx_fp16"}:
        found.append("f16")
    return tuple(found)


def compute_types(spec):
    """What the registry learns of an op's kernel: ALLOW ops may compute in the native types too."""
    if spec.category is Category.ALLOW:
        # every exact type, as its storage computes (the kernel's accepts turns down what oneDNN lacks)
        exact = tuple(dt.SHORT_NAMES[t] for t in dt.SUPPORTED_DTYPES if dt.SHORT_NAMES[t] not in fpmath.DOWN_CONVERSIONS)
        return native_types() + exact
    return None


def compute() -> str:
    """The compute type of this thread's ALLOW f32 work now: what ``KernelRecord.compute_for``
    chose for the plan being executed (plans are made per fp math mode)."""
    native = native_types()
    for kind in fpmath.ALLOWED[fpmath.get_fp_math_mode()]:
        if kind == "f32" or kind in native:
            return kind
    return "f32"
