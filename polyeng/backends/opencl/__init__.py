"""OPENCL: kernels run through pyopencl (PoCL on a CPU, a GPU driver where one exists)."""
from ...engine.hookspecs import hookimpl
from .tensor import OpenCLTensor, from_numpy, to_numpy

NAME = "opencl"


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
