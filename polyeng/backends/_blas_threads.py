"""numpy's BLAS on polyeng's thread budget, and on the calling thread for small products.

polyeng's BLAS calls (matmul, linear, the products of lstm) run inside ``blas_threads(work)``:
- a product of less than ``SMALL_WORK`` multiply-adds runs with OpenBLAS on one thread. OpenBLAS
  splits larger products than its own serial limits over its workers, and when another process
  holds a core a worker waits for one: a product of 0.1 ms took 24-53 ms (docs/performance.md,
  "Small calls on a busy machine");
- a larger one runs on polyeng's thread budget as the machine's load allows it
  (``engine.threads.threads_now``), never on more threads than OpenBLAS had when polyeng found it
  (what the user gave it: ``OPENBLAS_NUM_THREADS``, threadpoolctl, or every core).
- a product the caller names (``key``: matmul and linear name theirs by op, shapes and dtype)
  instead runs its first calls alternately on that budget and on one thread, and keeps the
  faster (``engine/thread_trials.py``), whatever its size: on a 2-core virtual machine a
  1024x32 by 32x96 product took 42 us on two threads and 73 us on one, a 1024x32 by 32x128 one
  303 us on two and 106 us on one. On a busy machine ``threads_now`` is 1 and nothing is tried.
The count is restored afterwards, also when the call raises.

The count is process-wide. While calls hold it, a product another Python thread starts runs
on the fewest threads any of them asked for (correct, only slower); the last one out restores
the count it found. The library is found with threadpoolctl on the first such call: numpy's
OpenBLAS (or BLIS) when it runs its own threads. Nothing is changed when numpy's BLAS is
another library (MKL, Accelerate), when it runs its threads through OpenMP (its count is then
per thread), or when none is found.
"""
from __future__ import annotations

import contextlib
import os
import threading
from time import perf_counter

import numpy as np

from ..engine.signal_safe import entered_without_signal_check, settle
from ..engine.thread_trials import Trials
from ..engine.threads import threads_now

# Below this many multiply-adds (whole call) two threads saved up to ~0.1 ms in f32 (~0.2 ms
# in f64) on an idle 2-core machine, against stalls of 15-50 ms on a busy one (docs/performance.md).
SMALL_WORK = 1 << 23
# OpenBLAS itself keeps products this small on one thread (interface/gemm.c and gemv.c, with
# the default GEMM_MULTITHREAD_THRESHOLD of 4): no need to pay ~1.5 us to set the count.
_SERIAL_GEMM = 65536 * 4        # at most this m * n * k for a product of matrices
_SERIAL_GEMV = 2304 * 4 - 1     # at most this m * n for a product with a vector (one row or column)

_NOTHING = contextlib.nullcontext()
_lock = threading.Lock()
_controls = None   # (get, set) of the library's thread count, () if none; found on first use
_controller = None  # threadpoolctl's controller of that library (for blas_info)
_active: dict = {}  # thread count -> how many running calls asked for it, in all threads
_saved = 0          # the count the last of them restores
_current = 0        # the count set while calls hold it (read from the library by the first one in)
trials = Trials()   # named products: the budget or one thread, by their first calls' times


class _Hold:
    """OpenBLAS on ``wanted`` threads (at most the count found) for the block; re-entrant and
    shared by threads, which get the fewest threads any running call asked for."""
    __slots__ = ("wanted", "held")

    def __init__(self, wanted: int):
        self.wanted, self.held = wanted, 0

    def __enter__(self):
        global _saved, _current
        get, set_ = _controls
        try:
            with _lock:
                if not _active:   # the library's count now: whatever set it since, the user included
                    _saved = _current = get()
                held = min(self.wanted, _saved)
                _active[held] = _active.get(held, 0) + 1
                self.held = held   # counted and recorded with no signal check between
                fewest = min(_active)
                if _current != fewest:
                    set_(fewest)
                    _current = fewest
        except BaseException:   # a failed or interrupted enter (up to the lock's release): holds nothing
            self.__exit__()
            raise

    @entered_without_signal_check
    def __exit__(self, *exc):
        settle(self._release_locked)   # no signal can skip it (engine/signal_safe.py)

    def _release_locked(self):
        get, set_ = _controls
        with _lock:
            self._release(get, set_)

    def _release(self, get, set_):
        global _current
        if self.held:   # released once, whatever signal makes ``settle`` run this again
            left = _active[self.held] - 1
            if left:
                _active[self.held] = left
            else:
                del _active[self.held]
            self.held = 0
        wanted = min(_active) if _active else _saved
        if wanted and _current != wanted:   # 0: interrupted before the first call saved the count
            set_(wanted)
            _current = wanted


class _Tried(_Hold):
    """A ``_Hold`` whose block's time is one of its product's thread trials."""
    __slots__ = ("key", "budget", "began")

    def __init__(self, wanted: int, key, budget: int):
        _Hold.__init__(self, wanted)
        self.key, self.budget, self.began = key, budget, 0.0

    def __enter__(self):
        # the clock first: a signal's exception raised out of __enter__ after the hold was counted
        # (Python checks for signals after a builtin's call) would skip __exit__ and keep the hold
        # for ever, OpenBLAS then on one thread for the rest of the process
        self.began = perf_counter()
        _Hold.__enter__(self)   # last: its return into a with statement checks for no signal

    @entered_without_signal_check
    def __exit__(self, *exc):
        settle(self._release_locked)   # first, as in _Hold: no signal can skip it
        if exc and exc[0] is None:   # not a failed call, nor a failed __enter__ (which passes nothing)
            trials.record(self.key, self.budget, self.wanted, perf_counter() - self.began)


def _after_fork_in_child():
    """A fork during another thread's call: the child has only this thread."""
    global _lock
    _lock = threading.Lock()
    if _active:
        _active.clear()
        if _controls:
            _controls[1](_saved)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def blas_threads(work: int, vector: bool = False, key=None):
    """A context manager for a block of numpy products of ``work`` multiply-adds each (a
    product's batch included): OpenBLAS on the calling thread when that is below
    ``SMALL_WORK``, else on the thread budget; nothing for products OpenBLAS keeps serial itself.
    ``vector``: some product has a single row or column. ``key`` (hashable, the same for the same
    product): the budget or one thread by the product's thread trials, at any size."""
    if work <= (_SERIAL_GEMV if vector else _SERIAL_GEMM):
        return _NOTHING
    if _controls is None:
        _find_controls()
    if not _controls:
        return _NOTHING
    if key is None:
        return _Hold(1 if work < SMALL_WORK else threads_now())
    budget = threads_now()
    if budget == 1:
        return _Hold(1)
    n, timed = trials.choose((key, budget), budget)
    return _Tried(n, (key, budget), budget) if timed else _Hold(n)


def one_thread():
    """A context manager keeping OpenBLAS on the calling thread for the block, whatever the size of
    its products: for products called from compiled code that runs on several threads of its own."""
    if _controls is None:
        _find_controls()
    return _Hold(1) if _controls else _NOTHING


def _find_controls():
    """(get, set) of numpy's BLAS thread count through threadpoolctl, or () (see the module docstring)."""
    global _controls, _controller
    found = ()
    if _numpy_blas_may_be_openblas():
        try:
            from threadpoolctl import ThreadpoolController
            libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        except Exception:   # threadpoolctl missing or failing: BLAS keeps its own threads
            libraries = []
        for library in libraries:
            if library.internal_api in ("openblas", "blis") and library.threading_layer == "pthreads":
                _controller, found = library, (library.get_num_threads, library.set_num_threads)
                break
    _controls = found
    return found


def blas_info() -> dict | None:
    """numpy's BLAS as polyeng drives it: library, version, threading and its thread count now."""
    if _controls is None:
        _find_controls()
    if not _controls:
        return None
    c = _controller
    found = {"library": c.internal_api, "version": c.version, "threading": c.threading_layer,
             "path": c.filepath} if c is not None else {}
    return dict(found, threads=_controls[0]())


def _numpy_blas_may_be_openblas() -> bool:
    config = getattr(getattr(np, "__config__", None), "CONFIG", None)   # numpy >= 1.26
    try:
        name = config["Build Dependencies"]["blas"]["name"]
    except (TypeError, KeyError):
        return True   # not recorded: look for a loaded OpenBLAS
    return "openblas" in str(name).lower()
