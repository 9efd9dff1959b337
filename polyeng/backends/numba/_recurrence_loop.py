"""lstm's and gru's time loop as one compiled call, split over threads by lanes or by time step.

(Written for lstm below; gru with ``reset_after`` has three gates per unit, r, z and n, and keeps
a part's ``x_t @ w_ih.T`` and ``h @ w_hh.T`` apart, since r scales only the second's n part.)

Run from Python, a layer's step is a BLAS call and a JIT kernel: at 64 steps of batch 8 and 128
hidden units, the layer took 1.43 ms, the steps' products (8x128 by 128x512) on one core. Here a
layer is one compiled call, by tasks (``_parallel``; 0.76-0.80 ms on two threads, 1.35 ms on one)
or by lanes (``_by_lanes``, below):

- A step is cut in ``parts`` per direction, each a range of hidden units: its product
  ``x_t @ w_ih.T + h @ w_hh.T`` restricted to the four gates of those units (two ``cblas_?gemm``
  calls at numpy's OpenBLAS's address, ``_native_calls.gemm``; f32 on a CPU without AVX-512:
  ``_small_gemm``'s packed one, ``gemm_for``), then the biases, the gates' activations and the
  updates of ``c``, ``h`` and ``y`` for those units. The weights and biases are permuted once so
  that a part's gate columns are contiguous, and for ``_small_gemm`` packed in blocks of 16 columns
  (kept for constant weights, ``backends/_constant.py``).
- Tasks (step, direction, part) are taken in order from an atomic counter by each of numba's
  threads. A task waits until every task of the step before is done (a second counter); ``h``
  has two buffers, read at step t and written for step t + 1. A thread that finds the tasks
  taken ends, so one thread alone runs them all in order and nothing waits on a thread that
  never came (a one-thread launch, or numba running the loop's chunks one after another).
- A waiting thread checks the counter 64 times, then yields its core (``sched_yield``) between
  checks, so that a thread that has work runs first. After 256 checks (64 once it has had to) it
  runs the earliest task not yet done itself: a thread that lost its core to another process or to another pool's
  spinning thread (OpenBLAS's spin about 0.1 s after a product of their own) would otherwise hold
  every step up for a scheduler time slice (such runs took 22-73 ms instead of 2.5 ms in ``polyeng
  bench``). A task reads only what the steps before it left, so it can run twice: each thread
  computes it into scratch arrays, and the first to claim it (a compare-and-swap of its flag)
  writes ``c``, ``h`` and ``y`` and counts it done; the other throws its copy away.
- The input's product is made in the steps too, not as one BLAS call for every step before the
  loop: that call ran on OpenBLAS's threads, whose spinning after it kept numba's second thread
  off the core it needed (at 64x8x128, two threads ran the loop no faster than one). OpenBLAS
  stays on the calling thread while the loop runs (``_blas_threads.one_thread``).

**By lanes.** The rows of a batch do not depend on each other, nor do the two directions. Where
that gives every core a lane of ``LANE_ROWS`` rows or more, or of a whole direction
(``chunks_for``), the layer is cut in *lanes* instead, one direction for one share of the batch
rows each, and one call of ``_by_lanes`` runs them: numba's threads take lanes from an atomic
counter, and a lane runs every step of its rows, part after part (the same parts as a task
above, for its rows), with no other thread to wait for. A thread that starts late, or never,
holds up only the lanes it took. With fewer rows per lane, each lane's products would read all
the weights at every step, so a unidirectional batch of fewer rows keeps the tasks above, as
does a layer with fewer lanes than cores (tasks share each step among every core). Timed against
the tasks as they were before (with the 1-ulp activations) in the same process (blocks of 200
calls, two threads): 64 steps of 64 inputs and 128 hidden units at batch 8 0.81-1.04 ms against
0.93-1.12 ms, bidirectional at batch 1 0.72 ms against 0.86-0.88 ms; 256 inputs and 256 hidden
units at batch 32 12.3 ms against 23.1 ms (lanes of 16 rows).

The parts, tasks and lanes depend on the cores, not on the thread count, and each part's arithmetic
is the same on any thread: results do not depend on how many threads ran. Lanes of a whole
direction make the tasks' very products, so they give the tasks' bits. A lane of a share of the
rows makes them in calls of its rows, and OpenBLAS may sum a row's products in another order in a
call of other rows: its Haswell kernels (run on Zen too) do, by the row's place in the call and the
call's row count, and results then differ from the tasks' in their last bits (8 ulps of 1 at most
in 100 seeds of the tests' cases). On a CPU without AVX-512 the f32 products are
``_small_gemm``'s where a layer's parts are whole blocks of its columns (``gemm_for``), and its
rows get the same bits in a call of any rows: there every lane gives the tasks' bits.
``_worker`` is compiled without reassociation and contraction (``jit(exact=True)``, as ``_lane``
is): with them, LLVM rounded it differently inlined into the parallel kernel than called from its
serial compile (numba's workqueue layer at one thread), by 1 ulp; without them the loop ran as
fast.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np
from numba import prange

from ...engine import dtypes as dt
from ...engine.threads import available_cores
from .._blas_threads import one_thread
from .._constant import Derived
from . import _gemm, _small_gemm
from ._loop_parts import bounds_for, own_products, parts_for
from ._f32_path import _to_f32
from ._mathfn import sigmoid_fast as sigmoid, tanh_fast as tanh
from ._native_calls import atomic_add, atomic_claim, atomic_load, call_int, gemm, gemm_address, yield_address
from ._runtime import inline, jit, launch

SPINS = 64            # checks of the step counter before a waiting thread yields between checks
HELP_AFTER = 256      # checks (most of them after a yield) before it runs a late task itself
TAKEN, DONE = 0, 1    # the counters
LANE_ROWS = 4         # the fewest batch rows of a lane: with fewer, each lane's products read all the weights

_permuted = Derived(limit=64)


def chunks_for(batch: int, directions: int, cores: int) -> int:
    """Into how many shares each direction's batch rows are cut for its lanes: enough for a lane
    per core, each of at least ``LANE_ROWS`` rows (or the whole batch, one share). 0 where that
    gives fewer lanes than cores (one lane, or 2 of 16 cores busy): the layer runs by tasks, which
    share each step among every core."""
    chunks = max(1, min(-(-cores // directions), batch // LANE_ROWS))
    return chunks if directions * chunks >= max(cores, 2) else 0


def gate_order(hidden: int, bounds: np.ndarray, gates: int = 4) -> np.ndarray:
    """Rows of ``w_ih``/``w_hh`` (and places of the biases): every gate of part 0's units (lstm's
    i, f, g, o; gru's r, z, n), then of part 1's, ... (ONNX and PyTorch order each gate over all
    units)."""
    order = [np.arange(gate * hidden + lo, gate * hidden + hi)
             for lo, hi in zip(bounds[:-1], bounds[1:]) for gate in range(gates)]
    return np.concatenate(order) if order else np.zeros(0, np.int64)


def permuted(entries, bounds, dtype, gates: int = 4, packed: bool = False):
    """(w_ih.T of every direction, columns permuted, each direction's flat (D, in*G*H); w_hh.T
    likewise (D, H*G*H); the biases permuted (D*G*H): b_ih + b_hh, except that gru's (``gates ==
    3``) n gate keeps b_in alone; gru's b_hn (D*H, zeros for lstm)): computed once for constant
    weights. ``packed``: each direction's weights laid out by ``_small_gemm.pack`` (blocks of 16
    columns one after another), for its packed function."""
    arrays = [a for e in entries for a in e]

    def make():
        hidden = entries[0][1].shape[1]
        order = gate_order(hidden, bounds, gates)
        width = gates * hidden

        def stacked_t(index):
            parts = [np.asarray(e[index], dtype)[order].T for e in entries]
            laid = [_small_gemm.pack(part) if packed else np.ascontiguousarray(part).reshape(-1) for part in parts]
            return np.stack(laid)
        bias = np.zeros(len(entries) * width, dtype)
        bias_hn = np.zeros(len(entries) * hidden if gates == 3 else 0, dtype)
        for d, (_, _, b_ih, b_hh) in enumerate(entries):
            if b_ih is not None:
                bias[d * width:(d + 1) * width] += np.asarray(b_ih, dtype)[order]
            if b_hh is not None:
                b_hh = np.asarray(b_hh, dtype)
                if gates == 3:   # b_hn is added to w_hn h before r scales it
                    bias_hn[d * hidden:(d + 1) * hidden] = b_hh[2 * hidden:]
                    b_hh = np.concatenate([b_hh[:2 * hidden], np.zeros(hidden, dtype)])
                bias[d * width:(d + 1) * width] += b_hh[order]
        return stacked_t(0), stacked_t(1), bias, bias_hn
    return _permuted.get(arrays, (tuple(bounds), np.dtype(dtype).str, gates, packed), make)


@inline
def cell_update(g_row, c_in, c_out, y_row, units):
    """One batch row's gates (i, f, g, o of ``units`` units each, biases added) and cell state
    ``c_in`` to its new cell state ``c_out`` (may be ``c_in``) and output ``y_row`` (lstm's
    ``_step`` too). The activations are the activation ops' (``_mathfn``'s ``*_fast``, within
    2.5 ulp): 2.5 us for 8 rows of 128 units, against 5.0 us with the 1-ulp forms. Written in
    place into a slice of ``c`` (``c_out`` a slice of ``c``), this loop compiled ten times slower:
    callers pass scratch arrays for ``c_out`` and ``y_row``, or whole rows."""
    for j in range(units):
        i_gate = sigmoid(g_row[j])
        f_gate = sigmoid(g_row[units + j])
        g_gate = tanh(g_row[2 * units + j])
        o_gate = sigmoid(g_row[3 * units + j])
        cell = f_gate * c_in[j] + i_gate * g_gate
        c_out[j] = cell
        y_row[j] = o_gate * tanh(cell)


@inline
def gru_update(gx, gh, b_part, bn_part, h_row, y_row, units):
    """One batch row of a gru step (``reset_after``): ``gx`` and ``gh`` the r, z and n columns of
    ``x_t @ w_ih.T`` and ``h @ w_hh.T``, ``b_part`` the summed biases (b_in alone for n),
    ``bn_part`` b_hn; ``h_row`` the state before, ``y_row`` the new one."""
    for j in range(units):
        r_gate = sigmoid(gx[j] + gh[j] + b_part[j])
        z_gate = sigmoid(gx[units + j] + gh[units + j] + b_part[units + j])
        n_gate = tanh(gx[2 * units + j] + b_part[2 * units + j] + r_gate * (gh[2 * units + j] + bn_part[j]))
        y_row[j] = n_gate + z_gate * (h_row[j] - n_gate)


@inline
def weights_from(packed, w_ih, w_hh, d, first, inputs, hidden):
    """Where direction ``d``'s weights for the gate columns from ``first`` start, for ``x_t`` and
    ``h``: column ``first`` of row 0 as ``permuted`` lays them out, or (``packed``) its block of 16."""
    if packed:
        return w_hh[d, first * hidden:], w_ih[d, first * inputs:]
    return w_hh[d, first:], w_ih[d, first:]


@jit(exact=True)
def _task(task, blas, wide, packed, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len,
          time_stride, batch_stride, gates_scratch, x_scratch, c_scratch, y_scratch):
    """Compute ``task`` into the scratch arrays, then, if no other thread has, claim it, write its
    ``h``, ``y`` (and lstm's ``c``) and count it done. Whichever thread claims first writes: a task
    reads only what the steps before it left, so a thread that computes it late throws its copy
    away. lstm has 4 gates (``c`` its cell state), gru 3 (``c`` unused)."""
    directions, batch, hidden = h.shape[1], h.shape[2], h.shape[3]
    width = bias.size // directions
    gates_per_unit = width // hidden
    inputs = x.shape[1]
    parts = bounds.size - 1
    per_step = directions * parts
    step = task // per_step
    rest = task - step * per_step
    d = rest // parts
    p = rest - d * parts
    lo, hi = bounds[p], bounds[p + 1]
    units = hi - lo
    cols = gates_per_unit * units
    first = gates_per_unit * lo
    t = step if d == 0 else seq_len - 1 - step
    x_stride = inputs * batch_stride if batch > 1 else inputs   # rows of one time step
    gates = gates_scratch[:batch * cols].reshape(batch, cols)
    new_y = y_scratch[:batch * units].reshape(batch, units)
    source = h[step % 2, d]
    from_h, from_x_w = weights_from(packed, w_ih, w_hh, d, first, inputs, hidden)
    gemm(blas, wide, batch, cols, hidden, source, hidden, from_h, width, 0.0, gates, cols)
    b_part = bias[d * width + first:d * width + first + cols]
    if gates_per_unit == 4:
        new_c = c_scratch[:batch * units].reshape(batch, units)
        if inputs:
            gemm(blas, wide, batch, cols, inputs, x[t * time_stride:], x_stride, from_x_w, width, 1.0, gates, cols)
        for n in range(batch):
            g_row = gates[n]
            # simple loops, each over few arrays, so that every one vectorizes (see lstm's _step)
            for k in range(cols):
                g_row[k] += b_part[k]
            cell_update(g_row, c[d, n, lo:hi], new_c[n], new_y[n], units)
    else:
        from_x = x_scratch[:batch * cols].reshape(batch, cols)
        if inputs:
            gemm(blas, wide, batch, cols, inputs, x[t * time_stride:], x_stride, from_x_w, width, 0.0, from_x, cols)
        else:
            from_x[:] = 0
        bn_part = bias_hn[d * hidden + lo:d * hidden + hi]
        for n in range(batch):
            gru_update(from_x[n], gates[n], b_part, bn_part, source[n, lo:hi], new_y[n], units)
    if not atomic_claim(flags, task):
        return
    target = h[(step + 1) % 2, d]
    for n in range(batch):
        row = t * time_stride + n * batch_stride
        if gates_per_unit == 4:
            c[d, n, lo:hi] = new_c[n]
        y[row, d * hidden + lo:d * hidden + hi] = new_y[n]
        target[n, lo:hi] = new_y[n]
    atomic_add(counters, DONE, 1)


@jit(exact=True)
def _worker(blas, wide, packed, yield_fn, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len,
            time_stride, batch_stride):
    """Take tasks until none is left. ``x`` (rows, in) and ``y`` (rows, D*H) are indexed by row
    ``t * time_stride + n * batch_stride``; ``h`` (2, D, N, H): step t reads ``h[t % 2]`` and
    writes ``h[(t + 1) % 2]``; lstm's ``c`` (D, N, H); direction 1 runs backwards in time;
    ``flags`` (one per task, zeros) say which tasks are done; the weights as ``permuted`` gives them
    (``packed``: as ``_small_gemm.pack`` lays them out)."""
    directions, batch, hidden = h.shape[1], h.shape[2], h.shape[3]
    width = bias.size // directions
    parts = bounds.size - 1
    per_step = directions * parts
    widest = 0
    for p in range(parts):
        widest = max(widest, bounds[p + 1] - bounds[p])
    gates_scratch = np.empty(batch * (width // hidden) * widest, y.dtype)
    x_scratch = np.empty(batch * (width // hidden) * widest if width == 3 * hidden else 0, y.dtype)
    c_scratch = np.empty(batch * widest if width == 4 * hidden else 0, y.dtype)
    y_scratch = np.empty(batch * widest, y.dtype)
    total = seq_len * per_step
    # without sched_yield the checks are bare spins, far shorter than a task: wait longer to help
    help_after = HELP_AFTER if yield_fn != 0 else HELP_AFTER * 256
    while True:
        task = atomic_add(counters, TAKEN, 1)
        if task >= total:
            return
        needed = (task // per_step) * per_step
        waited = 0
        while True:
            done = atomic_load(counters, DONE)
            if done >= needed:
                break
            waited += 1
            if waited > SPINS and yield_fn != 0:
                call_int(yield_fn)
            if waited > help_after:   # its thread may have lost its core: run the earliest task not done
                first = (done // per_step) * per_step
                for other in range(first, min(first + per_step, task)):
                    if atomic_load(flags, other) == 0:
                        _task(other, blas, wide, packed, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c,
                              y, seq_len, time_stride, batch_stride, gates_scratch, x_scratch, c_scratch, y_scratch)
                        if yield_fn != 0:
                            help_after = SPINS   # once late, a thread stays likely to be late: help sooner
                        break
                waited = 0
        if atomic_load(flags, task) != 0:   # another thread ran it while this one had lost its core
            continue
        _task(task, blas, wide, packed, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len,
              time_stride, batch_stride, gates_scratch, x_scratch, c_scratch, y_scratch)


@jit(parallel=True)
def _parallel(workers, blas, wide, packed, yield_fn, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c,
              y, seq_len, time_stride, batch_stride):
    """``_worker`` ``workers`` times, over numba's threads (see the module docstring): at least as
    many as the launch's threads, so that each runs one. (Not ``numba.get_num_threads()``: a
    function calling it cannot be cached on disk.)"""
    for _ in prange(workers):
        _worker(blas, wide, packed, yield_fn, counters, flags, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y,
                seq_len, time_stride, batch_stride)


@jit(exact=True)
def _lane(lane, chunks, blas, wide, packed, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len, time_stride,
          batch_stride):
    """Every step of one lane: direction ``lane // chunks`` for its share ``lane % chunks`` of the
    batch rows, part after part of hidden units per step. ``h`` (2, D, N, H): step ``step`` reads
    ``h[step % 2]`` and writes ``h[(step + 1) % 2]`` (a later part of the step still reads the old
    state); lstm's ``c`` (D, N, H); ``x`` (rows, in) and ``y`` (rows, D*H) are indexed by row
    ``t * time_stride + n * batch_stride``, ``t`` the step's time (direction 1 runs backwards)."""
    directions, batch, hidden = h.shape[1], h.shape[2], h.shape[3]
    width = bias.size // directions
    gates_per_unit = width // hidden
    inputs = x.shape[1]
    d = lane // chunks
    k = lane - d * chunks
    lo = k * batch // chunks
    rows = (k + 1) * batch // chunks - lo
    if rows == 0:
        return
    parts = bounds.size - 1
    widest = 0
    for p in range(parts):
        widest = max(widest, bounds[p + 1] - bounds[p])
    gates_scratch = np.empty(rows * gates_per_unit * widest, y.dtype)
    x_scratch = np.empty(rows * gates_per_unit * widest if gates_per_unit == 3 else 0, y.dtype)
    # a part's new c and y are computed into scratch, then copied (see cell_update)
    c_scratch = np.empty(widest if gates_per_unit == 4 else 0, y.dtype)
    y_scratch = np.empty(widest, y.dtype)
    x_stride = inputs * batch_stride if batch > 1 else inputs   # rows of one time step
    for step in range(seq_len):
        t = step if d == 0 else seq_len - 1 - step
        source = h[step % 2, d, lo:lo + rows]
        target = h[(step + 1) % 2, d, lo:lo + rows]
        first_row = t * time_stride + lo * batch_stride
        for p in range(parts):
            u_lo, u_hi = bounds[p], bounds[p + 1]
            units = u_hi - u_lo
            cols = gates_per_unit * units
            first = gates_per_unit * u_lo
            gates = gates_scratch[:rows * cols].reshape(rows, cols)
            from_h, from_x_w = weights_from(packed, w_ih, w_hh, d, first, inputs, hidden)
            gemm(blas, wide, rows, cols, hidden, source, hidden, from_h, width, 0.0, gates, cols)
            b_part = bias[d * width + first:d * width + first + cols]
            new_c = c_scratch[:units]
            new_y = y_scratch[:units]
            if gates_per_unit == 4:
                if inputs:
                    gemm(blas, wide, rows, cols, inputs, x[first_row:], x_stride, from_x_w, width, 1.0, gates, cols)
            else:
                from_x = x_scratch[:rows * cols].reshape(rows, cols)
                if inputs:
                    gemm(blas, wide, rows, cols, inputs, x[first_row:], x_stride, from_x_w, width, 0.0, from_x,
                         cols)
                else:
                    from_x[:] = 0
                bn_part = bias_hn[d * hidden + u_lo:d * hidden + u_hi]
            for n in range(rows):
                g_row = gates[n]
                if gates_per_unit == 4:
                    # simple loops, each over few arrays, so that every one vectorizes (see lstm's _step)
                    for q in range(cols):
                        g_row[q] += b_part[q]
                    cell_update(g_row, c[d, lo + n, u_lo:u_hi], new_c, new_y, units)
                    c[d, lo + n, u_lo:u_hi] = new_c
                else:
                    gru_update(from_x[n], g_row, b_part, bn_part, source[n, u_lo:u_hi], new_y, units)
                row = first_row + n * batch_stride
                y[row, d * hidden + u_lo:d * hidden + u_hi] = new_y
                target[n, u_lo:u_hi] = new_y


@jit(exact=True)
def _lane_worker(counter, lanes, chunks, blas, wide, packed, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len,
                 time_stride, batch_stride):
    """Take lanes from ``counter`` (one int64, zero) until none is left."""
    while True:
        lane = atomic_add(counter, 0, 1)
        if lane >= lanes:
            return
        _lane(lane, chunks, blas, wide, packed, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len, time_stride,
              batch_stride)


@jit(parallel=True)
def _by_lanes(workers, counter, lanes, chunks, blas, wide, packed, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y,
              seq_len, time_stride, batch_stride):
    """``_lane_worker`` ``workers`` times, over numba's threads, as ``_parallel`` runs ``_worker``."""
    for _ in prange(workers):
        _lane_worker(counter, lanes, chunks, blas, wide, packed, bounds, x, w_ih, w_hh, bias, bias_hn, h, c, y,
                     seq_len, time_stride, batch_stride)


def available(dtype) -> bool:
    return gemm_address(dtype) is not None


_arguments: dict = {}


def arguments(dtype):
    """(numpy's OpenBLAS gemm's address, whether its integers are 64-bit, sched_yield's address),
    found once per dtype."""
    found = _arguments.get(dtype)
    if found is None:
        found = _arguments[dtype] = gemm_address(dtype) + (yield_address(),)
    return found


def gemm_for(dtype, bounds, gates: int) -> tuple:
    """(address, whether its integers are 64-bit, whether it reads the weights packed) of the
    product function a layer's loop calls: ``_small_gemm``'s packed one for f32 on a CPU without
    AVX-512 where every part's columns (``gates`` per hidden unit) are whole blocks of 16, else
    numpy's OpenBLAS. (``_small_gemm`` makes columns past the last whole block one at a time: 4x100
    by 100x132 took longer than OpenBLAS's.) Kept per dtype, parts and gates."""
    return _gemm_choice(np.dtype(dtype), tuple(int(b) for b in bounds), gates)


@functools.lru_cache(maxsize=64)
def _gemm_choice(dtype: np.dtype, bounds: tuple, gates: int) -> tuple:
    blas, wide, _ = arguments(dtype)
    if own_products(dtype, bounds, gates):
        small = _small_gemm.address(packed=True)
        if small is not None:
            return small, True, True
    return blas, wide, False


def run_layer(layer_input, entries, h, c, y_rows, dtype, shape, gates: int):
    """One layer of every direction as one compiled call (lstm: ``gates`` 4 and its cell state
    ``c``; gru with ``reset_after``: 3 and ``c`` None): ``h`` and ``c`` (D, N, H) updated in place,
    ``y_rows`` (rows, D*H) written in the caller's layout (``shape.row_strides``)."""
    hidden, seq_len, batch, dirs = shape.hidden_size, shape.seq_len, shape.batch, len(entries)
    bounds = bounds_for(hidden, parts_for(hidden, available_cores()))
    blas, wide, packed = gemm_for(dtype, bounds, gates)
    w_ih, w_hh, bias, bias_hn = permuted(entries, bounds, dtype, gates, packed)
    if layer_input is y_rows:   # a layer after the first: its steps overwrite the rows they read
        layer_input = y_rows.copy()
    source = np.ascontiguousarray(_to_f32(layer_input) if dtype == dt.float32 else layer_input)
    states = np.empty((2, dirs, batch, hidden), dtype)
    states[0] = h
    cells = c if c is not None else np.zeros((1, 1, 1), dtype)
    work = seq_len * batch * dirs * gates * hidden * (hidden + source.shape[1])   # multiply-adds
    busy = work * dtype.itemsize if work >= _gemm.PARALLEL_WORK else 0
    yield_fn = arguments(dtype)[2]
    cores = available_cores()
    chunks = chunks_for(batch, dirs, cores)
    # OpenBLAS on the calling thread while numba's threads call it. A loop of less work runs on
    # one thread, and each of its products is within OpenBLAS's own serial limit (``_SERIAL_GEMM``
    # is ``PARALLEL_WORK``): setting the count and back would only start OpenBLAS's threads. A
    # loop on ``_small_gemm``'s products (``packed``) calls no OpenBLAS at all.
    with one_thread() if busy and not packed else contextlib.nullcontext():
        if chunks:
            launch(_by_lanes, busy, min(cores, dirs * chunks), np.zeros(1, np.int64), dirs * chunks, chunks, blas,
                   wide, packed, bounds, source, w_ih, w_hh, bias, bias_hn, states, cells, y_rows, seq_len,
                   *shape.row_strides)
        else:
            per_step = dirs * (bounds.size - 1)   # tasks: more threads than this would only wait
            counters, flags = np.zeros(2, np.int64), np.zeros(seq_len * per_step, np.int64)
            launch(_parallel, busy, min(cores, per_step), blas, wide, packed, yield_fn, counters, flags, bounds,
                   source, w_ih, w_hh, bias, bias_hn, states, cells, y_rows, seq_len, *shape.row_strides)
    h[...] = states[seq_len % 2]
