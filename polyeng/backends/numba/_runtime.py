"""How NUMBA kernels are compiled and launched.

- ``jit``: the one compile preset. ``cache=True`` keeps machine code on disk between
  processes; ``error_model="numpy"`` makes x/0 give inf/nan as in numpy (and lets loops
  with divisions vectorize); fastmath is limited to reassociation and contraction, never
  ``nnan``/``ninf``, so NaN and Inf propagate exactly as in the BASIC reference.
- The on-disk cache is guarded by file locks: numba's own cache does not coordinate
  processes that start at once (two may compile the same function and overwrite each
  other's index, or write two signatures' code to one data file), so every compile-or-load
  of a function happens under ``flock`` on a lock file of that function's own, beside its
  cache index. Processes compiling different functions do not wait for each other (with one
  lock for the whole cache folder, two test workers compiled one at a time: two cold
  processes compiling pow's and maximum's kernels at once were both done after 11.0-14.2 s,
  against 8.6 s with no lock and 8.8 s with a lock per function).
- ``launch_lock``: parallel kernels are launched one at a time per process. numba's
  workqueue threading layer aborts the process on concurrent launches, and with OpenMP
  concurrent launches only oversubscribe the cores.
- ``launch``: a kernel writing less than ``_SERIAL_BYTES`` runs on the calling thread. A
  parallel launch wakes numba's workers; when another process keeps a core busy they wait
  for it, and a small call took 8-24 ms instead of 0.02-0.2 ms (``benchmarks/contention.py``).
  A larger one runs on polyeng's thread budget, as the machine's load allows it
  (``engine/threads.py``), or on one thread where its first calls ran faster there
  (``engine/thread_trials.py``).
- ``start_pool``: numba's pool is started by polyeng's thread policy, once: one worker per core
  this process may use, and workers that sleep between kernels instead of spinning on the
  cores numpy's BLAS threads need next (``OMP_WAIT_POLICY=PASSIVE`` while libgomp loads, or the
  workqueue layer when another library loaded libgomp first). Variables the user set win.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
import warnings
from time import perf_counter

import numba
from numba import get_num_threads, set_num_threads
from numba.core.compiler_lock import global_compiler_lock
from numba.core.errors import NumbaIRAssumptionWarning

from ...engine.environment import variables
from ...engine.signal_safe import settle
from ...engine.thread_trials import Trials
from ...engine.threads import available_cores, libgomp_known_passive, libgomp_loaded, record_pool, threads_now

FASTMATH = {"reassoc", "contract"}
launch_lock = threading.Lock()

try:
    import fcntl
except ImportError:   # no flock: the guard does nothing (numba alone decides)
    fcntl = None


def jit(fn=None, *, parallel: bool = False, exact: bool = False):
    """``numba.njit`` with polyeng's preset and the cache guard; use as ``@jit`` or ``@jit(parallel=True)``.
    ``exact``: no reassociation nor contraction either, so that the function rounds the same
    wherever LLVM inlines it."""
    def wrap(f):
        dispatcher = numba.njit(cache=True, nogil=True, parallel=parallel, fastmath=False if exact else FASTMATH,
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


_held = threading.local()   # the lock files this thread holds


@contextlib.contextmanager
def cache_lock(dispatcher):
    """Exclusive across processes for one function's compile-or-load; re-entrant within a thread
    (a second ``flock`` on a new file description would wait on the first one forever).

    Compiling a function compiles the jitted functions it calls, each under its own lock, taken
    while the caller's is held. Calls go one way (no jitted function calls itself, directly or not),
    so two processes never wait on each other. Within a process, numba's compiler lock is taken
    first: one thread at a time holds these locks, and none waits on a file lock while another
    thread that holds it waits on the compiler lock."""
    path = _lock_path(dispatcher) if fcntl is not None else None
    held = getattr(_held, "paths", None)
    if held is None:
        held = _held.paths = set()
    if path is None or path in held:
        yield
        return
    with global_compiler_lock, _opened(path) as handle:
        if handle is None:   # a lock file that cannot be opened: numba alone decides, as without flock
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        held.add(path)
        try:
            yield
        finally:
            held.discard(path)
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _opened(path):
    try:
        handle = open(path, "a+")
    except OSError:   # another user's file in a shared cache folder, a folder made read-only since
        handle = None
    if handle is None:
        yield None
        return
    with handle:
        yield handle


def _lock_path(dispatcher):
    """``<index file>.lock`` beside the function's cache index, or None where it has no usable folder."""
    try:
        cache = dispatcher._cache
        directory = cache._cache_path
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, cache._cache_file._index_name + ".lock")
    except Exception:   # no usable cache directory: numba itself runs uncached
        return None


trials = Trials()   # per kernel and output size: its first calls tell whether one thread is faster
_SERIAL_BYTES = 256 * 1024   # below this much output a launch stays on the calling thread


def threads_for(out_nbytes) -> int:
    """How many threads ``launch`` gives a kernel writing ``out_nbytes`` (kernels size their
    tasks and per-task scratch by it): polyeng's thread budget as the machine's load allows it
    (``engine.threads.threads_now``) within numba's pool, or 1 for a small output."""
    if out_nbytes < _SERIAL_BYTES:
        return 1
    if not _pool:
        start_pool()
    return max(1, min(threads_now(), _pool["size"]))


def launch(kernel, out_nbytes, *args):
    """Run a parallel ``kernel`` under ``launch_lock`` on ``threads_for(out_nbytes)`` threads: one
    writing under ``_SERIAL_BYTES`` runs on the calling thread alone (waking the pool, and on a
    busy machine waiting for a core, costs far more than such a call). A larger one runs on the
    budget or on one thread, whichever the first calls of this kernel at this output size ran
    faster on (``engine/thread_trials.py``)."""
    with launch_lock:
        get, put = _thread_count_controls()
        threads = get()   # numba's count for this thread: a numba.set_num_threads of the user's caps the call
        wanted = budget = min(threads_for(out_nbytes), threads)
        if (wanted == 1 and _pool.get("layer") == "workqueue" or _serial_pass.on) and _is_parallel(kernel):
            return serial(kernel)(*args)   # the layer would hand even one thread's work to a worker
        timed = False
        if budget > 1:   # the budget or one thread, whichever its first calls ran faster on
            key = (kernel, out_nbytes, budget)
            wanted, timed = trials.choose(key, budget)
        if threads == wanted and not timed:
            return kernel(*args)
        try:   # set inside the try: an interrupt right after setting still restores the count
            if threads != wanted:
                put(wanted)
            if not timed:
                return kernel(*args)
            began = perf_counter()
            result = kernel(*args)
            trials.record(key, budget, wanted, perf_counter() - began)
            return result
        finally:
            if threads != wanted:
                settle(put, threads)   # no signal can skip it (engine/signal_safe.py)


_pool: dict = {}


def start_pool() -> dict:
    """Start numba's thread pool under polyeng's thread policy, once per process (see
    ``engine/threads.py``): as many workers as the cores this process may use, and no worker
    spinning between kernels. Variables the user set win; a pool numba started before is taken
    as it is. Returns what was chosen, which ``engine.threads.policy()`` also reports."""
    with _pool_lock:
        if _pool:
            return _pool
        from numba.np.ufunc import parallel
        user = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER", "NUMBA_NUM_THREADS")
                if k in os.environ}
        started_before = bool(getattr(parallel, "_is_initialized", False))
        # libgomp that polyeng's oneDNN engine loaded with OMP_WAIT_POLICY=PASSIVE is of known policy
        preloaded = libgomp_loaded() and not _passive_libgomp_loaded_by_onednn() and not libgomp_known_passive()
        set_passive = False
        if not started_before:
            if "NUMBA_NUM_THREADS" not in user:   # numba's default is every core of the machine
                # the pool's size was read when numba was imported: both values set, before the launch
                numba.config.NUMBA_NUM_THREADS = parallel.NUM_THREADS = available_cores()
            layer_chosen = "NUMBA_THREADING_LAYER" in user or numba.config.THREADING_LAYER != "default"
            if not layer_chosen and "OMP_WAIT_POLICY" not in user and preloaded:
                numba.config.THREADING_LAYER = "workqueue"   # a libgomp of unknown policy would spin
            set_passive = "OMP_WAIT_POLICY" not in user and not preloaded
            # libgomp reads it once, as it loads, which _launch_threads makes it do
            with variables({"OMP_WAIT_POLICY": "PASSIVE"} if set_passive else {}):
                parallel._launch_threads()
        layer = numba.threading_layer()
        if "OMP_WAIT_POLICY" in user:
            wait = f"OMP_WAIT_POLICY={user['OMP_WAIT_POLICY']} (set by the user)"
        elif started_before:
            wait = "as numba started it before polyeng did"
        elif layer == "tbb":   # TBB's workers look for work for a while after a kernel: its own policy
            wait = "the tbb layer: workers spin briefly after a kernel (TBB's policy, not settable)"
        elif layer != "omp":
            wait = f"the {layer} layer does not spin" + (" (libgomp was loaded before)" if preloaded else "")
        else:
            wait = "PASSIVE: workers sleep between kernels"
        _pool.update(layer=layer, size=parallel.NUM_THREADS, wait=wait,
                     set_by_user=", ".join(sorted(user)) or "nothing")
        record_pool("numba", _pool)
        return _pool


_pool_lock = threading.Lock()


def _after_fork_in_child():
    """A fork while another thread held a lock: the child has only this thread to release it."""
    global launch_lock, _pool_lock
    launch_lock, _pool_lock = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _passive_libgomp_loaded_by_onednn() -> bool:
    lib = sys.modules.get("polyeng.backends.onednn._lib")
    return bool(lib is not None and lib._state.get("passive"))


_controls = None


_serial: dict = {}   # parallel dispatcher -> its function compiled without parallel loops


class _SerialPass(threading.local):
    on = False


_serial_pass = _SerialPass()


@contextlib.contextmanager
def serial_variants():
    """Launches in the block run their kernel's serial compile (``serial``), as a one-thread launch
    on the workqueue layer does: ``polyeng warmup`` compiles them ahead too, for processes that
    end up on that layer (torch imported first)."""
    before, _serial_pass.on = _serial_pass.on, True
    try:
        yield
    finally:
        _serial_pass.on = before


def _is_parallel(kernel) -> bool:
    """Whether ``kernel`` is a ``jit(parallel=True)`` dispatcher (``launch`` also takes Python
    functions that size their own tasks by numba's thread count: those keep the usual path)."""
    options = getattr(kernel, "targetoptions", None)
    return getattr(kernel, "py_func", None) is not None and bool(options and options.get("parallel"))


def serial(kernel):
    """``kernel`` (a ``jit(parallel=True)`` dispatcher) compiled as a serial function, its
    ``prange`` loops plain ones, cached on disk under its own name (``<name>_serial``: numba's
    cache files are named by the function, and hold one compile per signature whatever the
    flags). numba's workqueue layer runs even a one-thread launch on a worker thread, which the
    caller wakes and waits for: a layer_norm of 128x32 took 147 us so, and 3 us serial, in a
    process that imported torch first (its libgomp loaded before polyeng chose the layer)."""
    found = _serial.get(kernel)
    if found is None:
        f = kernel.py_func
        copy = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__, f.__closure__)
        copy.__qualname__, copy.__module__, copy.__doc__ = f.__qualname__ + "_serial", f.__module__, f.__doc__
        found = _serial[kernel] = jit(copy)
    return found


def _thread_count_controls():
    """numba's own getter and setter of this thread's thread count, without the checks of the
    public ``get_num_threads``/``set_num_threads`` (2 us each, as long as a small kernel);
    the public ones where this numba lacks them."""
    global _controls
    if _controls is None:
        start_pool()   # loads the threading layer, which defines the raw controls
        from numba.np.ufunc import parallel
        raw = getattr(parallel, "_get_num_threads", None), getattr(parallel, "_set_num_threads", None)
        _controls = raw if all(callable(f) for f in raw) else (get_num_threads, set_num_threads)
    return _controls
