"""The OpenCL context, queue and program cache polyeng uses.

- **Device:** ``POLYENG_OPENCL_DEVICE`` when set (``gpu``, ``cpu``, ``P:D`` platform and
  device indices, or text found in the platform or device name), else ``PYOPENCL_CTX``
  (pyopencl's own selector syntax, e.g. ``0:1``), else the first GPU of any platform, else
  the first device at all (PoCL's CPU device). A setting that matches no device is an error
  naming the devices there are, and makes the engine unavailable with it.
- **Programs** are built lazily and cached per context on a key of the kernel source,
  the build options and the device's identity (platform, name, vendor, driver version),
  so a driver upgrade or another device never reuses a binary built for something else.
- Everything here is created once per process under a lock; pyopencl is imported on
  first use only.
"""
from __future__ import annotations

import functools
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

    # Device properties are queried from the driver once: each query is a driver call, and
    # launches read them on every call.
    @functools.cached_property
    def identity(self) -> tuple:
        d = self.device
        return (d.platform.name, d.name, d.vendor, d.driver_version, d.version)

    @functools.cached_property
    def unified(self) -> bool:
        """Whether the device works in the host's memory (a CPU device such as PoCL's)."""
        return bool(self.device.host_unified_memory)

    @functools.cached_property
    def has_fp64(self) -> bool:
        return "cl_khr_fp64" in self.device.extensions


ENV_DEVICE = "POLYENG_OPENCL_DEVICE"


def devices() -> list:
    """(platform index, device index, device) for every OpenCL device, in platform order."""
    import pyopencl as cl
    return [(p, d, dev) for p, platform in enumerate(cl.get_platforms())
            for d, dev in enumerate(platform.get_devices())]


def describe(device) -> str:
    return f"{device.platform.name.strip()} | {device.name.strip()}"


def _by_setting(setting: str, found: list):
    import pyopencl as cl
    text = setting.strip().lower()
    kinds = {"gpu": cl.device_type.GPU, "cpu": cl.device_type.CPU, "accelerator": cl.device_type.ACCELERATOR}
    if text in kinds:
        matches = [dev for _, _, dev in found if dev.type & kinds[text]]
    elif text.replace(":", "").isdigit() and text.count(":") <= 1:
        p, _, d = text.partition(":")
        matches = [dev for pi, di, dev in found if pi == int(p) and di == int(d or 0)]
    else:
        matches = [dev for _, _, dev in found if text in describe(dev).lower()]
    if not matches:
        listing = "; ".join(f"{p}:{d} {describe(dev)}" for p, d, dev in found) or "none"
        raise RuntimeError(f"{ENV_DEVICE}={setting!r} matches no OpenCL device (devices: {listing})")
    return matches[0]


def choose_device():
    """The device polyeng uses (see the module docstring for the order)."""
    import pyopencl as cl
    found = devices()
    setting = os.environ.get(ENV_DEVICE, "").strip()
    if setting:
        return _by_setting(setting, found)
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]
    if not found:
        raise RuntimeError("no OpenCL device found")
    gpus = [dev for _, _, dev in found if dev.type & cl.device_type.GPU]
    return (gpus or [dev for _, _, dev in found])[0]


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
