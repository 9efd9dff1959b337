"""The compiled loops of ``_native.py`` and ``_lane_worker.py`` (imported once numba is wanted).

Every function here runs without the GIL and calls C only at the addresses in ``fns`` (a uint64
array, in the order of ``FUNCTIONS``: oneDNN's, libgomp's and the C library's functions). The
addresses are data, not ctypes objects, so that a call of a loop costs numba's dispatch of a few
arrays (about 1 us) rather than its typing of ctypes function objects (about 7 us).

- ``run_calls``: a program's executions, one after another on one stream.
- ``acquire``: takes a POSIX semaphore, trying for up to ``spin_ns`` (yielding the core between
  tries, so that a thread that wants it runs first) before it sleeps in ``sem_wait``.
- ``post``: counts a task and posts its semaphore.
- ``serve``: a lane worker's life: takes a task, runs the programs it names, posts that it is
  done. ``_lane_worker.py`` describes the table a task is written in.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..numba._native_calls import call_int
from ..numba._runtime import jit

# the C functions, by their index in ``fns``
FUNCTIONS = ("dnnl_primitive_execute", "dnnl_stream_wait", "dnnl_memory_set_data_handle", "omp_set_num_threads",
             "sem_trywait", "sem_wait", "sem_post", "sched_yield", "clock_gettime")
EXECUTE, WAIT, SET_DATA, SET_THREADS, TRYWAIT, SEMWAIT, POST, YIELD, CLOCK = range(len(FUNCTIONS))

# a task table row (one program's run): its arrays' addresses and sizes, and its status
HANDLES, CALLS, COUNTS, PACKED, THREADS, BOUND, BOUND_N, SOURCES, POINTERS, POINTERS_N, STATUS = range(11)
ROW = 11
STOP = -1   # the task count that ends a worker

_I32, _PTR = types.int32, types.uint64


def _c_codegen(result, params):
    """The code of a call of the C function at an address (the first value) with arguments of
    the numba types ``params`` and a result of type ``result`` (None: void)."""
    def codegen(context, builder, sig, values):
        low = [context.get_value_type(p) for p in params]
        back = ir.VoidType() if result is None else context.get_value_type(result)
        pointer = builder.inttoptr(values[0], ir.FunctionType(back, low).as_pointer())
        cast = [context.cast(builder, v, t, p) for v, t, p in zip(values[1:], sig.args[1:], params)]
        out = builder.call(pointer, cast)
        return context.get_dummy_value() if result is None else out
    return codegen


def _typed(result, params, address, args):
    if not isinstance(address, types.Integer) or not all(isinstance(a, types.Integer) for a in args):
        return None
    return (types.none if result is None else result)(address, *args), _c_codegen(result, params)


@intrinsic
def _call_p(typingctx, address, a):
    """int f(void *): dnnl_stream_wait, sem_trywait, sem_wait, sem_post."""
    return _typed(_I32, (_PTR,), address, (a,))


@intrinsic
def _call_pp(typingctx, address, a, b):
    """int f(void *, void *): dnnl_memory_set_data_handle."""
    return _typed(_I32, (_PTR, _PTR), address, (a, b))


@intrinsic
def _call_execute(typingctx, address, a, b, c, d):
    """int dnnl_primitive_execute(primitive, stream, int, const dnnl_exec_arg_t *)."""
    return _typed(_I32, (_PTR, _PTR, _I32, _PTR), address, (a, b, c, d))


@intrinsic
def _call_threads(typingctx, address, a):
    """void omp_set_num_threads(int)."""
    return _typed(None, (_I32,), address, (a,))


@intrinsic
def _call_clock(typingctx, address, a, b):
    """int clock_gettime(clockid_t, struct timespec *)."""
    return _typed(_I32, (_I32, _PTR), address, (a, b))


@intrinsic
def _pointer(typingctx, address):
    """An integer address as a pointer that ``carray`` reads."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(address), codegen


@jit
def run_calls(fns, stream_handle, handles, counts, packed, threads, bound, sources, pointers):
    """0, or -(1 + j) when setting binding j failed, or (call index + 1) * 1000 + status."""
    for j in range(bound.size):
        if _call_pp(fns[SET_DATA], bound[j], pointers[sources[j]]) != 0:
            return -(1 + j)
    current = -1
    for i in range(handles.size):
        if threads[i] != current:
            current = threads[i]
            _call_threads(fns[SET_THREADS], current)
        status = _call_execute(fns[EXECUTE], handles[i], stream_handle, counts[i], packed[i])
        if status == 0:
            status = _call_p(fns[WAIT], stream_handle)
        if status != 0:
            return (i + 1) * 1000 + status
    return 0


@jit
def _now(fns, ts):
    _call_clock(fns[CLOCK], 1, ts.ctypes.data)   # CLOCK_MONOTONIC
    return ts[0] * 1000000000 + ts[1]


@jit
def acquire(fns, sem, ts, spin_ns, taken):
    """Takes semaphore ``sem``: trying for ``spin_ns`` nanoseconds, then sleeping; then counts
    it in ``taken[0]`` (here, where no signal handler runs between the two). ``ts``: two int64
    for the clock."""
    if _call_p(fns[TRYWAIT], sem) != 0:
        slept = True
        if spin_ns > 0:
            start = _now(fns, ts)
            while True:
                call_int(fns[YIELD])
                if _call_p(fns[TRYWAIT], sem) == 0:
                    slept = False
                    break
                if _now(fns, ts) - start >= spin_ns:
                    break
        if slept:
            while _call_p(fns[SEMWAIT], sem) != 0:   # interrupted by a signal: wait on
                pass
    taken[0] += 1


@jit
def post(fns, sem, posted):
    """Counts a task in ``posted[0]`` and posts ``sem`` (here, where no signal handler runs
    between the two: a caller's count is what it posted)."""
    posted[0] += 1
    return _call_p(fns[POST], sem)


@jit
def serve(fns, stream_handle, task_sem, done_sem, table, ts, spin_ns, taken):
    """Runs the tasks posted to ``task_sem`` until one's count (``table[0, 0]``) is ``STOP``."""
    while True:
        acquire(fns, task_sem, ts, spin_ns, taken)
        count = table[0, 0]
        if count < 0:
            _call_p(fns[POST], done_sem)
            return 0
        for e in range(1, count + 1):
            row = table[e]
            handles = carray(_pointer(row[HANDLES]), row[CALLS], np.uint64)
            counts = carray(_pointer(row[COUNTS]), row[CALLS], np.int32)
            packed = carray(_pointer(row[PACKED]), row[CALLS], np.uint64)
            threads = carray(_pointer(row[THREADS]), row[CALLS], np.int32)
            bound = carray(_pointer(row[BOUND]), row[BOUND_N], np.uint64)
            sources = carray(_pointer(row[SOURCES]), row[BOUND_N], np.int64)
            pointers = carray(_pointer(row[POINTERS]), row[POINTERS_N], np.uint64)
            table[e, STATUS] = run_calls(fns, stream_handle, handles, counts, packed, threads, bound, sources,
                                         pointers)
        _call_p(fns[POST], done_sem)
