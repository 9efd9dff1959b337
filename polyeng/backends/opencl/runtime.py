"""The OpenCL context, queue and program cache polyeng uses.

- **Device:** ``PYOPENCL_CTX`` when set (pyopencl's own selector syntax, e.g. ``0:1``),
  else the first GPU of any platform, else the first device at all (PoCL's CPU device).
- **Programs** are built lazily and cached per context on a key of the kernel source,
  the build options and the device's identity (platform, name, vendor, driver version),
  so a driver upgrade or another device never reuses a binary built for something else.
- Everything here is created once per process under a lock; pyopencl is imported on
  first use only.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

_lock = threading.Lock()
_state = None


@dataclass
class State:
    context: object
    queue: object
    device: object
    programs: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def identity(self) -> tuple:
        d = self.device
        return (d.platform.name, d.name, d.vendor, d.driver_version, d.version)

    @property
    def unified(self) -> bool:
        """Whether the device works in the host's memory (a CPU device such as PoCL's)."""
        return bool(self.device.host_unified_memory)

    @property
    def has_fp64(self) -> bool:
        return "cl_khr_fp64" in self.device.extensions


def choose_device():
    """The device polyeng uses (see the module docstring for the order)."""
    import pyopencl as cl
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise RuntimeError("no OpenCL device found")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices)[0]


def state() -> State:
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                import pyopencl as cl
                device = choose_device()
                context = cl.Context([device])
                _state = State(context, cl.CommandQueue(context), device)
    return _state


def program(source: str, options: tuple = ()):
    """The built program for ``source`` with ``options`` on polyeng's device (cached)."""
    import pyopencl as cl
    st = state()
    key = (source, tuple(options), st.identity)
    built = st.programs.get(key)
    if built is None:
        with st.lock:
            built = st.programs.get(key)
            if built is None:
                built = st.programs[key] = cl.Program(st.context, source).build(options=list(options))
    return built
