"""numpy's OpenBLAS on the calling thread for small products.

OpenBLAS splits a product of more than 0.3-1 million multiply-adds over its worker
threads. When another process holds a core, a worker waits for one, and a product of 0.1 ms
took 24-53 ms (docs/performance.md, "Small calls on a busy machine"). polyeng's BLAS calls
of less than ``SMALL_WORK`` multiply-adds therefore run with OpenBLAS's thread count set to
1, and the count is restored afterwards, also when the call raises; larger ones keep
OpenBLAS's threads.

The count is process-wide. While a small call holds it at 1, a product another Python thread
starts runs on one thread too (correct, only slower); overlapping small calls save the count
once, under a lock, and the last one out restores it. The library is found on the first
small call: the OpenBLAS bundled with numpy, else any loaded OpenBLAS. Nothing is changed when
numpy's BLAS is another library (MKL, Accelerate), when OpenBLAS runs its threads through
OpenMP (its count is then per thread, set through the OpenMP runtime), or when none is found.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading

import numpy as np

# Below this many multiply-adds (whole call) two threads saved up to ~0.1 ms in f32 (~0.2 ms
# in f64) on an idle 2-core machine, against stalls of 15-50 ms on a busy one (docs/performance.md).
SMALL_WORK = 1 << 23
# OpenBLAS itself keeps products this small on one thread (interface/gemm.c and gemv.c, with
# the default GEMM_MULTITHREAD_THRESHOLD of 4): no need to pay ~1.5 us to set the count.
_SERIAL_GEMM = 65536 * 4        # at most this m * n * k for a product of matrices
_SERIAL_GEMV = 2304 * 4 - 1     # at most this m * n for a product with a vector (one row or column)

_PTHREADS = 1   # openblas_get_parallel(): 0 sequential, 1 its own threads, 2 OpenMP
_NOTHING = contextlib.nullcontext()
_lock = threading.Lock()
_controls = None   # (get, set) of the library's thread count, () if none; found on first use
_depth = 0         # small calls now running, in all threads
_saved = 0         # the count the last of them restores


class _OneThread:
    """OpenBLAS's thread count at 1 for the block; re-entrant and shared by threads."""
    __slots__ = ()

    def __enter__(self):
        global _depth, _saved
        get, set_ = _controls
        with _lock:
            if _depth == 0:
                _saved = get()
                if _saved > 1:
                    set_(1)
            _depth += 1

    def __exit__(self, *exc):
        global _depth
        get, set_ = _controls
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved > 1:
                set_(_saved)


_ONE_THREAD = _OneThread()


def _after_fork_in_child():
    """A fork during another thread's small call: the child has only this thread."""
    global _lock, _depth
    _lock = threading.Lock()
    if _depth:
        _depth = 0
        if _saved > 1:
            _controls[1](_saved)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def serial_if_small(work: int, vector: bool = False):
    """A context manager for a block of numpy products of ``work`` multiply-adds each (a
    product's batch included): OpenBLAS on the calling thread when that is below
    ``SMALL_WORK``, else nothing. ``vector``: some product has a single row or column."""
    if work >= SMALL_WORK or work <= (_SERIAL_GEMV if vector else _SERIAL_GEMM):
        return _NOTHING
    if _controls is None:
        _find_controls()
    return _ONE_THREAD if _controls else _NOTHING


def _find_controls():
    global _controls
    found = ()
    if _numpy_blas_may_be_openblas():
        for path in _candidates():
            found = _thread_controls(path)
            if found:
                break
    _controls = found
    return found


def _numpy_blas_may_be_openblas() -> bool:
    config = getattr(getattr(np, "__config__", None), "CONFIG", None)   # numpy >= 1.26
    try:
        name = config["Build Dependencies"]["blas"]["name"]
    except (TypeError, KeyError):
        return True   # not recorded: look for a loaded OpenBLAS
    return "openblas" in str(name).lower()


def _candidates() -> list:
    """OpenBLAS libraries: numpy's bundled ones first, then those loaded in the process."""
    root = os.path.dirname(np.__file__)
    bundled = [p for d in (root + ".libs", os.path.join(root, ".libs"), os.path.join(root, ".dylibs"))
               for p in sorted(glob.glob(os.path.join(d, "*openblas*")))]
    loaded = []
    try:
        with open("/proc/self/maps") as maps:   # Linux; elsewhere the bundled ones only
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if "openblas" in os.path.basename(path) and path not in loaded:
                    loaded.append(path)
    except OSError:
        pass
    return bundled + [p for p in loaded if p not in bundled]


def _thread_controls(path: str) -> tuple:
    """(get, set) of the thread count of the OpenBLAS at ``path`` when it runs its own threads."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return ()
    for prefix in ("scipy_", ""):
        for suffix in ("64_", "_64", ""):
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            parallel = getattr(lib, f"{prefix}openblas_get_parallel{suffix}", None)
            if get is None or set_ is None or parallel is None:
                continue
            if parallel() != _PTHREADS:
                return ()
            get.restype = ctypes.c_int
            set_.argtypes, set_.restype = [ctypes.c_int], None
            return get, set_
    return ()
