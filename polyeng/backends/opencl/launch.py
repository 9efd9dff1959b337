"""Running polyeng's OpenCL kernels: sources, build options per storage dtype, per-thread
kernel objects, and the host/device boundary of a kernel call.

- Sources are ``common.cl`` (storage access macros) followed by the op's ``.cl`` file,
  built once per (source, options, device) by ``runtime.program``.
- pyopencl kernel objects carry their arguments, so two threads sharing one would race:
  each thread gets its own kernel objects (the command queue itself is thread-safe).
- A kernel wrapper takes numpy arrays or OpenCL tensors. Host inputs are uploaded once;
  the result stays on the device when any input was there (so chains of ops stay on
  the device), else it comes back as a numpy array.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ...engine import dtypes as dt
from . import runtime
from .tensor import OpenCLTensor, from_numpy, to_numpy

_HERE = Path(__file__).resolve().parent
_sources: dict = {}
_local = threading.local()
STORAGE = {dt.float32: 1, dt.float16: 2, dt.bfloat16: 3, dt.float64: 4}
LOCAL_SIZE = 256


def source(file: str) -> str:
    text = _sources.get(file)
    if text is None:
        text = _sources[file] = (_HERE / "common.cl").read_text() + "\n" + (_HERE / file).read_text()
    return text


def float_options(dtype) -> tuple:
    return (f"-DSTORAGE={STORAGE[np.dtype(dtype)]}",)


def word_options(dtype) -> tuple:
    return (f"-DWORD_BYTES={np.dtype(dtype).itemsize}",)


def kernel(file: str, name: str, options: tuple):
    """This thread's kernel object ``name`` from ``file`` built with ``options``."""
    import pyopencl as cl
    kernels = getattr(_local, "kernels", None)
    if kernels is None:
        kernels = _local.kernels = {}
    key = (file, name, options, runtime.state().identity)
    found = kernels.get(key)
    if found is None:
        found = kernels[key] = cl.Kernel(runtime.program(source(file), options), name)
    return found


def run(file: str, name: str, options: tuple, items: int, *args) -> None:
    """Enqueue ``name`` over ``items`` work items (rounded up to the work-group size; kernels
    check their bound) and wait for it."""
    import pyopencl as cl
    k = kernel(file, name, options)
    k.set_args(*args)
    size = -(-items // LOCAL_SIZE) * LOCAL_SIZE
    cl.enqueue_nd_range_kernel(runtime.state().queue, k, (size,), (LOCAL_SIZE,)).wait()


def on_device(x) -> tuple[OpenCLTensor, bool]:
    """``x`` as an OpenCL tensor, and whether it already was one."""
    if isinstance(x, OpenCLTensor):
        return x, True
    return from_numpy(np.asarray(x)), False


def empty(shape, dtype) -> OpenCLTensor:
    import pyopencl as cl
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes == 0:
        return OpenCLTensor(None, shape, dtype)
    return OpenCLTensor(cl.Buffer(runtime.state().context, cl.mem_flags.READ_WRITE, size=nbytes), shape, dtype)


def upload(values: np.ndarray):
    """A read-only device buffer holding ``values`` (kernel metadata such as shapes)."""
    import pyopencl as cl
    return cl.Buffer(runtime.state().context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(values))


def result(out: OpenCLTensor, stay: bool):
    return out if stay else to_numpy(out)


def fp64_rejection(call):
    """The special-argument rule of every OPENCL kernel: f64 needs cl_khr_fp64."""
    if any(getattr(t, "dtype", None) == dt.float64 for t in call.tensors().values()) \
            and not runtime.state().has_fp64:
        return f"the OpenCL device {runtime.state().device.name.strip()!r} lacks cl_khr_fp64 (float64)"
    return None


def promoted(x, dtype) -> tuple[OpenCLTensor, bool]:
    """``x`` on the device in ``dtype``, and whether it already was on the device. A dtype change
    is numpy's ``astype`` on the host, so mixed-dtype ops promote exactly as BASIC does."""
    dtype = np.dtype(dtype)
    if np.dtype(x.dtype) == dtype:
        return on_device(x)
    was = isinstance(x, OpenCLTensor)
    host = to_numpy(x) if was else np.asarray(x)
    return from_numpy(host.astype(dtype)), was
