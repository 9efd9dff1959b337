"""A oneDNN program run in lanes: the batch split into one part per thread of the budget, each
part run by a program built for its size on a thread of its own, every primitive on one OpenMP
thread.

Run whole, a program's primitives each open an OpenMP parallel region, and each region wakes
workers that sleep between kernels (polyeng's pools never spin, ``engine/threads.py``): tens of
microseconds per primitive in a virtual machine, so that most primitives ran faster on one
thread (``engine/thread_trials.py``) and a CNN used one core. In lanes the calling thread runs
the first lane and hands the others, as compiled loops and their arrays' addresses, to lane
threads that wait in compiled code without the GIL (``_lane_worker.py``): one hand-over per
run, of a few microseconds while the lane thread is still trying for work. Where that worker
is not available (numba or POSIX semaphores wanting), lanes run on Python threads woken by a
queue.

Each program's first calls run alternately whole and in lanes (the trials of
``engine/thread_trials.py``, lanes in the place of the budget), and it keeps the faster; the
trials run again after 64, 256, 1,024 and then every 4,096 calls.

A program runs in lanes when its inputs have the batch (their first dimension, of at least 2)
first, or whole rows of each image there (a transformer's (batch x sequence, features)), or
are broadcast along it (a first dim of 1, read whole by every lane, by add, mul and a softmax's
mask only); when every value it makes has the batch's images, or their rows, first, and no step
reads across them (a concat, softmax or layer norm along the batch, a permutation moving it, a
product of 2-D values, a view of some images' rows, a constant whose images differ: one the same
in every image, a ViT's class token expanded to the batch, is cut to each lane's images); when
the budget (``threads_now``: less while other processes keep cores busy) is at least 2; and when
a program builds for each part. The results are written into the parts of one array per output,
and are what the whole program gives, but for a convolution oneDNN computes in another order at
another batch (a few units in the last place).
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
from time import perf_counter

import numpy as np

from ...engine.call import Prepared
from ...engine.thread_trials import Trials
from ...engine.threads import available_cores, get_num_threads, threads_now
from . import _lane_worker, _native
from ._lib import OneDNNError
from .segment import Step, Unsupported

# per program and lane count: whole, or in lanes. The lanes' first calls are not timed: on a
# 2-core virtual machine the bundled encoder's two lanes ran at one thread's speed (5.6-6.1 ms)
# for their first 8 to 13 calls, then at 2.9-3.1 ms, as the system came to run the lane's worker
# thread on the other core; with one untimed call the trials kept the one-thread loop in 3 of 4
# processes
LANE_WARMUP = 20
trials = Trials(warmup=LANE_WARMUP)
_MISSING = object()


class _Done:
    """A lane's end on a Python thread: ``result`` ((True, value) or (False, exception)) and
    ``finished`` set, then ``lock`` (taken here) released. ``wait`` returns once ``finished``;
    a wait cut short by a signal's exception may be called again: it reads the flag first, and
    takes no lock that an exception could leave held (a ``threading.Event`` may)."""
    __slots__ = ("lock", "result", "finished")

    def __init__(self):
        self.lock = threading.Lock()
        self.lock.acquire()
        self.result = (False, None)
        self.finished = False

    def end(self, result) -> None:
        self.result = result
        self.finished = True
        self.lock.release()

    def wait(self) -> None:
        while not self.finished:
            self.lock.acquire(timeout=0.05)


class _Worker:
    """A Python thread that runs the lanes given to it, one after another (where the compiled
    lane worker of ``_lane_worker.py`` is not available)."""

    def __init__(self):
        self.tasks = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="polyeng-onednn-lane", daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            fn, args, done = self.tasks.get()
            try:
                result = (True, fn(*args))
            except BaseException as exc:   # handed to the caller, which raises it
                result = (False, exc)
            done.end(result)


_workers: list = []
_workers_lock = threading.Lock()
_closing = []   # not empty once the interpreter exits: no more lanes (daemon threads may still call)


@atexit.register
def _close():
    _closing.append(True)


def _lane_workers(count: int) -> list:
    with _workers_lock:
        while len(_workers) < count:
            _workers.append(_Worker())
        return _workers[:count]


def _after_fork_in_child():
    global _workers_lock
    _workers_lock = threading.Lock()
    _workers.clear()   # the child has only the thread that forked
    _lane_worker.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def lane_steps(steps, batch: int, size: int, constants=None) -> list:
    """``steps`` (of a program for a batch of ``batch``) for a batch of ``size``: the first dim of
    every value and a convolution's geometry's batch, the rest as it is (every op a program holds
    computes each image from that image alone). A step that reads a constant with a first dim of
    the batch is turned down unless every image of it is the same (``lane_constants`` then cuts it
    to the lane's images)."""
    out = []
    for s in steps:
        rows, rest = divmod(s.shape[0], batch) if s.shape else (0, 1)   # rows of each image
        geometry = s.prepared.__dict__.get("geometry") if s.prepared is not None else None
        if not rows or rest or _mixes_the_batch(s) or (rows != 1 and geometry is not None):
            raise Unsupported(f"{s.op} makes a value whose first dim is not the batch (or rows of it)")
        if batch > 1 and any(_batch_like(s, (constants or {}).get(name)) for name in _data_reads(s)):
            raise Unsupported(f"{s.op} reads a constant of the batch's first dim")
        if s.prepared is None:   # a view (``segment_plain.py``): of the same bytes at any batch
            prepared = None
        else:
            prepared = Prepared.__new__(Prepared)   # a copy with this size (no fact computed for it)
            prepared.__dict__.update(s.prepared.__dict__)
            prepared._later = dict(s.prepared.__dict__.get("_later", {}))   # its own facts still to compute
            prepared.shape = (rows * size,) + tuple(s.prepared.shape[1:])
            if geometry is not None and hasattr(geometry, "batch"):
                prepared.geometry = geometry._replace(batch=size)
        out.append(Step(s.op, s.reads, s.attrs, s.out, (rows * size,) + tuple(s.shape[1:]), prepared, s.dtype))
    return out


def lane_constants(steps, batch: int, size: int, constants):
    """``constants`` for a lane of ``size`` images of a program's ``steps`` for ``batch``: each one
    read as data with the batch's images first (the same in every image: ``lane_steps`` turns down
    the others) cut to the lane's images; the rest as they are."""
    if not constants:
        return constants
    cut, other = {}, set()
    for s in steps:
        data = set(_data_reads(s))
        other.update(n for n in _reads(s) if n in constants and n not in data)
        for name in data:
            c = constants.get(name)
            if isinstance(c, np.ndarray) and s.shape and c.ndim == len(s.shape) and c.shape[0] != 1 \
                    and c.shape[0] == s.shape[0]:
                cut[name] = c[:s.shape[0] // batch * size]
    return {**constants, **{name: c for name, c in cut.items() if name not in other}}


# the arguments a step reads as data, whose first dim a lane would slice (not weights nor biases)
DATA = frozenset({"x", "a", "b", "tensors", "mask", "residual"})


def _reads(s, args=None):
    """The values ``s`` reads (as the arguments ``args`` only, where given)."""
    for arg, value in s.reads.items():
        if args is None or arg in args:
            yield from (value if isinstance(value, list) else [value])


def _data_reads(s):
    """The values ``s`` reads as data."""
    return _reads(s, DATA)


def _batch_like(s, c) -> bool:
    """Whether constant ``c``, read by ``s`` as data, may have the batch's images first: any
    view's input, or an operand of the result's rank not broadcast along the batch (a
    convolution's weight, a linear's, a broadcast operand of fewer dims are not)."""
    if not isinstance(c, np.ndarray):
        return False
    if s.op in ("view", "reshape"):   # a lane would read its bytes from the start, in the lane's shape
        return True
    if c.ndim != len(s.shape) or c.shape[0] == 1:   # broadcast along the batch
        return False
    # the same for every image (a ViT's class token expanded to the batch): what a lane reads from
    # the start is its own images' part
    if c.strides[0] == 0:
        return False
    first = np.broadcast_to(c[:1], c.shape)
    # equal values and signs: -0.0 == 0.0, and a lane reading image 0's zero would lose the sign
    return not (np.array_equal(c, first) and np.array_equal(np.signbit(c), np.signbit(first)))


def _mixes_the_batch(s) -> bool:
    """Whether a step's result may read several images of its batch (the first dim): a concat, a
    softmax or a product along it, a permutation that moves it, a layer norm over it."""
    rank = len(s.shape)
    if s.op in ("concat", "softmax", "fused_softmax") and int(s.attrs.get("axis", 0)) % rank == 0:
        return True
    if s.op == "permute_contiguous":
        return int(s.attrs["dims"][0]) % rank != 0
    if s.op == "layer_norm":
        return len(s.attrs["normalized_shape"]) >= rank
    if s.op == "view":   # a part of its input: a lane's where it is a part of each image of it
        strides, offset, item = s.attrs["strides"], s.attrs["offset"], s.attrs.get("item")
        if strides is None:   # a reshape (all of its input); a contiguous part is some images' rows
            return not (s.attrs.get("whole") and offset == 0)
        # a part of each row (of the input's rows, as many): a row's items
        return item is None or strides[0] != item or not 0 <= offset < item or s.shape[0] != s.attrs.get("rows")
    return s.op == "matmul" and rank <= 2


def _groups(lanes, threads: int) -> list:
    """``lanes`` over ``threads`` threads: each lane, largest first, to the thread with the fewest
    images so far (sizes 2, 1, 1, 1 on three threads: 2, 1 + 1, 1)."""
    def images(lane):
        return 1 if lane[0] is None else lane[1] - lane[0]   # the whole program's lane: one
    groups, loads = [[] for _ in range(threads)], [0] * threads
    for lane in sorted(lanes, key=images, reverse=True):
        least = loads.index(min(loads))
        groups[least].append(lane)
        loads[least] += images(lane)
    return groups


class Lanes:
    """A program (``whole``) that may also run in lanes; ``build(size)`` makes the program of a
    lane of ``size`` images. Reads like ``whole`` otherwise.

    The lanes are built once, one per thread of the configured budget (at most the usable cores
    and the batch); while the machine's load leaves fewer threads, several lanes run one after
    another on each."""

    def __init__(self, whole, build, batch: int, rows=None):
        """``rows``: per input, then per output, the rows of its first dim per image (0: an input
        read whole by every lane, one broadcast along the batch); 1 each when not given."""
        self.whole, self._build, self.batch = whole, build, batch
        count = len(whole.inputs) + len(whole.outputs)
        self.rows = list(rows) if rows is not None else [1] * count
        self._lanes: dict = {}   # lane count -> [(start, stop, program)], or None where one does not build
        self._lock = threading.RLock()   # reentrant: see Program.lock (``segment.py``)
        self._building = threading.Lock()
        self._one = [(None, None, whole)]   # the whole program as one lane
        self.outputs_as = [(whole.final_shape.get(name, whole.shape[name]), whole.dtype[name])
                           for name in whole.outputs]

    def __getattr__(self, name):
        return getattr(self.whole, name)

    def run(self, arrays):
        if _closing:
            return self.whole.run(arrays)
        budget = threads_now()
        # lanes for the configured budget (not the load-dependent one: they are built once), at
        # most one per usable core and image
        k = 1 if budget < 2 else max(1, min(get_num_threads(), available_cores(), self.batch))
        lanes = self._lanes.get(k, _MISSING)
        if lanes is _MISSING:
            lanes = self._make(k)
        if lanes is None:
            return self.whole.run(arrays)
        one = self._one
        if budget < 2:   # one thread: the whole program in one compiled loop
            return self._in_lanes(one, arrays, 1)
        if len(lanes) > 1:   # the lanes, or the whole program in the compiled loop on one thread
            key = (id(self), budget)
            choice, timed = trials.choose(key, budget)
            if choice > 1 or timed:
                began = perf_counter() if timed else 0.0
                results = self._in_lanes(lanes, arrays, min(budget, len(lanes))) if choice > 1 else \
                    self._in_lanes(one, arrays, 1)
                if timed and results is not None:
                    trials.record(key, budget, choice, perf_counter() - began)
                return results
        # no lanes (or slower): the compiled loop on one thread, or the whole program with each
        # primitive on the budget, whichever the first calls ran faster
        key = (id(self), budget, "whole")
        choice, timed = trials.choose(key, budget)
        began = perf_counter() if timed else 0.0
        results = self._in_lanes(one, arrays, 1) if choice == 1 else self.whole.run(arrays)
        if timed and results is not None:
            trials.record(key, budget, choice, perf_counter() - began)
        return results

    def _make(self, k: int):
        if not self._building.acquire(blocking=False):
            return None   # another thread builds them (or did when this process forked): whole, this time
        try:
            if k in self._lanes:
                return self._lanes[k]
            if k == 1:   # one lane: the whole program, on whole arrays (an input may not have the batch first)
                self._lanes[k] = self._one
                return self._lanes[k]
            sizes = [self.batch // k + (i < self.batch % k) for i in range(k)]
            lanes, start = [], 0
            try:
                for size in sizes:
                    lanes.append((start, start + size, self._build(size)))
                    start += size
            except (Unsupported, OneDNNError):   # a step the batch does not split, or oneDNN turned one down
                lanes = self._one   # at this size: one lane, the whole program
            self._lanes[k] = lanes
            return lanes
        finally:
            self._building.release()

    def _in_lanes(self, lanes, arrays, threads: int):
        if not self._lock.acquire(blocking=False):
            return None   # another thread runs these lanes: the nodes run
        try:
            if not self.whole.bounded(arrays):
                return None
            outs = [np.empty(shape, dtype) for shape, dtype in self.outputs_as]
            if len(lanes) == 1:   # one lane (the whole program): on this thread
                return outs if self._run_group(lanes, arrays, outs) else None
            groups = _groups(lanes, threads)
            if len(groups) > 1 and _lane_worker.available():
                results = self._on_workers(groups, arrays, outs)
                if results is not _MISSING:
                    return results
            return self._on_threads(groups, arrays, outs)
        finally:
            self._lock.release()

    def _part(self, start, stop, arrays, outs):
        """A lane's (inputs, outputs): the parts of ``arrays`` and ``outs`` of images start:stop."""
        if start is None:
            return list(arrays), outs
        n = len(arrays)
        return ([a[start * m:stop * m] if m else a for a, m in zip(arrays, self.rows)],
                [o[start * m:stop * m] for o, m in zip(outs, self.rows[n:])])

    def _on_workers(self, groups, arrays, outs):
        """The lanes of ``groups[0]`` on this thread, the others' on ``_lane_worker`` threads:
        the outputs, None where a run may not stand, or _MISSING where a worker or a lane's
        program is busy (another thread runs them)."""
        workers = _lane_worker.workers(len(groups) - 1)
        taken = []   # locks held: the workers', then the programs' run by them
        try:
            for worker in workers:
                if not worker.lock.acquire(blocking=False):
                    return _MISSING
                taken.append(worker.lock)
                if worker.failed is not None:   # its thread ended (replaced on the next run)
                    return _MISSING
            tasks = []
            for group in groups[1:]:
                runs = []
                for start, stop, program in group:
                    if not program.lock.acquire(blocking=False):
                        return _MISSING
                    taken.append(program.lock)
                    part = self._part(start, stop, arrays, outs)
                    runs.append((program, part[0], program.native_task(*part, 1)))
                tasks.append(runs)
            try:
                for worker, runs in zip(workers, tasks):
                    worker.post([task for _, _, task in runs])
                ok = self._run_group(groups[0], arrays, outs)
            finally:   # every lane posted has finished before the call returns or raises
                _lane_worker.wait_all(workers)
            for runs, worker in zip(tasks, workers):
                for (program, inputs, _), code in zip(runs, worker.statuses()):
                    _native.raise_for(code)
                    ok = program.checks_pass(inputs) and ok
            return outs if ok else None
        finally:
            for lock in reversed(taken):
                lock.release()

    def _run_group(self, group, arrays, outs) -> bool:
        ok = True
        for start, stop, program in group:
            ok = program.run(*self._part(start, stop, arrays, outs), 1, True) is not None and ok
        return ok

    def _on_threads(self, groups, arrays, outs):
        """The lanes of ``groups[0]`` on this thread, the others' on Python threads."""
        pending, ok = [], False
        try:
            for group, worker in zip(groups[1:], _lane_workers(len(groups) - 1)):
                done = _Done()
                pending.append(done)
                worker.tasks.put((self._run_group, (group, arrays, outs), done))
            ok = self._run_group(groups[0], arrays, outs)
        finally:   # every lane has finished before the call returns or raises
            failure = interrupted = None
            for done in pending:
                while True:
                    try:
                        done.wait()   # again after a signal: returns once the lane has ended
                        break
                    except KeyboardInterrupt as exc:   # wait on: the lane writes into outs
                        interrupted = exc
                good, value = done.result
                if not good:
                    failure = failure or value
                ok = ok and good and bool(value)
            if interrupted is not None:
                raise interrupted
        if failure is not None:
            raise failure
        return outs if ok else None
