"""Freed memory kept for the next run: glibc's malloc told to keep what a graph run frees.

A graph run makes its intermediate arrays and frees each after its last reader. glibc serves large
blocks with mmap (from 128 KiB, a limit it raises as such blocks are freed) and gives the top of
its heap back to the system once more than twice that limit is free; either way the next run's
arrays are mapped afresh, and every page is faulted in again when first written. Measured on the
text models at batch 8 and sequence 128: about 1,200 page faults and 1.6-2.8 ms of system time per
run, a quarter of BERT's run.

So the first graph run or op call of a process (``keep_freed_memory``) sets glibc's mmap
threshold to its largest value (32 MiB: smaller blocks come from the heap) and its trim threshold
to 256 MiB (the heap keeps up to that much free memory for reuse), as an inference runtime's arena
would. Runs then reuse the same pages: results are the same bits, and page faults per run fell to
0-35. Op calls outside graphs gain the same way: a depthwise convolution of 8x96x56x56 on NUMBA,
called in a loop, took 2.10 ms with its 9.6 MB result faulted in afresh each call, 1.10 ms after.

It applies to the whole process (glibc has one such setting), on glibc only, and never when
``POLYENG_KEEP_FREED_MEMORY=0``; ``state()`` says what was done and why.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

ENV = "POLYENG_KEEP_FREED_MEMORY"
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20    # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 256 << 20

_state: dict = {}
_lock = threading.Lock()


applied = False   # True once ``keep_freed_memory`` has run (a module global: one read per op call)


def keep_freed_memory() -> dict:
    """Apply the setting once per process (see the module text); returns ``state()``."""
    global applied
    if _state:
        applied = True
        return _state
    with _lock:
        if not _state:
            _state.update(_apply())
        applied = True
    return _state


def _after_fork_in_child():
    """A fork while another thread applied the setting: the child has only this thread to release
    the lock (it would hang on its first op call)."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def state() -> dict:
    """``{"kept": bool, "why": str}`` once a graph has run (or ``keep_freed_memory`` was called), else {}."""
    return dict(_state)


def _apply() -> dict:
    if os.environ.get(ENV, "").strip() == "0":
        return {"kept": False, "why": f"{ENV}=0"}
    if not sys.platform.startswith("linux"):
        return {"kept": False, "why": "not glibc (Linux only)"}
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        version = libc.gnu_get_libc_version()
    except (OSError, AttributeError, TypeError):
        return {"kept": False, "why": "the C library is not glibc"}
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return {"kept": False, "why": "glibc refused the setting"}
    return {"kept": True, "why": f"glibc {version.decode() if version else ''}: blocks below "
                                 f"{MMAP_THRESHOLD >> 20} MiB from the heap, up to {TRIM_THRESHOLD >> 20} MiB "
                                 f"of freed heap kept ({ENV}=0 turns this off)"}
