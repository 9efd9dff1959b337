"""OpenBLAS's workers told to sleep soon after their last task, not 0.1 s later.

OpenBLAS's pthreads workers spin for ``2**28`` time-stamp cycles after each task before they sleep
(its ``THREAD_TIMEOUT``): on a 2.6 GHz x86-64 core about 0.1 s of a core after every threaded
product, which numba's workers, oneDNN's and the user's other threads wait for meanwhile. On the
2-core machine a 1024x1024 product used 0.10-0.13 s of CPU in the 0.3 s after it returned, and a
3x3 convolution of 8x64x56x56 right after a BASIC one took 25 ms on NUMBA instead of 10 (PyTorch's
17 instead of 9).

So ``import polyeng`` makes them wait ``2**SPIN_BITS`` cycles (about 0.1 ms): it sets
``OPENBLAS_THREAD_TIMEOUT`` for OpenBLAS's ``openblas_read_env`` to read, puts the environment back
as it was, and stops OpenBLAS's workers (``blas_thread_shutdown_``); OpenBLAS starts them again,
with the new timeout, on its next threaded product (as it does after a fork). A product that
follows another by more than that then wakes its workers first: 30-40 us, nothing beside the
products of 2**23 multiply-adds and more that polyeng runs on several threads.

``openblas_read_env`` reads every OpenBLAS variable again, so while it runs the others are set to
what OpenBLAS holds already (``OPENBLAS_VERBOSE``, ``OPENBLAS_BLOCK_FACTOR``; the thread counts it
reads are used only before its first threads start). The process's threads then restart on
OpenBLAS's next threaded product or thread-count change, and every product that follows another
by more than 0.1 ms wakes them first: the user's own numpy products too.

Stopping the workers is safe only while no other thread is inside OpenBLAS, so it is done only
when the importing thread is the process's only Python thread. OpenBLAS keeps its own setting
when another thread runs, when the user gave it a timeout (``OPENBLAS_THREAD_TIMEOUT`` or
``GOTO_THREAD_TIMEOUT`` in the environment, or one OpenBLAS read when it loaded: theirs wins,
``OPENBLAS_THREAD_TIMEOUT=28`` keeps OpenBLAS's default), when numpy's BLAS is not OpenBLAS on its
own threads, or when that OpenBLAS lacks those functions. ``state()`` says which.
"""
from __future__ import annotations

import ctypes
import os
import threading

from ..engine.environment import variables

SPIN_BITS = 18
USER_VARIABLES = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
_state: dict = {}


def state() -> dict:
    """``{"short": bool, "why": str}`` once ``apply`` ran, else {}."""
    return dict(_state)


def apply() -> dict:
    """Shorten OpenBLAS's spin once per process (see the module text); returns ``state()``."""
    if not _state:
        try:
            _state.update(_apply())
        except Exception as exc:   # never a reason for ``import polyeng`` to fail
            _state.update(short=False, why=f"left as it was: {type(exc).__name__}: {exc}")
    return state()


def _apply() -> dict:
    given = [name for name in USER_VARIABLES if os.environ.get(name)]
    if given:
        return {"short": False, "why": f"{given[0]}={os.environ[given[0]]} set by the user"}
    from ._blas_threads import _find_controls, blas_info
    if not _find_controls():
        return {"short": False, "why": "numpy's BLAS is not an OpenBLAS running its own threads"}
    if threading.active_count() > 1:
        return {"short": False, "why": "other threads ran when polyeng was imported: OpenBLAS's workers "
                                       "cannot be stopped safely then"}
    library = ctypes.CDLL(blas_info()["path"])
    try:
        read_env, shutdown, timeout = (library.openblas_read_env, library.blas_thread_shutdown_,
                                       library.openblas_thread_timeout)
        held = {"OPENBLAS_VERBOSE": library.openblas_verbose, "OPENBLAS_BLOCK_FACTOR": library.openblas_block_factor}
    except AttributeError:
        return {"short": False, "why": "this OpenBLAS has no openblas_read_env or blas_thread_shutdown_"}
    timeout.restype = ctypes.c_uint
    if timeout():   # read from the environment when OpenBLAS loaded: the user's
        return {"short": False, "why": f"OPENBLAS_THREAD_TIMEOUT={timeout()} given when OpenBLAS loaded"}
    wanted = {name: str(get()) for name, get in held.items()}
    wanted["OPENBLAS_THREAD_TIMEOUT"] = str(SPIN_BITS)
    with variables(wanted):
        read_env()
    if timeout() != SPIN_BITS:
        return {"short": False, "why": "OpenBLAS did not take OPENBLAS_THREAD_TIMEOUT"}
    shutdown()   # the workers restart on the next threaded product, reading the new timeout
    return {"short": True, "why": f"sleep 2**{SPIN_BITS} cycles after their last task, not OpenBLAS's 2**28 "
                                  f"(OPENBLAS_THREAD_TIMEOUT set by the user wins)"}
