"""OPENCL: kernels run through pyopencl (PoCL on a CPU, a GPU driver where one exists).

Kernel modules (same file names as ``basic``) are imported on first call, like NUMBA's; each
kernel reads 16-bit storage itself and rejects float64 when the device lacks cl_khr_fp64.
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
    "log_softmax": "softmax", "gelu": "activation",
}


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
    return True, ""


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability, native_type=OpenCLTensor, to_host=to_numpy,
                        to_device=from_numpy)
    for op, module in OPS.items():
        registry.add_kernel(op, NAME, LazyKernel(op, module, __name__), accepts=_fp64_rejection,
                            native_storage=True)


def _fp64_rejection(call):
    from .launch import fp64_rejection   # imports pyopencl: only once a call is considered
    return fp64_rejection(call)
