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

import itertools
import math
import threading
from pathlib import Path

import numpy as np

from ...engine import dtypes as dt
from ...engine.signal_safe import settle
from . import _runtime as runtime
from ._tensor import OpenCLTensor, aligned_empty, from_numpy, to_numpy, wrap

_HERE = Path(__file__).resolve().parent
_sources: dict = {}
_local = threading.local()
STORAGE = {dt.float32: 1, dt.float16: 2, dt.bfloat16: 3, dt.float64: 4}
LOCAL_SIZE = 256
CAP = 1 << 15   # most work items one launch gets along dimensions 1 and 2


def source(file: str) -> str:
    text = _sources.get(file)
    if text is None:
        text = _sources[file] = (_HERE / "common.cl").read_text() + "\n" + (_HERE / file).read_text()
    return text


def float_options(dtype) -> tuple:
    return (f"-DSTORAGE={STORAGE[np.dtype(dtype)]}",)


def word_options(dtype) -> tuple:
    return (f"-DWORD_BYTES={np.dtype(dtype).itemsize}",)


def compute_dtype(storage) -> np.dtype:
    """The float dtype float work stored in ``storage`` runs in (f64 for f64, else f32)."""
    return dt.float64 if np.dtype(storage) == dt.float64 else dt.float32


def kernel(file: str, name: str, options: tuple, args: tuple = ()):
    """This thread's kernel object ``name`` from ``file`` built with ``options``. The first time,
    its scalar argument types are declared from ``args`` (numpy scalars; buffers and None
    are not scalars): pyopencl then sets arguments through generated code, about 2 us a launch
    instead of about 140 us."""
    import pyopencl as cl
    kernels = getattr(_local, "kernels", None)
    if kernels is None:
        kernels = _local.kernels = {}
    key = (file, name, options, runtime.state().identity)
    found = kernels.get(key)
    if found is None:
        found = cl.Kernel(runtime.program(source(file), options), name)
        found.set_scalar_arg_dtypes([a.dtype if isinstance(a, np.generic) else None for a in args])
        kernels[key] = found
    return found


def run(file: str, name: str, options: tuple, items, *args, local=None) -> None:
    """Enqueue ``name`` (the queue runs kernels in order; ``result`` waits for them).

    ``items`` is the work-item count (an int: a 1-D range in groups of ``LOCAL_SIZE``) or a
    tuple of per-dimension counts (dimension 0 varies fastest; ``local`` gives the group
    shape, default ``(LOCAL_SIZE, 1, ...)``). Every dimension is rounded up to a whole number
    of groups, so kernels check their bounds. Dimensions past the first larger than ``CAP``
    run as several launches with global offsets (some GPU drivers limit those dimensions);
    ``get_global_id`` includes the offset, so kernels need not know.
    """
    import pyopencl as cl
    k = kernel(file, name, options, args)
    k.set_args(*args)
    if isinstance(items, int):
        items, local = (items,), (local or LOCAL_SIZE,)
    else:
        items = tuple(int(i) for i in items)
        local = tuple(local) if local else (LOCAL_SIZE,) + (1,) * (len(items) - 1)
    size = tuple(-(-max(i, 1) // g) * g for i, g in zip(items, local))
    queue = runtime.state().queue
    hold(args)
    if all(s <= CAP for s in size[1:]):
        cl.enqueue_nd_range_kernel(queue, k, size, local)
        return
    steps = [size[0]] + [max(g, CAP // g * g) for g in local[1:]]
    for start in itertools.product(*[range(0, s, step) for s, step in zip(size, steps)]):
        chunk = tuple(min(step, s - at) for s, step, at in zip(size, steps, start))
        cl.enqueue_nd_range_kernel(queue, k, chunk, local, global_work_offset=start)


class Launch:
    """One kernel launch with its arguments, to enqueue once or repeatedly (lstm's steps change
    one argument between launches) without waiting for each."""

    __slots__ = ("file", "name", "options", "items", "local", "args", "kernel", "size")

    def __init__(self, file: str, name: str, options: tuple, items: tuple, local: tuple, *args):
        self.file, self.name, self.options, self.items, self.local = file, name, options, items, local
        self.args = list(args)
        self.kernel = kernel(file, name, options, args)   # scalar types declared there
        self.size = tuple(-(-max(int(i), 1) // g) * g for i, g in zip(items, local))

    def enqueue(self) -> None:
        """Queue the launch (the queue is in order; ``result`` waits), its arguments held until
        then. A range too large for one launch goes through ``run``, which splits it."""
        if any(s > CAP for s in self.size[1:]):
            run(self.file, self.name, self.options, self.items, *self.args, local=self.local)
            return
        import pyopencl as cl
        self.kernel.set_args(*self.args)
        hold(tuple(self.args))
        cl.enqueue_nd_range_kernel(runtime.state().queue, self.kernel, self.size, self.local)


def hold(args) -> None:
    """Keep a queued kernel's arguments (buffers, and the host arrays zero-copy buffers live in)
    alive until the queue has run it: ``result`` (or ``guarded`` on an error) releases them
    after waiting."""
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = []
    held.append(args)


def _release() -> None:
    """Drop what this thread held (its queued work is known to have run)."""
    held = getattr(_local, "held", None)
    if held:
        held.clear()


def _finish_and_release() -> None:
    """Wait for the queue if this thread has queued work, then drop what it held."""
    held = getattr(_local, "held", None)
    if held:
        try:
            runtime.state().queue.finish()
        finally:
            held.clear()


class guarded:
    """An OPENCL kernel as registered: if the kernel wrapper raises after queuing launches,
    the queue is finished before their arguments are released, so no queued kernel outlives
    the memory it reads or writes."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, prepared, **kwargs):
        try:
            return self.fn(prepared, **kwargs)
        except BaseException:
            try:   # a second Ctrl-C cannot skip the wait (engine/signal_safe.py)
                settle(_finish_and_release)
            except Exception:
                pass   # the original error is the one to report
            raise


def on_device(x) -> tuple[OpenCLTensor, bool]:
    """``x`` as an OpenCL tensor, and whether it already was one. On a device sharing the
    host's memory (PoCL) a host array is used in place, without a copy."""
    if isinstance(x, OpenCLTensor):
        return x, True
    x = np.asarray(x)
    if not runtime.state().unified or x.nbytes == 0:
        return from_numpy(x), False
    if not (x.flags.c_contiguous and x.flags.aligned):
        x = x.copy(order="C")   # element-aligned for the kernels' loads
    return wrap(x, read_only=True), False


def empty(shape, dtype, host: bool = False) -> OpenCLTensor:
    """A new tensor for a kernel's output. ``host=True`` when the result goes back to the host:
    on a device sharing the host's memory the kernel then writes straight into a numpy array."""
    import pyopencl as cl
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return OpenCLTensor(None, shape, dtype, host=np.empty(shape, dtype) if host else None)
    context = runtime.state().context
    if runtime.state().unified:
        # numpy's allocator (huge pages for large arrays) makes first writes cheaper than
        # the driver's fresh pages; a result that goes back to the host is this array itself
        return wrap(aligned_empty(shape, dtype))
    return OpenCLTensor(cl.Buffer(context, cl.mem_flags.READ_WRITE, size=nbytes), shape, dtype)


def group(width: int, height: int, widest: int = LOCAL_SIZE, items: int = LOCAL_SIZE) -> tuple[int, int]:
    """A 2-D work-group shape: whole powers of two covering ``width`` (at most ``widest``) along
    dimension 0, then rows along dimension 1 up to ``items`` work items."""
    lx = min(widest, 1 << max(width - 1, 0).bit_length())
    return lx, min(items // lx, 1 << max(height - 1, 0).bit_length())


def upload(values: np.ndarray):
    """A read-only device buffer holding ``values`` (kernel metadata such as shapes)."""
    import pyopencl as cl
    return cl.Buffer(runtime.state().context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(values))


def result(out: OpenCLTensor, stay: bool):
    """What a kernel wrapper returns, once every kernel this thread queued has run: ``out``
    itself when an input was on the device, else a numpy array. For a zero-copy output, mapping
    the buffer (which waits for the queue) makes the kernels' writes visible in the array it
    wraps; other outputs are read back (which waits too)."""
    import pyopencl as cl
    if stay or out.buffer is None:   # zero-size: nothing to read, but earlier launches may be queued
        _finish_and_release()
        return out if stay else (out.host if out.host is not None else to_numpy(out))
    # What this thread queued stays held until the read or the map below has waited for it: an
    # interrupt before that point leaves it to ``guarded``, which waits before releasing it.
    if out.host is None:
        value = to_numpy(out)
    else:
        mapped, _ = cl.enqueue_map_buffer(runtime.state().queue, out.buffer, cl.map_flags.READ, 0,
                                          out.shape, out.dtype, is_blocking=True)
        del mapped   # unmaps
        value = out.host
    _release()
    return value


def fp64_rejection(call):
    """The special-argument rule of OPENCL kernels computing in floats: f64 work (an f64
    argument or result) needs cl_khr_fp64."""
    f64 = call.storage_dtype == dt.float64 or any(getattr(t, "dtype", None) == dt.float64
                                                  for t in call.tensors().values())
    if f64 and not runtime.state().has_fp64:
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
    return on_device(host.astype(dtype))[0], was


MAX_RUNS = 256         # 16-element runs a work item takes at most (a CPU device)
ITEMS_PER_UNIT = 256   # work items wanted per compute unit of a CPU device
_device_facts: dict = {}


def _facts() -> tuple:
    """(correctly rounded f32 divide and sqrt offered, CPU device, compute units), once per device."""
    st = runtime.state()
    found = _device_facts.get(st.identity)
    if found is None:
        import pyopencl as cl
        d = st.device
        found = _device_facts[st.identity] = (
            bool(d.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT),
            bool(d.type & cl.device_type.CPU), int(d.max_compute_units))
    return found


def exact_divide_sqrt() -> tuple:
    """The build option making f32 division and square root correctly rounded, as numpy's are
    (OpenCL otherwise allows 2.5 and 3 ulp), on a device that offers it; else nothing."""
    return ("-cl-fp32-correctly-rounded-divide-sqrt",) if _facts()[0] else ()


def runs_per_item(runs: int, total: int = 0) -> int:
    """How many of a row's ``runs`` 16-element runs one work item takes (``total``: the runs of
    all rows, default ``runs``): one on a GPU (items are cheap there, and adjacent ones read
    adjacent memory); on a CPU device, where every work group is a scheduling step, as many as
    leave ``ITEMS_PER_UNIT`` items per compute unit (at most ``MAX_RUNS``), spread evenly over
    the row: 2.5x faster for a 6 MB relu on PoCL than one run per item."""
    _, cpu, units = _facts()
    if not cpu:
        return 1
    per = max(1, min(MAX_RUNS, runs, (total or runs) // (units * ITEMS_PER_UNIT)))
    return -(-runs // -(-runs // per))


def group_items(per: int) -> int:
    """Work items a group: few when each takes many runs (a CPU device), else 64."""
    return 16 if per > 1 else 64
