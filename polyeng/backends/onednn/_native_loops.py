"""The compiled loops of ``_native.py`` and ``_lane_worker.py``, built with llvmlite alone.

Every function here runs without the GIL (called through ctypes, which releases it) and calls C
only at the addresses in ``fns`` (a uint64 array, in the order of ``FUNCTIONS``: oneDNN's,
libgomp's and the C library's functions). Every argument is a 64-bit integer: a count, a handle,
or the address of an array's first element.

- ``run_calls``: a program's executions, one after another on one stream; ``run_row`` the same,
  its arguments read from a task table row (three arguments for ctypes to convert, not eleven:
  1.6 us less per call).
- ``acquire``: takes a POSIX semaphore, trying for up to ``spin_ns`` (yielding the core between
  tries, so that a thread that wants it runs first) before it sleeps in ``sem_wait``.
- ``post``: counts a task and posts its semaphore.
- ``serve``: a lane worker's life: takes a task, runs the programs it names, posts that it is
  done. ``_lane_worker.py`` describes the table a task is written in.

The functions are a few loops around C calls, so they are written here as LLVM IR and compiled
by ``_llvm.py`` (about 15 ms; a later process loads the machine code from its cache folder in
about 4 ms), not through numba: a process that runs only oneDNN
programs then never imports numba, whose import, typing set-up and cached-function loads took
0.4-1.0 s of a CNN's second call (the call that builds its programs) and about 115 MB.
"""
from __future__ import annotations

import ctypes
import threading

from ._llvm import Builder, loop, variable

# the C functions, by their index in ``fns``
FUNCTIONS = ("dnnl_primitive_execute", "dnnl_stream_wait", "dnnl_memory_set_data_handle", "omp_set_num_threads",
             "sem_trywait", "sem_wait", "sem_post", "sched_yield", "clock_gettime")
EXECUTE, WAIT, SET_DATA, SET_THREADS, TRYWAIT, SEMWAIT, POST, YIELD, CLOCK = range(len(FUNCTIONS))

# a task table row (one program's run): its arrays' addresses and sizes, and its status
HANDLES, CALLS, COUNTS, PACKED, THREADS, BOUND, BOUND_N, SOURCES, POINTERS, POINTERS_N, STATUS = range(11)
ROW = 11
STOP = -1   # the task count that ends a worker

# name -> (result, number of int64 arguments): the functions' C signatures
SIGNATURES = {"run_calls": ("i64", 11), "run_row": ("i64", 3), "acquire": (None, 5), "post": ("i32", 3),
              "serve": ("i64", 8)}

_lock = threading.Lock()
_made: dict = {}   # name -> ctypes function


class _Builder(Builder):
    """The IR of the five functions: each value an i64 (addresses included)."""

    def __init__(self, ir):
        super().__init__(ir, "polyeng_onednn_loops")

    def signature(self, name):
        """The function ``name`` of ``SIGNATURES`` and a builder at its entry."""
        result, count = SIGNATURES[name]
        return self.function(name, getattr(self, result) if result else None, count)

    def load32(self, b, base, index):
        """A 32-bit integer element, widened to i64."""
        return b.sext(self.load(b, base, index, self.i32), self.i64)

    def c_call(self, b, fns, which, args, result="i32"):
        """A call of ``fns[which]``: ``args`` (i64 values, or (value, "i32")) passed as given."""
        values = [a[0] if isinstance(a, tuple) else a for a in args]
        kinds = [self.i32 if isinstance(a, tuple) else self.i64 for a in args]
        back = self.ir.VoidType() if result is None else getattr(self, result)
        pointer = b.inttoptr(self.load(b, fns, which), self.ir.FunctionType(back, kinds).as_pointer())
        return b.call(pointer, values)

    def run_calls(self):
        """run_calls(fns, stream, handles, counts, packed, threads, calls, bound, sources, bound_n,
        pointers): 0, or -(1 + j) when setting binding j failed, or (call + 1) * 1000 + status."""
        fn, b = self.signature("run_calls")
        fns, stream, handles, counts, packed, threads, calls, bound, sources, bound_n, pointers = fn.args

        def bind(b, j):
            pointer = self.load(b, pointers, self.load(b, sources, j))
            status = self.c_call(b, fns, SET_DATA, [self.load(b, bound, j), pointer])
            failed, ok = fn.append_basic_block("bind_failed"), fn.append_basic_block("bound")
            b.cbranch(b.icmp_signed("!=", status, self.const(0, self.i32)), failed, ok)
            b.position_at_end(failed)
            b.ret(b.sub(self.const(-1), j))
            b.position_at_end(ok)
        loop(b, fn, self.const(0), bound_n, bind)
        current = variable(b, self.i64, self.const(-1))

        def execute(b, i):
            wanted = self.load32(b, threads, i)
            change, run = fn.append_basic_block("set_threads"), fn.append_basic_block("execute")
            b.cbranch(b.icmp_signed("!=", wanted, b.load(current)), change, run)
            b.position_at_end(change)
            b.store(wanted, current)
            self.c_call(b, fns, SET_THREADS, [(b.trunc(wanted, self.i32), "i32")], result=None)
            b.branch(run)
            b.position_at_end(run)
            count = b.trunc(self.load32(b, counts, i), self.i32)
            status = self.c_call(b, fns, EXECUTE, [self.load(b, handles, i), stream, (count, "i32"),
                                                   self.load(b, packed, i)])
            wait, after = fn.append_basic_block("wait"), fn.append_basic_block("after")
            entry_block = b.block
            b.cbranch(b.icmp_signed("==", status, self.const(0, self.i32)), wait, after)
            b.position_at_end(wait)
            waited = self.c_call(b, fns, WAIT, [stream])
            b.branch(after)
            b.position_at_end(after)
            final = b.phi(self.i32)
            final.add_incoming(status, entry_block)
            final.add_incoming(waited, wait)
            failed, ok = fn.append_basic_block("failed"), fn.append_basic_block("ok")
            b.cbranch(b.icmp_signed("!=", final, self.const(0, self.i32)), failed, ok)
            b.position_at_end(failed)
            b.ret(b.add(b.mul(b.add(i, self.const(1)), self.const(1000)), b.sext(final, self.i64)))
            b.position_at_end(ok)
        loop(b, fn, self.const(0), calls, execute)
        b.ret(self.const(0))

    def run_row(self):
        """run_row(fns, stream, row): ``run_calls`` on the arrays a task table row names."""
        fn, b = self.signature("run_row")
        fns, stream, row = fn.args
        b.ret(self._run_from_row(b, fns, stream, row))

    def _run_from_row(self, b, fns, stream, row):
        field = [self.load(b, row, k) for k in range(ROW)]
        return b.call(self.module.get_global("run_calls"),
                      [fns, stream, field[HANDLES], field[COUNTS], field[PACKED], field[THREADS], field[CALLS],
                       field[BOUND], field[SOURCES], field[BOUND_N], field[POINTERS]])

    def _now(self, b, fns, ts):
        """CLOCK_MONOTONIC in nanoseconds, read into ``ts`` (two int64)."""
        self.c_call(b, fns, CLOCK, [(self.const(1, self.i32), "i32"), ts])
        return b.add(b.mul(self.load(b, ts, 0), self.const(1_000_000_000)), self.load(b, ts, 1))

    def acquire(self):
        """acquire(fns, sem, ts, spin_ns, taken): takes ``sem``, trying for ``spin_ns`` nanoseconds
        (yielding between tries), then sleeping; then counts it in ``taken[0]`` (here, where no
        signal handler runs between the two)."""
        fn, b = self.signature("acquire")
        fns, sem, ts, spin_ns, taken = fn.args
        zero = self.const(0, self.i32)
        spin, sleep, count = (fn.append_basic_block(n) for n in ("spin", "sleep", "count"))
        tried = self.c_call(b, fns, TRYWAIT, [sem])
        start_spin = fn.append_basic_block("start_spin")
        has_spin = fn.append_basic_block("has_spin")
        b.cbranch(b.icmp_signed("==", tried, zero), count, has_spin)
        b.position_at_end(has_spin)
        b.cbranch(b.icmp_signed(">", spin_ns, self.const(0)), start_spin, sleep)
        b.position_at_end(start_spin)
        start = self._now(b, fns, ts)
        b.branch(spin)
        b.position_at_end(spin)
        self.c_call(b, fns, YIELD, [])
        got, timed = fn.append_basic_block("got"), fn.append_basic_block("timed")
        b.cbranch(b.icmp_signed("==", self.c_call(b, fns, TRYWAIT, [sem]), zero), got, timed)
        b.position_at_end(got)
        b.branch(count)
        b.position_at_end(timed)
        elapsed = b.sub(self._now(b, fns, ts), start)
        b.cbranch(b.icmp_signed(">=", elapsed, spin_ns), sleep, spin)
        b.position_at_end(sleep)   # sem_wait until it succeeds (a signal interrupts it with EINTR)
        b.cbranch(b.icmp_signed("!=", self.c_call(b, fns, SEMWAIT, [sem]), zero), sleep, count)
        b.position_at_end(count)
        self.store(b, b.add(self.load(b, taken, 0), self.const(1)), taken, 0)
        b.ret_void()

    def post(self):
        """post(fns, sem, posted): counts a task in ``posted[0]``, then posts ``sem`` (here, where no
        signal handler runs between the two: a caller's count is what it posted)."""
        fn, b = self.signature("post")
        fns, sem, posted = fn.args
        self.store(b, b.add(self.load(b, posted, 0), self.const(1)), posted, 0)
        b.ret(self.c_call(b, fns, POST, [sem]))

    def serve(self):
        """serve(fns, stream, task_sem, done_sem, table, ts, spin_ns, taken): runs the tasks posted
        to ``task_sem`` until one's count (``table[0, 0]``) is ``STOP``."""
        fn, b = self.signature("serve")
        fns, stream, task_sem, done_sem, table, ts, spin_ns, taken = fn.args
        acquire = self.module.get_global("acquire")
        top, stop, run = (fn.append_basic_block(n) for n in ("top", "stop", "run"))
        b.branch(top)
        b.position_at_end(top)
        b.call(acquire, [fns, task_sem, ts, spin_ns, taken])
        tasks = self.load(b, table, 0)
        b.cbranch(b.icmp_signed("<", tasks, self.const(0)), stop, run)
        b.position_at_end(stop)
        self.c_call(b, fns, POST, [done_sem])
        b.ret(self.const(0))
        b.position_at_end(run)

        def task(b, e):
            row = b.add(table, b.mul(b.add(e, self.const(1)), self.const(ROW * 8)))
            self.store(b, self._run_from_row(b, fns, stream, row), row, STATUS)
        loop(b, fn, self.const(0), tasks, task)
        self.c_call(b, fns, POST, [done_sem])
        b.branch(top)


def _make() -> dict:
    from llvmlite import ir
    from ._llvm import compile_module
    builder = _Builder(ir)
    builder.run_calls()
    builder.run_row()
    builder.acquire()
    builder.post()
    builder.serve()
    results = {"i64": ctypes.c_int64, "i32": ctypes.c_int32, None: None}
    # not optimised: the loops wait on C calls, and the passes would double the compile's time
    return compile_module(builder.module, {
        name: (results[result], [ctypes.c_uint64] * count) for name, (result, count) in SIGNATURES.items()},
        optimise=False)


def functions() -> dict:
    """name -> the compiled function, as a ctypes function (releasing the GIL while it runs), made
    on first use; raises where llvmlite cannot make them."""
    if not _made:
        with _lock:
            if not _made:
                _made.update(_make())
    return _made
