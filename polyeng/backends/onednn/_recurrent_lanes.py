"""lstm and gru on ONEDNN with the batch split into lanes, each lane's layers on one thread.

oneDNN's RNN primitives step through time and, on more than one thread, split each step's work
between them: every step is a parallel region of its own, and the workers wait between steps
(polyeng's OpenMP workers sleep at once, ``engine/threads.py``). A language model's LSTM (64
steps, batch 8, 64 -> 128) took 0.85-2.7 ms on two threads and 0.84-0.91 ms on one. The batch's
sequences are independent, so here each lane runs every layer of its part of the batch on one
thread, without a step's barrier: the first lane on the calling thread, the others on the
compiled lane workers of ``_lane_worker.py`` (the programs' lanes run there too).

Whether a call runs in lanes or whole (the primitive on the thread budget, or on one thread,
as ``Primitive.run``'s own trials choose) is decided by the first calls of each primitive and
budget, timed alternately (``engine/thread_trials.py``), and again from time to time.

Each lane's sequences are computed by a primitive made for the lane's batch: the results are
the whole primitive's up to the order of its sums (oneDNN may block a smaller batch otherwise).
f32 data computed in f32 only: a bf16 fp math mode runs the whole primitive where the CPU computes
bf16 (where it does not, the mode computes f32 and its calls run as any f32 call).
"""
from __future__ import annotations

import dataclasses
import threading
from time import perf_counter

import numpy as np

from . import _constants as C
from . import _lane_worker, _native
from .._address import address
from ...engine.thread_trials import Trials
from ...engine.threads import available_cores

trials = Trials()   # per whole primitive and budget: in lanes, or whole
enabled = True      # False: every call runs whole (for measurements of either way)


def lane_count(shape, budget: int) -> int:
    """How many lanes a call of ``shape`` may take on ``budget`` threads: 0 where it runs whole."""
    if not enabled or budget < 2 or shape.unbatched or shape.batch < 2 or shape.input_size == 0:
        return 0
    if not _lane_worker.available():
        return 0
    return min(budget, shape.batch, available_cores())


def run(kind, shape, params, seq, finals, lanes: int, budget: int, key, whole):
    """y of the call (f32, in the call's layout), run in ``lanes`` lanes or by ``whole()``,
    whichever the trials of ``key`` (the whole primitive) keep; ``finals`` (the final states,
    f32 (layers * directions, batch, hidden) each) are written as ``whole`` writes them."""
    n, timed = trials.choose((key, budget), budget)
    began = perf_counter() if timed else 0.0
    y = _in_lanes(kind, shape, params, seq, finals, lanes) if n > 1 else None
    ran = n if y is not None else 1
    if y is None:
        y = whole()
    if timed:
        trials.record((key, budget), budget, ran, perf_counter() - began)
    return y


def _parts(batch: int, lanes: int) -> list:
    sizes = [batch // lanes + (i < batch % lanes) for i in range(lanes)]
    starts = [sum(sizes[:i]) for i in range(lanes + 1)]
    return list(zip(starts[:-1], starts[1:]))


MAX_PLANS = 64      # call shapes whose lanes are kept (their primitives and loops), the oldest dropped
_plans: dict = {}
_plans_lock = threading.Lock()


def _plan(kind, shape, lanes: int) -> list:
    """Per lane: (first row, end row, its layers, its compiled loop, the loop's lock); made once
    per call shape and lane count (it holds the lanes' primitives). Each lane has a loop of its
    own: the calling thread and a worker never run one loop (its memory objects) at once."""
    key = (kind, shape, lanes)
    plan = _plans.get(key)
    if plan is None:
        from ._recurrent import _layer_prim
        plan = []
        for start, stop in _parts(shape.batch, lanes):
            part = dataclasses.replace(shape, batch=stop - start)
            layers = [_layer_prim(kind, part, index, "f32") for index in range(shape.num_layers)]
            plan.append((start, stop, layers) + _native_of(kind, layers))
        with _plans_lock:
            if len(_plans) >= MAX_PLANS:
                _plans.pop(next(iter(_plans)))
            _plans[key] = plan
    return plan


def _in_lanes(kind, shape, params, seq, finals, lanes: int):
    """y, computed in lanes, or None where a lane's loop or a worker is busy (another thread runs
    them): the caller runs the call whole."""
    from ._recurrent import bias_of, weights_of
    dirs, hidden = shape.num_directions, shape.hidden_size
    time_major = not shape.batch_first
    plan = _plan(kind, shape, lanes)
    biases = [bias_of(kind, params[shape.param_index(index, 0):shape.param_index(index, 0) + dirs], hidden)
              for index in range(shape.num_layers)]
    y = np.empty(shape.output_shape, np.float32)
    runs, held = [], []
    try:
        workers = _lane_worker.workers(lanes - 1)
        for worker in workers:
            if not worker.lock.acquire(blocking=False):
                return None
            held.append(worker.lock)
            if worker.failed is not None:
                return None
        for start, stop, layers, native, lock in plan:
            if not lock.acquire(blocking=False):
                return None
            held.append(lock)
            x = np.ascontiguousarray(seq[:, start:stop] if time_major else seq[start:stop])
            arrays, outs = [], []
            for index, layer in enumerate(layers):
                first = shape.param_index(index, 0)
                entries = params[first:first + dirs]
                out = np.empty(x.shape[:-1] + (dirs * hidden,), np.float32)
                states = [np.ascontiguousarray(s[first:first + dirs, start:stop]) for s in finals]
                ends = [np.empty_like(s) for s in states]
                arrays += [x, states[0], weights_of(layer, kind, 0, [e[0] for e in entries], hidden),
                           weights_of(layer, kind, 1, [e[1] for e in entries], hidden), biases[index], out, ends[0]]
                if kind == "lstm":
                    arrays += [states[1], ends[1]]
                outs.append((first, ends))
                x = out
            runs.append((native, arrays, start, stop, outs, x))
        try:
            for worker, (native, arrays, *_) in zip(workers, runs[1:]):
                worker.post([(native, np.array([address(a) for a in arrays], np.uint64), arrays)])
            runs[0][0].run(runs[0][1])
        finally:   # every lane posted has ended before the call returns or raises
            _lane_worker.wait_all(workers)
        for worker in workers:
            for status in worker.statuses():
                _native.raise_for(status)
    finally:
        for lock in reversed(held):
            lock.release()
    for _, _, start, stop, outs, last in runs:   # last: the last layer's y of the lane
        if time_major:
            y[:, start:stop] = last
        else:
            y[start:stop] = last
        for first, ends in outs:
            for final, end in zip(finals, ends):
                final[first:first + dirs, start:stop] = end
    return y


def _native_of(kind, layers):
    """(the compiled loop of one lane's layers on one thread, its lock). Its arrays, per layer: x,
    h0, the two weights, the bias, y, h_n (lstm: c0, c_n)."""
    args = (C.ARG_SRC_LAYER, C.ARG_SRC_ITER, C.ARG_WEIGHTS_LAYER, C.ARG_WEIGHTS_ITER, C.ARG_BIAS, C.ARG_DST_LAYER,
            C.ARG_DST_ITER) + ((C.ARG_SRC_ITER_C, C.ARG_DST_ITER_C) if kind == "lstm" else ())
    calls = [(layer.prim, {arg: ("in", index * len(args) + k) for k, arg in enumerate(args)}, 1)
             for index, layer in enumerate(layers)]
    # reentrant: a lock that a signal's exception left held (raised as acquire returned, before
    # the try that releases it) keeps other threads off the loop, not this one
    return _native.Native(calls), threading.RLock()
