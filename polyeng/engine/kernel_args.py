"""What a kernel's arguments need before the call, for ``dispatch``'s bound plans: whether and how
floats are converted to the compute type under fp math, and device tensors of other engines
brought to the host."""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from . import fpmath
from .call import Call, is_device_tensor, map_arrays

def conversion_type(compute, kernel):
    """The type the dispatcher converts float arguments to: ``compute``, except that a kernel that
    applies a down-conversion itself (``own_fp_math``) gets f32 data as it is."""
    return "f32" if kernel.own_fp_math and compute in fpmath.DOWN_CONVERSIONS else compute


def needs_conversion(call: Call, compute: str, kernel) -> bool:
    """Whether some float argument is not already what the kernel computes on."""
    if call.spec.exact or compute is None:
        return False
    compute = conversion_type(compute, kernel)
    target = fpmath.arithmetic_dtype(compute)
    down = compute in fpmath.DOWN_CONVERSIONS
    found = []

    def check(a):
        if a.dtype in dt.FLOAT_DTYPES and not (kernel.native_storage and _stays_stored(a.dtype, compute)):
            if down or a.dtype != target:
                found.append(a)
        return a
    for value in call.args.values():
        map_arrays(value, check, _has_dtype)
    return bool(found)


def needs_host(call: Call, engine: str, reg) -> bool:
    if not reg.native_types():
        return False
    return any(owner is not None and owner.name != engine
               for owner in map(reg.owner_of, call.tensors().values()))


def host_arguments(args: dict, engine: str, reg) -> tuple[dict, list]:
    """Device tensors of other engines brought to the host (named in ``moved`` for verbose)."""
    moved = []

    def to_host(value, name):
        owner = reg.owner_of(value)
        if owner is None or owner.name == engine:
            return value
        moved.append(name)
        return owner.to_host(value) if owner.to_host else np.asarray(value)
    args = {name: map_arrays(value, lambda v, n=name: to_host(v, n), is_device_tensor)
            for name, value in args.items()}
    return args, moved


def compute_arguments(args: dict, compute: str, native_storage: bool) -> dict:
    """Float arrays converted to the compute type: widened to its arithmetic dtype and, for a
    down-conversion (bf16, f16, tf32), rounded to it. A kernel with ``native_storage`` reads
    16-bit arrays itself, so those are passed as stored."""
    target = fpmath.arithmetic_dtype(compute)

    def convert(a):
        if a.dtype not in dt.FLOAT_DTYPES or (native_storage and _stays_stored(a.dtype, compute)):
            return a
        return fpmath.down_convert(a.astype(target, copy=False), compute)
    return {name: map_arrays(value, convert) for name, value in args.items()}


def _stays_stored(dtype, compute: str) -> bool:
    """A native-storage kernel reads a 16-bit array as stored when it computes in f32 or in that
    very type; a down-conversion to another type (f16 storage under bf16) is done here."""
    return dtype in dt.SIXTEEN_BIT_FLOATS and (compute == "f32" or dt.short_name(dtype) == compute)


def _has_dtype(value) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "shape") or isinstance(value, np.generic)
