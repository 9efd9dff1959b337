"""OPENCL: kernels run through pyopencl (PoCL on a CPU, a GPU driver where one exists).

Kernel modules (same file names as ``basic``) are imported on first call, like NUMBA's; each
kernel reads 16-bit storage itself, and those computing in floats reject float64 when the
device lacks cl_khr_fp64 (the ones that only move or convert bits take it anywhere).
"""
from ...engine.hookspecs import hookimpl
from ..lazy import LazyKernel
from .tensor import OpenCLTensor, from_numpy, to_numpy

NAME = "opencl"
# op -> kernel module (the module's KERNELS maps op -> function)
OPS = {
    "concat": "concat", "permute_contiguous": "permute", "select": "select",
    "avg_pool2d": "pooling", "avg_pool3d": "pooling", "max_pool2d": "pooling", "max_pool3d": "pooling",
    "upsample_nearest": "upsample", "layer_norm": "normalization", "softmax": "softmax",
    "log_softmax": "softmax", "gelu": "activation", "cast": "cast", "upsample_bilinear2d": "upsample",
    "matmul": "matmul", "linear": "matmul", "lstm": "lstm",
}
# Kernels that only move or convert bits (cast converts IEEE patterns with integer arithmetic):
# float64 data needs no cl_khr_fp64 there, so they take it on any device.
BITS_ONLY = {"concat", "permute_contiguous", "select", "upsample_nearest", "cast"}
# Compute types of the kernels that declare them (the others run in whatever the mode allows).
# matmul, linear and lstm are ALLOW ops: a bf16/f16/tf32 mode lets the dispatcher round f32
# inputs first, which it cannot do to device tensors, so these compute f32 under such a mode
# (which it allows); integer and bool products compute in their own type, bit for bit.
_FLOAT = ("f32", "f64")
COMPUTE_TYPES = {"matmul": _FLOAT + ("s8", "u8", "s32", "s64", "bool"), "linear": _FLOAT,
                 "lstm": _FLOAT}


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
    from .runtime import choose_device
    try:
        choose_device()
    except Exception as exc:   # a device setting that matches nothing
        return False, str(exc)
    return True, ""


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability, native_type=OpenCLTensor, to_host=to_numpy,
                        to_device=from_numpy)
    for op, module in OPS.items():
        accepts = None if op in BITS_ONLY else _fp64_rejection
        registry.add_kernel(op, NAME, _guarded(LazyKernel(op, module, __name__)), accepts=accepts,
                            compute_types=COMPUTE_TYPES.get(op), native_storage=True)


def _guarded(kernel):
    from .launch import guarded   # imports pyopencl lazily: launch imports it only inside functions
    return guarded(kernel)


def _fp64_rejection(call):
    from .launch import fp64_rejection   # imports pyopencl: only once a call is considered
    return fp64_rejection(call)
