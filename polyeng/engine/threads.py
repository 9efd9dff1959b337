"""polyeng's one thread budget, shared by every pool it drives (numba's workers, numpy's BLAS).

- **The budget** is how many threads one op may use: ``set_num_threads(n)`` sets the process
  default (first read from ``POLYENG_NUM_THREADS``, else the cores this process may run on,
  ``os.sched_getaffinity``), ``with num_threads(n):`` scopes it (contextvars, like the other
  settings). Each call reads it when its kernel runs: a numba launch takes that many workers, a
  large BLAS product that many OpenBLAS threads (``backends/_blas_threads.py``); small work stays on
  the calling thread whatever the budget.
- **A busy machine** (runnable threads of other processes, from ``/proc/loadavg`` less this
  process's own, read at most every ``_RECHECK_S``) gets fewer threads: the budget less the cores
  others keep busy, at least one.
  Parallel work waiting for a core held by another process took 4 ms time slices per product.
- **No spinning between kernels.** numba's OpenMP workers (GNU libgomp) spin for a while after
  each kernel by default, on the cores OpenBLAS's threads need next: the bundled encoder took
  76 ms per run instead of 5.5 ms. When polyeng starts numba's pool and nothing has loaded
  libgomp yet, it loads it with ``OMP_WAIT_POLICY=PASSIVE`` in the environment (libgomp reads it
  once, as it loads) and restores the environment at once. If libgomp is already loaded (another
  library started it), its policy is unknown, so numba's pool runs on its ``workqueue`` layer,
  which never spins. (oneDNN programs' lane threads alone try for work for 0.5 ms after a run,
  yielding their core between tries: ``backends/onednn/_lane_worker.py``.) OpenBLAS's workers are
  told at import to sleep 0.1 ms after their last task, not 0.1 s (``backends/_blas_spin.py``).
  Variables the user set (``OMP_WAIT_POLICY``, ``NUMBA_THREADING_LAYER``, ``NUMBA_NUM_THREADS``,
  ``OPENBLAS_NUM_THREADS``, ``OPENBLAS_THREAD_TIMEOUT``, ``POLYENG_NUM_THREADS``) always win.

``policy()`` reports what is in force; ``polyeng info`` prints it.
"""
from __future__ import annotations

import contextvars
import functools
import os
import time

import numpy as np

from .scopes import Scoped

ENV = "POLYENG_NUM_THREADS"
_RECHECK_S = 0.1

_scoped: contextvars.ContextVar = contextvars.ContextVar("polyeng_num_threads", default=None)
_default: list = []        # [n] once read: the process default
_pool: dict = {}           # engine -> what starting its pool found and chose
_load = [0.0, 0]           # [time of the last /proc/loadavg read, threads others keep busy]


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parse(value, where: str, text: bool = False) -> int:
    """``value`` as a number of threads (an int >= 1; a string of one too when ``text``, as an
    environment variable is), or TypeError/ValueError naming ``where``."""
    wrong = f"{where}={value!r} is not a number of threads; expected an int >= 1"
    if text and isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(wrong) from None
    elif isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(wrong)
    if value < 1:
        raise ValueError(wrong)
    return int(value)


def _process_default() -> int:
    if not _default:
        raw = os.environ.get(ENV)
        _default.append(_parse(raw, ENV, text=True) if raw not in (None, "") else available_cores())
    return _default[0]


def get_num_threads() -> int:
    """The thread budget in effect here: the innermost ``num_threads`` scope, else the process default."""
    scoped = _scoped.get()
    return scoped if scoped is not None else _process_default()


def set_num_threads(n) -> None:
    """Set the process default thread budget (``POLYENG_NUM_THREADS`` sets it at start-up)."""
    n = _parse(n, "n")
    _process_default()
    _default[0] = n


class num_threads(Scoped):
    """``with polyeng.num_threads(n):`` the thread budget for the block (this thread or task only)."""

    _var = _scoped

    def __init__(self, n):
        self.value = _parse(n, "n")


def scoped_num_threads():
    """The budget of the innermost ``num_threads`` scope, or None (what a settings snapshot carries)."""
    return _scoped.get()


def threads_now() -> int:
    """How many threads a parallel kernel starting now may use: the budget, less the cores other
    processes keep busy when the machine is oversubscribed, at least 1."""
    budget = get_num_threads()
    if budget == 1:
        return 1
    now = time.monotonic()
    if now - _load[0] > _RECHECK_S:
        _load[0], _load[1] = now, _others_running()
    busy = _load[1]
    if busy <= 0:
        return budget
    # the load is the whole machine's: other processes' threads may run on cores this one may not use
    return max(1, min(budget, _machine_cores() - busy))


@functools.cache
def _machine_cores() -> int:
    """The machine's cores (the load is the whole machine's), read once: os.cpu_count() costs
    microseconds, and this is asked before every parallel kernel while the machine is busy."""
    return os.cpu_count() or available_cores()


def _own_running(tasks: str) -> int:
    """This process's threads running now (state R in /proc/self/task/*/stat)."""
    own = 0
    for task in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, task, "stat"), "rb") as f:
                stat = f.read()
        except OSError:   # the thread ended meanwhile
            continue
        own += stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] == b"R"
    return own


def _others_running(loadavg: str = "/proc/loadavg", tasks: str = "/proc/self/task") -> int:
    """Threads of other processes running now: /proc/loadavg's count of runnable threads less this
    process's own (another library's workers spinning here, torch's, are not a busy neighbour),
    and 0 where they cannot be read. Read between kernels, when polyeng's own pools are idle.
    This process's threads are counted before and after the load is read, and the larger count
    is taken: a thread that stopped waiting for work in between (a oneDNN lane worker's, which
    tries for a while before it sleeps) was counted in the load as running."""
    try:
        before = _own_running(tasks)
        with open(loadavg) as f:
            running = int(f.read().split()[3].split("/")[0])
        own = max(before, _own_running(tasks))
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - own)


# --- what the engines report ------------------------------------------------------------------------

_libgomp = {"passive": False}


def note_passive_libgomp() -> None:
    """Say that the GNU OpenMP runtime now loaded was loaded with ``OMP_WAIT_POLICY=PASSIVE`` (a
    library imported under that setting, as ``polyeng bench`` imports torch): numba's pool may then
    share it (its omp layer) without workers spinning, instead of taking the workqueue layer, whose
    every launch wakes a worker (8x the time of a small layer_norm)."""
    _libgomp["passive"] = True


def libgomp_known_passive() -> bool:
    return _libgomp["passive"]


def libgomp_loaded() -> bool:
    """Whether a GNU OpenMP runtime is loaded in this process already (Linux; False elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            return any("libgomp" in line for line in maps)
    except OSError:
        return False


def record_pool(name: str, facts: dict) -> None:
    """An engine's pool, as it was started under this policy (``policy()`` shows it)."""
    _pool[name] = dict(facts)


def policy() -> dict:
    """What is in force: the budget, where it comes from, and each pool started so far."""
    return {"num_threads": get_num_threads(), "default": _process_default(),
            "source": ENV if os.environ.get(ENV) else "the cores this process may use",
            "cores": available_cores(), "threads_now": threads_now(), "pools": {k: dict(v) for k, v in _pool.items()}}
