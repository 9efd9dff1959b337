"""A oneDNN program's executions in one compiled loop: no Python between its primitives.

Each primitive of a program run from Python costs about 5 us of the interpreter (its arguments
bound, its thread count set, the call through ctypes) and, when another thread waits for the
GIL, a hand-over of the GIL, which in a virtual machine can take tens of microseconds. ``Native``
holds a program's executions as arrays (primitive handles, packed arguments, thread counts) and
runs them with one compiled function (``_native_loops.run_calls``, built with llvmlite) that
calls oneDNN's C functions at their addresses, without the GIL, once per run: the data pointers
of the run's inputs and outputs are set first, then every primitive executes and its stream is
waited on.

The memory objects are the program's own (made here, destroyed with it), so no other caller of a
primitive sees its data pointers change. ``available()`` is False where llvmlite cannot compile
the loop; programs then run from Python.
"""
from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from . import _constants as C
from . import _native_loops as L
from .._address import address, c_function
from ._lib import ExecArg, OneDNNError, _state, engine, lib, new, note_threads, stream
from ._primitive import aligned_empty

_state_lock = threading.Lock()
_loop: dict = {}   # "fns": the C functions' addresses ("at": that array's), "run": the compiled loop; "error": why not


def _address_of(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def _compile():
    return L.functions()["run_row"]


def _c_library_addresses() -> list:
    """The addresses of the C library's functions that ``_native_loops.FUNCTIONS`` names (0 for
    one it lacks: then lanes run on Python threads, ``_lane_worker.py``)."""
    return [c_function(name) for name in ("sem_trywait", "sem_wait", "sem_post", "sched_yield", "clock_gettime")]


def _functions():
    """(the C functions' addresses as ``_native_loops.FUNCTIONS`` orders them, the compiled
    loop), or None where the loop cannot be made."""
    if "run" in _loop:
        return _loop["fns"], _loop["run"]
    if "error" in _loop:
        return None
    with _state_lock:
        if "run" not in _loop and "error" not in _loop:
            try:
                l = lib()
                omp = _state.get("omp")
                if omp is None:
                    raise RuntimeError("libgomp's omp_set_num_threads was not found")
                run_calls = _compile()
                fns = np.array([_address_of(l.dnnl_primitive_execute), _address_of(l.dnnl_stream_wait),
                                _address_of(l.dnnl_memory_set_data_handle), _address_of(omp[0])]
                               + _c_library_addresses(), np.uint64)
                # compiled now, so that a failure is found here (a row of no calls)
                nothing = np.zeros(L.ROW, np.int64)
                if run_calls(address(fns), 0, address(nothing)) != 0:
                    raise RuntimeError("the compiled loop failed on no calls")
                _loop["fns"], _loop["at"], _loop["run"] = fns, address(fns), run_calls
            except Exception as exc:   # llvmlite missing or failing: programs run from Python
                _loop["error"] = f"{type(exc).__name__}: {exc}"
    return _functions() if "run" in _loop else None


def available() -> bool:
    return _functions() is not None


def _destroy(memories):
    try:
        l = lib()
        for memory in memories:
            l.dnnl_memory_destroy(memory)
    except Exception:
        pass


class Native:
    """The executions ``calls`` (``(primitive, {arg: ("buf", array) | ("in", index)}, threads)``;
    an index counts the run's inputs, then its outputs) as one compiled loop. Each primitive runs
    as made for its thread count where oneDNN made it so (``Primitive._variant``)."""

    def __init__(self, calls):
        l = lib()
        memories, packs, handles, counts, threads = [], [], [], [], []
        # destroyed with this object, also when a creation below fails; not at exit, where a
        # daemon thread may still run the program
        self._finalizer = weakref.finalize(self, _destroy, memories)
        self._finalizer.atexit = False
        bound, sources = [], []
        self._keep = []
        scratch_bytes = 0
        chosen = []
        for prim, template, n in calls:
            handle, pd, scratch = prim.handle, prim.pd, prim.scratch
            if n != prim.threads:
                variant = prim._variant(n, template)   # made once per count, None where it differs
                if variant is not None:
                    handle, pd, scratch = variant
            chosen.append((prim, template, n, handle, pd, scratch))
            scratch_bytes = max(scratch_bytes, scratch)
        self.scratch = aligned_empty(max(scratch_bytes, 64))
        for prim, template, n, handle, pd, scratch in chosen:
            args = list(template.items()) + ([(C.ARG_SCRATCHPAD, ("buf", self.scratch))] if scratch else [])
            pack = (ExecArg * len(args))()
            for k, (arg, (kind, value)) in enumerate(args):
                memory = new("dnnl_memory_create", l.dnnl_primitive_desc_query_md(pd, C.QUERY_EXEC_ARG_MD, arg),
                             engine(), None)
                memories.append(memory)
                pack[k].arg, pack[k].memory = arg, memory
                if kind == "buf":
                    l.dnnl_memory_set_data_handle(memory, address(value))
                    self._keep.append(value)
                else:
                    bound.append(memory)
                    sources.append(value)
            packs.append(pack)
            handles.append(handle)
            counts.append(len(args))
            threads.append(n)
        self._keep.append(calls)   # the primitives (their handles) live as long as this
        self._packs = packs
        self.handles = np.array(handles, np.uint64)
        self.counts = np.array(counts, np.int32)
        self.packed = np.array([ctypes.addressof(p) for p in packs], np.uint64)
        self.threads = np.array(threads, np.int32)
        self.bound = np.array(bound, np.uint64)
        self.sources = np.array(sources, np.int64)
        # a task table row of these arrays (``_native_loops.py``): a run's own sets its pointers
        self._row = np.zeros(L.ROW, np.int64)
        self._row[L.HANDLES], self._row[L.CALLS] = address(self.handles), self.handles.size
        self._row[L.COUNTS], self._row[L.PACKED] = address(self.counts), address(self.packed)
        self._row[L.THREADS], self._row[L.BOUND] = address(self.threads), address(self.bound)
        self._row[L.BOUND_N], self._row[L.SOURCES] = self.bound.size, address(self.sources)
        self._row_at = address(self._row)

    def run(self, arrays) -> None:
        """Executes every call on ``arrays`` (the run's inputs, then its outputs: C-contiguous)."""
        pointers = np.array([address(a) for a in arrays], np.uint64)
        self._row[L.POINTERS], self._row[L.POINTERS_N] = address(pointers), pointers.size
        note_threads(None)   # the loop sets this thread's OpenMP count: unknown until it returns
        status = _loop["run"](_loop["at"], stream(), self._row_at)   # made before any Native is
        note_threads(int(self.threads[-1]) if status == 0 and self.threads.size else None)
        raise_for(status)

    def row(self, pointers, out) -> None:
        """Writes this loop's run on ``pointers`` (the addresses of its arrays, as ``run`` takes
        them) into ``out``, a task table row of ``_native_loops.py``."""
        out[:] = self._row
        out[L.POINTERS], out[L.POINTERS_N], out[L.STATUS] = address(pointers), pointers.size, 0


def raise_for(status: int) -> None:
    """OneDNNError for a compiled loop's nonzero status (``_native_loops.run_calls``)."""
    if status < 0:
        raise OneDNNError("dnnl_memory_set_data_handle", 1)
    if status:
        raise OneDNNError("primitive execution", status % 1000)
