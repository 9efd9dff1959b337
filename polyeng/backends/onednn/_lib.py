"""Loading oneDNN's C library and declaring the functions this engine calls through ctypes.

The library comes from the ``onednn-cpu-gomp`` wheel (oneDNN 3.2, CPU only, threaded with the
system's GNU OpenMP): its ``libdnnl.so.3`` lies in the environment's ``lib`` folder. Loading it
loads libgomp; when nothing loaded libgomp before and the user set no ``OMP_WAIT_POLICY``, it is
loaded with ``OMP_WAIT_POLICY=PASSIVE`` (libgomp reads it once, as it loads), so oneDNN's and
numba's OpenMP workers sleep between kernels instead of spinning on the cores the next kernel
needs (SPEC §13). The number of threads a primitive uses is polyeng's budget, set on the calling
thread before each execution (``omp_set_num_threads`` is per thread and costs nanoseconds).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys
import threading

from . import _constants as C

WHEEL = "onednn-cpu-gomp"
SONAME = "libdnnl.so.3"

c_void_p, c_int, c_float, c_size_t, c_uint = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_size_t, ctypes.c_uint
Dims = ctypes.c_int64 * C.MAX_NDIMS

STATUS = {C.SUCCESS: "success", C.OUT_OF_MEMORY: "out of memory", C.INVALID_ARGUMENTS: "invalid arguments",
          C.UNIMPLEMENTED: "unimplemented (no implementation for these shapes, types or attributes)",
          C.LAST_IMPL_REACHED: "last implementation reached", C.RUNTIME_ERROR: "runtime error",
          C.NOT_REQUIRED: "not required"}


class OneDNNError(RuntimeError):
    """A oneDNN call returned an error status."""

    def __init__(self, what: str, status: int):
        self.status = status
        super().__init__(f"oneDNN {what}: {STATUS.get(status, f'status {status}')}")


class ExecArg(ctypes.Structure):
    _fields_ = [("arg", c_int), ("memory", c_void_p)]


class Version(ctypes.Structure):
    _fields_ = [("major", c_int), ("minor", c_int), ("patch", c_int), ("hash", ctypes.c_char_p),
                ("cpu_runtime", c_uint), ("gpu_runtime", c_uint)]


P = ctypes.POINTER
_SIGNATURES = {
    # name: (argument types); every one returns dnnl_status_t unless listed in _RETURNS
    "dnnl_engine_create": (P(c_void_p), c_int, c_size_t),
    "dnnl_stream_create": (P(c_void_p), c_void_p, c_uint),
    "dnnl_stream_wait": (c_void_p,),
    "dnnl_memory_desc_create_with_strides": (P(c_void_p), c_int, Dims, c_int, Dims),
    "dnnl_memory_desc_create_with_tag": (P(c_void_p), c_int, Dims, c_int, c_int),
    "dnnl_memory_desc_destroy": (c_void_p,),
    "dnnl_memory_desc_clone": (P(c_void_p), c_void_p),
    "dnnl_memory_desc_get_size": (c_void_p,),
    "dnnl_memory_desc_equal": (c_void_p, c_void_p),
    "dnnl_memory_desc_query": (c_void_p, c_int, c_void_p),
    "dnnl_memory_create": (P(c_void_p), c_void_p, c_void_p, c_void_p),
    "dnnl_memory_set_data_handle": (c_void_p, c_void_p),
    "dnnl_memory_destroy": (c_void_p,),
    "dnnl_primitive_attr_create": (P(c_void_p),),
    "dnnl_primitive_attr_destroy": (c_void_p,),
    "dnnl_primitive_attr_set_fpmath_mode": (c_void_p, c_int),
    "dnnl_primitive_attr_set_post_ops": (c_void_p, c_void_p),
    "dnnl_primitive_attr_set_scratchpad_mode": (c_void_p, c_int),
    "dnnl_stream_destroy": (c_void_p,),
    "dnnl_post_ops_create": (P(c_void_p),),
    "dnnl_post_ops_destroy": (c_void_p,),
    "dnnl_post_ops_append_eltwise": (c_void_p, c_int, c_float, c_float),
    "dnnl_post_ops_append_binary": (c_void_p, c_int, c_void_p),
    "dnnl_post_ops_append_sum": (c_void_p, c_float, ctypes.c_int32, c_int),
    "dnnl_primitive_desc_query": (c_void_p, c_int, c_int, c_void_p),
    "dnnl_primitive_desc_query_md": (c_void_p, c_int, c_int),
    "dnnl_primitive_desc_destroy": (c_void_p,),
    "dnnl_primitive_create": (P(c_void_p), c_void_p),
    "dnnl_primitive_execute": (c_void_p, c_void_p, c_int, P(ExecArg)),
    "dnnl_primitive_destroy": (c_void_p,),
    "dnnl_matmul_primitive_desc_create": (P(c_void_p), c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p),
    "dnnl_convolution_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int, c_void_p, c_void_p,
                                                       c_void_p, c_void_p, Dims, Dims, Dims, Dims, c_void_p),
    "dnnl_eltwise_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int, c_void_p, c_void_p,
                                                   c_float, c_float, c_void_p),
    "dnnl_binary_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_void_p, c_void_p, c_void_p, c_void_p),
    "dnnl_softmax_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int, c_void_p, c_void_p,
                                                   c_int, c_void_p),
    "dnnl_pooling_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int, c_void_p, c_void_p,
                                                   Dims, Dims, Dims, Dims, Dims, c_void_p),
    "dnnl_batch_normalization_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_void_p, c_void_p,
                                                               c_float, c_uint, c_void_p),
    "dnnl_layer_normalization_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_void_p, c_void_p,
                                                               c_void_p, c_float, c_uint, c_void_p),
    "dnnl_lstm_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int) + (c_void_p,) * 11
                                               + (c_uint, c_void_p),
    "dnnl_gru_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int) + (c_void_p,) * 7
                                              + (c_uint, c_void_p),
    "dnnl_lbr_gru_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int) + (c_void_p,) * 7
                                                  + (c_uint, c_void_p),
    "dnnl_resampling_forward_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_int, P(c_float), c_void_p,
                                                      c_void_p, c_void_p),
    "dnnl_reduction_primitive_desc_create": (P(c_void_p), c_void_p, c_int, c_void_p, c_void_p, c_float, c_float,
                                             c_void_p),
    "dnnl_concat_primitive_desc_create": (P(c_void_p), c_void_p, c_void_p, c_int, c_int, P(c_void_p), c_void_p),
    "dnnl_reorder_primitive_desc_create": (P(c_void_p), c_void_p, c_void_p, c_void_p, c_void_p, c_void_p),
    "dnnl_set_verbose": (c_int,),
    "dnnl_version": (),
}
_RETURNS = {"dnnl_memory_desc_get_size": c_size_t, "dnnl_memory_desc_equal": c_int,
            "dnnl_primitive_desc_query_md": c_void_p, "dnnl_version": P(Version)}

_state: dict = {}
_lock = threading.Lock()


def platform_reason() -> str:
    """Why this platform cannot run the engine, or "" where the wheel's library may load."""
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return (f"oneDNN's wheel {WHEEL} is built for Linux on x86-64 only; this is "
                f"{sys.platform} on {platform.machine() or 'an unknown CPU'}")
    return ""


def library_path() -> str | None:
    """Where the wheel installed ``libdnnl.so.3``, else the environment's or the system's, else None.
    The wheel is found as ``importlib.metadata`` finds it, without importing it (about 3 MB of a
    process with the modules it imports): its ``*.dist-info`` folder in a ``sys.path`` folder, whose
    ``RECORD`` names the library's path relative to that folder (``../../libdnnl.so.3`` in a
    virtual environment's ``lib``; elsewhere for a ``--user`` install)."""
    path = _wheel_library()
    if path is not None:
        return path
    for prefix in (sys.prefix, sys.base_prefix):
        path = os.path.join(prefix, "lib", SONAME)
        if os.path.exists(path):
            return path
    return ctypes.util.find_library("dnnl")


def _wheel_library() -> str | None:
    """``libdnnl.so.3`` as the first ``onednn-cpu-gomp`` install on ``sys.path`` records it (None
    where there is none, or its file is missing)."""
    stem = WHEEL.replace("-", "_") + "-"
    for entry in sys.path:
        folder = entry or "."
        try:
            infos = sorted(e.name for e in os.scandir(folder)
                           if e.name.lower().startswith(stem) and e.name.lower().endswith(".dist-info"))
        except OSError:   # not a folder
            continue
        for info in infos:
            try:
                with open(os.path.join(folder, info, "RECORD"), encoding="utf-8") as record:
                    files = [line.split(",", 1)[0] for line in record]
            except OSError:
                continue
            for file in files:
                if os.path.basename(file) == SONAME:
                    path = os.path.normpath(os.path.join(os.path.abspath(folder), file))
                    if os.path.exists(path):
                        return path
            return None   # this install lacks its library: the fallbacks decide
    return None


def lib():
    """The loaded library with its functions declared (loaded once; OSError/RuntimeError when it cannot)."""
    loaded = _state.get("lib")
    if loaded is not None:
        return loaded
    with _lock:
        if "lib" not in _state:
            _state["lib"] = _load()
    return _state["lib"]


def _load():
    reason = platform_reason()
    if reason:
        raise RuntimeError(reason)
    path = library_path()
    if path is None:
        raise RuntimeError(f"oneDNN's library {SONAME} was not found; install it with 'pip install {WHEEL}'")
    from ...engine.environment import variables
    from ...engine.threads import libgomp_loaded
    passive = "OMP_WAIT_POLICY" not in os.environ and not libgomp_loaded()
    # libgomp reads it once, as it loads, which loading libdnnl makes it do
    with variables({"OMP_WAIT_POLICY": "PASSIVE"} if passive else {}):
        handle = ctypes.CDLL(path)
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(handle, name)
        fn.argtypes = list(argtypes)
        fn.restype = _RETURNS.get(name, c_int)
    _state["path"], _state["passive"] = path, passive
    _state["omp"] = _omp_controls()
    return handle


def _omp_controls():
    """libgomp's ``omp_set_num_threads``/``omp_get_max_threads`` (the runtime libdnnl uses)."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None
    setter, getter = gomp.omp_set_num_threads, gomp.omp_get_max_threads
    setter.argtypes, setter.restype, getter.argtypes, getter.restype = [c_int], None, [], c_int
    return setter, getter


def check(status: int, what: str) -> None:
    if status != C.SUCCESS:
        raise OneDNNError(what, status)


def call(name: str, *args) -> None:
    """Call a status-returning function; OneDNNError naming it when it fails."""
    check(getattr(lib(), name)(*args), name)


def new(name: str, *args) -> int:
    """Call a ``create`` function whose first argument receives the created handle; the handle."""
    out = c_void_p()
    check(getattr(lib(), name)(ctypes.byref(out), *args), name)
    return out.value


def engine() -> int:
    """The CPU engine (one per process)."""
    handle = _state.get("engine")
    if handle is None:
        with _lock:
            if "engine" not in _state:
                _state["engine"] = new("dnnl_engine_create", C.CPU, 0)
        handle = _state["engine"]
    return handle


_streams = threading.local()


class _Stream:
    """A stream destroyed with the thread-local storage of the thread that made it."""

    def __init__(self):
        self.handle = new("dnnl_stream_create", engine(), C.STREAM_DEFAULT_FLAGS)

    def __del__(self):
        if sys.is_finalizing():   # a daemon thread may still execute on it: the process ends anyway
            return
        try:
            lib().dnnl_stream_destroy(self.handle)
        except Exception:   # interpreter shutdown
            pass


def stream() -> int:
    """This thread's in-order stream on the CPU engine (executions of one stream are ordered)."""
    held = getattr(_streams, "stream", None)
    if held is None:
        held = _streams.stream = _Stream()
    return held.handle


_threads = threading.local()


def set_threads(n: int) -> None:
    """Let the next primitive this thread executes use ``n`` OpenMP threads."""
    if getattr(_threads, "n", None) != n:
        controls = _state.get("omp")
        if controls is not None:
            controls[0](n)
        _threads.n = n


def note_threads(n) -> None:
    """The OpenMP count this thread now has, set outside ``set_threads`` (None: not known, so
    the next ``set_threads`` sets it)."""
    _threads.n = n


def version() -> str:
    v = lib().dnnl_version().contents
    return f"{v.major}.{v.minor}.{v.patch}"


def details() -> list:
    """The lines ``polyeng info`` shows of the engine: version, library, OpenMP wait policy."""
    try:
        lib()
    except Exception as exc:
        return [f"not loaded ({type(exc).__name__}: {exc})"]
    wait = ("PASSIVE (set while libgomp loaded)" if _state["passive"] else
            f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} (set by the user)" if "OMP_WAIT_POLICY" in os.environ
            else "as libgomp was loaded before oneDNN")
    return [f"oneDNN {version()} from {_state['path']}", f"OpenMP workers between primitives: {wait}"]


def dims(values) -> Dims:
    out = Dims()
    for i, v in enumerate(values):
        out[i] = int(v)
    return out


def _after_fork_in_child():
    global _lock, _streams, _threads
    _lock, _streams, _threads = threading.Lock(), threading.local(), threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
