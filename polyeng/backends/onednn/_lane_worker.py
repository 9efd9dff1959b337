"""Lane threads that wait for their work in compiled code: no GIL, and no sleep at once.

A lane thread woken from its sleep for each run (a queue, a condition) starts tens of
microseconds after it is asked to in a virtual machine, where waking an idle virtual core goes
through the host; it then waits for the GIL, which the caller holds while its own lane starts,
and sleeps again for it. On a 2-core virtual machine the SqueezeNet of the vision tests at batch
8, whose two lanes took 130 us each alone, took 285-325 us in lanes on a Python thread, and
157-186 us on this worker; ``benchmarks/lane_wakeup.py`` measures the same on a small CNN.

A ``Worker`` here is a thread that stays in one compiled function (``_native_loops.serve``),
without the GIL, for its life. It takes a task (programs' compiled loops and the addresses of
their arrays, written into its table) from a POSIX semaphore, trying for a while
(``SPIN_NS``) before it sleeps, runs the loops, and posts a second semaphore, which the caller
takes the same way. After each task the thread keeps trying for ``SPIN_NS`` and gives its core
to any other thread that wants it between tries (``sched_yield``), so that the next run of a
loop of runs finds it awake, and a busy core is not kept from the work that needs it.

The C functions are found in the process's C library; where one is missing (no POSIX
semaphores) or llvmlite cannot compile the loops, ``available()`` is False and lanes run on
Python threads.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import c_int, c_size_t

import numpy as np

from .._address import address
from ._lib import stream

# how long a waiting thread tries before it sleeps: a run's own lanes end within a few hundred
# microseconds of each other, and a loop of runs posts its next task within about 100 us
SPIN_NS = 500_000
SEM_BYTES = 64           # sizeof(sem_t) is 32 on 64-bit Linux; room to spare
MAX_TASKS = 64           # programs per task

_state: dict = {}
_lock = threading.Lock()


def _functions():
    """(the C functions' addresses, ``sem_init``), or None where they cannot be had."""
    if "fns" in _state:
        return _state["fns"]
    if "error" in _state:
        return None
    with _lock:
        if "fns" not in _state and "error" not in _state:
            try:
                from . import _native
                from . import _native_loops as L
                loop = _native._functions()
                if loop is None:
                    raise RuntimeError("the programs' compiled loop is not available")
                fns = loop[0]
                if not fns.all():
                    raise RuntimeError("the C library lacks POSIX semaphores, sched_yield or clock_gettime")
                init = ctypes.CDLL(None).sem_init
                init.argtypes, init.restype = (c_size_t, c_int, ctypes.c_uint), c_int
                sem = np.zeros(SEM_BYTES, np.uint8)
                if init(sem.ctypes.data, 0, 1) != 0:
                    raise OSError("sem_init failed")
                done = np.zeros(SEM_BYTES, np.uint8)
                if init(done.ctypes.data, 0, 0) != 0:
                    raise OSError("sem_init failed")
                # tried now, so that a failure is found here: a stop task posted before, which
                # serve takes at once, and its done taken
                table = np.zeros((1 + MAX_TASKS, L.ROW), np.int64)
                table[0, 0] = L.STOP
                ts, taken = np.zeros(2, np.int64), np.zeros(1, np.int64)
                compiled = L.functions()
                compiled["serve"](address(fns), 0, address(sem), address(done), address(table), address(ts), 0,
                                  address(taken))
                compiled["acquire"](address(fns), address(done), address(ts), 1000, address(taken))
                if taken[0] != 2:
                    raise RuntimeError("the lane worker's loop did not run its stop task")
                _state["fns"] = (fns, init)
            except Exception as exc:   # llvmlite or the C library wanting: Python threads run the lanes
                _state["error"] = f"{type(exc).__name__}: {exc}"
    return _state.get("fns")


def available() -> bool:
    from . import _native
    return _native.available() and _functions() is not None


class Worker:
    """A thread in ``_native_loops.serve``: ``post`` a task, then ``wait`` for it (from one
    thread at a time: the caller holds ``lock``)."""

    def __init__(self):
        from . import _native_loops as L
        self._L = L
        self._compiled = L.functions()
        self.fns, init = _functions()
        self._fns = address(self.fns)
        self.lock = threading.RLock()   # reentrant: see Program.lock (``segment.py``)
        self.sems = np.zeros(2 * SEM_BYTES, np.uint8)
        self.task_sem, self.done_sem = self.sems.ctypes.data, self.sems.ctypes.data + SEM_BYTES
        if init(self.task_sem, 0, 0) != 0 or init(self.done_sem, 0, 0) != 0:
            raise OSError("sem_init failed")
        self._post = ctypes.CFUNCTYPE(c_int, c_size_t)(int(self.fns[L.POST]))
        self.table = np.zeros((1 + MAX_TASKS, L.ROW), np.int64)
        self._ts = np.zeros(2, np.int64)   # the waiting caller's clock reading
        self._held = []                    # the posted task's arrays (its memory lives on the waits)
        # tasks posted and waited for, each counted by the compiled function that posts or takes
        # the semaphore, so that a signal's exception raised as it returns leaves them true
        self._posted, self._done = np.zeros(1, np.int64), np.zeros(1, np.int64)
        self.failed = None                 # why the thread ended, if it did
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="polyeng-onednn-lane", daemon=True)
        self.thread.start()
        self._ready.wait()

    def _serve(self):
        try:
            ts, taken = np.zeros(2, np.int64), np.zeros(1, np.int64)
            handle = stream()   # this thread's own
            self._ready.set()
            self._compiled["serve"](self._fns, handle, self.task_sem, self.done_sem, address(self.table), address(ts),
                                    SPIN_NS, address(taken))
        except BaseException as exc:   # the thread ends: a caller waiting, or about to, must not wait on
            self.failed = exc
            self._ready.set()
            self._post(self.done_sem)

    def post(self, runs) -> None:
        """Starts ``runs``: (a ``_native.Native``, the addresses of its arrays as uint64, and
        anything else to hold until the wait) each; the last task has been waited for."""
        if self.failed is not None:
            raise RuntimeError(f"the oneDNN lane thread failed: {self.failed!r}")
        if len(runs) > MAX_TASKS:
            raise ValueError(f"a lane task holds at most {MAX_TASKS} programs, not {len(runs)}")
        if self._done[0] < self._posted[0]:
            raise RuntimeError("a lane task was posted before the last one was waited for")
        for i, (native, pointers, *keep) in enumerate(runs):
            native.row(pointers, self.table[1 + i])
        self._held = runs
        self.table[0, 0] = len(runs)
        self._compiled["post"](self._fns, self.task_sem, address(self._posted))   # a full barrier after the writes

    def wait(self) -> None:
        """Waits for the posted task, without the GIL, also through signals; when a signal's
        handler raised as it returned, waiting again returns at once."""
        if self._done[0] < self._posted[0]:
            self._compiled["acquire"](self._fns, self.done_sem, address(self._ts), SPIN_NS, address(self._done))
        self._held = []
        if self.failed is not None:
            raise RuntimeError(f"the oneDNN lane thread failed: {self.failed!r}")

    def statuses(self) -> list:
        """The compiled loops' statuses of the task waited for, one per run."""
        return [int(s) for s in self.table[1:1 + int(self.table[0, 0]), self._L.STATUS]]


def wait_all(workers) -> None:
    """Waits for every worker's posted task (a worker with none posted returns at once): through a
    KeyboardInterrupt, which is raised once all have ended (their lanes write into the caller's
    arrays), and past a worker whose thread ended, whose error is raised once the others have."""
    failure = None
    for worker in workers:
        while True:
            try:
                worker.wait()
                break
            except KeyboardInterrupt as exc:
                failure = exc
            except Exception as exc:
                failure = failure or exc
                break
    if failure is not None:
        raise failure


_workers: list = []


def workers(count: int) -> list:
    """``count`` workers (started on first use, kept for the process)."""
    if _functions() is None:   # found before the lock: a worker's start asks for them
        raise RuntimeError(f"no oneDNN lane worker here: {_state.get('error')}")
    with _lock:
        _workers[:] = [worker for worker in _workers if worker.failed is None]   # a failed one replaced
        while len(_workers) < count:
            _workers.append(Worker())
        return _workers[:count]


def after_fork_in_child() -> None:
    """The child of a fork has none of the parent's threads: new workers, on new semaphores."""
    global _lock
    _lock = threading.Lock()
    _workers.clear()
