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

import numba

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
        with cache_lock(dispatcher):
            return unguarded(sig)
    dispatcher.compile = compile_locked


@contextlib.contextmanager
def cache_lock(dispatcher):
    if fcntl is None:
        yield
        return
    path = _lock_path(dispatcher)
    if path is None:
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_path(dispatcher):
    try:
        directory = dispatcher._cache._cache_path
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, "polyeng-compile.lock")
    except Exception:   # no usable cache directory: numba itself runs uncached
        return None
