"""OPENCL: kernels run through pyopencl (PoCL on a CPU, a GPU driver where one exists).

Kernel modules (same file names as ``basic``) are imported on first call, like NUMBA's; each
kernel reads 16-bit storage itself, and those computing in floats reject float64 when the
device lacks cl_khr_fp64 (the ones that only move or convert bits take it anywhere). Modules
with a leading underscore are the engine's own support code, not op families.
"""
from ...engine.mixed_precision import Category
from ...engine.hookspecs import hookimpl
from .._loader import register_kernels
from ._devices import describe
from ._tensor import OpenCLTensor, from_numpy, to_numpy

NAME = "opencl"
# ALLOW ops (matmul, linear, lstm): a bf16/f16/tf32 mode lets the dispatcher round f32 inputs
# first, which it cannot do to device tensors, so their kernels compute f32 under such a mode
# (which it allows); integer and bool products compute in their own type, bit for bit.
_ALLOW_COMPUTE = ("f32", "f64", "s8", "u8", "s32", "s64", "bool")


def _compute_types(spec):
    return _ALLOW_COMPUTE if spec.category is Category.ALLOW else None


def _engine_rule(spec):
    # exact ops only move or convert bits (cast converts IEEE patterns with integer arithmetic):
    # float64 data needs no cl_khr_fp64 there, so they take it on any device
    return None if spec.exact else _fp64_rejection


def availability():
    try:
        import pyopencl as cl
    except Exception as exc:
        return False, f"pyopencl cannot be imported: {type(exc).__name__}: {exc}"
    try:
        platforms = cl.get_platforms()
    except Exception as exc:
        return False, (f"no OpenCL platform found ({type(exc).__name__}: {exc}); "
                       f"install an OpenCL driver, e.g. Debian's pocl-opencl-icd")
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        return False, "OpenCL platforms exist but report no devices"
    from ._runtime import choose_device
    try:
        choose_device()
    except Exception as exc:   # a device setting that matches nothing
        return False, str(exc)
    return True, ""


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability, native_type=OpenCLTensor, to_host=to_numpy,
                        to_device=from_numpy, details=describe)
    register_kernels(registry, NAME, __name__, native_storage=True, engine_rule=_engine_rule,
                     compute_types=_compute_types, wrap=_guarded)


def _guarded(kernel):
    from ._enqueue import guarded   # imports pyopencl lazily: _enqueue imports it only inside functions
    return guarded(kernel)


def _fp64_rejection(call):
    from ._enqueue import fp64_rejection   # imports pyopencl: only once a call is considered
    return fp64_rejection(call)
