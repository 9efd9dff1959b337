"""How NUMBA kernels are compiled and launched.

- ``jit``: the one compile preset. ``cache=True`` keeps machine code on disk between
  processes; ``error_model="numpy"`` makes x/0 give inf/nan as in numpy (and lets loops
  with divisions vectorize); fastmath is limited to reassociation and contraction, never
  ``nnan``/``ninf``, so NaN and Inf propagate exactly as in the BASIC reference.
- The on-disk cache is guarded by a file lock: numba's own cache does not coordinate
  processes that start at once (two may compile the same function and overwrite each
  other's index), so every compile-or-load of a kernel happens under ``flock`` on one
  lock file in the cache directory.
- ``launch_lock``: parallel kernels are launched one at a time per process. numba's
  workqueue threading layer aborts the process on concurrent launches, and with OpenMP
  concurrent launches only oversubscribe the cores.
"""
from __future__ import annotations

import contextlib
import os
import threading
import warnings

import numba
from numba import get_num_threads, set_num_threads
from numba.core.errors import NumbaIRAssumptionWarning

FASTMATH = {"reassoc", "contract"}
launch_lock = threading.Lock()

try:
    import fcntl
except ImportError:   # no flock: the guard does nothing (numba alone decides)
    fcntl = None


def jit(fn=None, *, parallel: bool = False):
    """``numba.njit`` with polyeng's preset and the cache guard; use as ``@jit`` or ``@jit(parallel=True)``."""
    def wrap(f):
        dispatcher = numba.njit(cache=True, nogil=True, parallel=parallel, fastmath=FASTMATH,
                                error_model="numpy")(f)
        guard_cache(dispatcher)
        return dispatcher
    return wrap(fn) if fn is not None else wrap


def inline(fn):
    """A helper compiled into its callers (no call overhead, vectorizable with them)."""
    return numba.njit(inline="always", fastmath=FASTMATH, error_model="numpy")(fn)


def guard_cache(dispatcher) -> None:
    """Route the dispatcher's compile-or-load-from-disk step through the cross-process file lock."""
    unguarded = dispatcher.compile

    def compile_locked(sig):
        with cache_lock(dispatcher), warnings.catch_warnings():
            # numba's SSA pass flags the variables of functions it inlined twice into one
            # loop (sigmoid and tanh in the LSTM step) with an internal "pedantic" warning;
            # the generated code is correct (the tests compare it with BASIC).
            warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)
            return unguarded(sig)
    dispatcher.compile = compile_locked


_held = threading.local()   # how deep this thread is in guarded compiles


@contextlib.contextmanager
def cache_lock(dispatcher):
    """Exclusive across processes; re-entrant within a thread, since compiling one kernel
    compiles the jitted functions it calls (a second ``flock`` on a new file description
    would wait on the first one forever)."""
    depth = getattr(_held, "depth", 0)
    path = _lock_path(dispatcher) if fcntl is not None and depth == 0 else None
    if path is None:
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth = depth
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_path(dispatcher):
    try:
        directory = dispatcher._cache._cache_path
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, "polyeng-compile.lock")
    except Exception:   # no usable cache directory: numba itself runs uncached
        return None


_SERIAL_BYTES = 256 * 1024   # below this much output a launch stays on the calling thread


def launch(kernel, out_nbytes, *args):
    """Run a parallel ``kernel`` under ``launch_lock``; one writing under ``_SERIAL_BYTES`` runs on
    the calling thread alone: waking the pool (and, on a busy machine, waiting for a core) costs
    far more than such a copy. """
    with launch_lock:
        if out_nbytes >= _SERIAL_BYTES:
            return kernel(*args)
        threads = get_num_threads()
        set_num_threads(1)
        try:
            return kernel(*args)
        finally:
            set_num_threads(threads)
