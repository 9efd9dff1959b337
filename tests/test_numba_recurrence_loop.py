"""lstm's and gru's compiled time loop on NUMBA (``backends/numba/_recurrence_loop.py``): each step split in parts
over numba's threads, tasks taken from an atomic counter, or the layer cut in lanes (a direction and
a share of the batch rows) that threads take whole. It matches BASIC for every layout and option,
with uneven parts and shares, by tasks and by lanes, on one thread and on two, and gives the same
bits on both; lanes give the tasks' bits where their products do (see
``test_tasks_and_lanes_give_the_same_bits_where_blas_does``)."""
import ctypes

import numpy as np
import pytest

import polyeng
from polyeng.backends.numba import _gemm, _loop_parts, _recurrence_loop, _runtime, _small_gemm
from polyeng.engine.threads import available_cores
from support import assert_close_tree, numba_threads

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["numba"].available,
                                reason="numba is unavailable")

TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}
# lanes against tasks where OpenBLAS rounds a share's rows otherwise than the whole batch's: 32 ulps of
# 1 (and of the value beyond 1); at most 8 were seen (100 seeds of the cases below, shares of 2, 3 and 5)
LANE_TOL = {np.dtype(t): dict(rtol=32 * np.finfo(t).eps, atol=32 * np.finfo(t).eps) for t in (np.float32, np.float64)}


def _basic(op, *args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def _numpy_blas_is_openblas() -> bool:
    from polyeng.backends import _blas_threads
    info = _blas_threads.blas_info()
    return bool(info) and info.get("library") == "openblas"


def test_numpy_openblas_gemm_is_found():
    """numpy's wheels bundle OpenBLAS: where threadpoolctl finds it, the loop is what NUMBA runs for
    f32 and f64 (elsewhere the step-by-step path runs, tested by test_op_lstm.py)."""
    assert _recurrence_loop.available(np.float32) == _numpy_blas_is_openblas() == _recurrence_loop.available(np.float64)
    assert not _recurrence_loop.available(np.float16)


def test_bounds_and_gate_order():
    np.testing.assert_array_equal(_recurrence_loop.bounds_for(20, 3), [0, 6, 13, 20])
    order = _recurrence_loop.gate_order(5, np.array([0, 2, 5]))
    # part 0: units 0-1 of gates i, f, g, o; part 1: units 2-4 of each
    np.testing.assert_array_equal(order, [0, 1, 5, 6, 10, 11, 15, 16, 2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19])
    # gru's r, z, n
    np.testing.assert_array_equal(_recurrence_loop.gate_order(5, np.array([0, 2, 5]), 3),
                                  [0, 1, 5, 6, 10, 11, 2, 3, 4, 7, 8, 9, 12, 13, 14])
    parts = _recurrence_loop.parts_for
    assert parts(128, 2) == 4 and parts(20, 2) == 1 and parts(4096, 2) == 8


def test_lanes_where_each_core_gets_enough_rows_or_a_direction():
    chunks = _recurrence_loop.chunks_for   # (batch, directions, cores) -> row shares per direction, 0: by tasks
    assert chunks(8, 1, 2) == 2 and chunks(32, 1, 2) == 2 and chunks(32, 1, 4) == 4 and chunks(64, 1, 16) == 16
    assert chunks(1, 2, 2) == 1 and chunks(8, 2, 2) == 1 and chunks(8, 2, 4) == 2 and chunks(1, 2, 1) == 1
    assert chunks(7, 1, 2) == 0 and chunks(1, 1, 2) == 0 and chunks(64, 1, 1) == 0   # one lane: by tasks
    # fewer lanes than cores: by tasks, which share each step among every core
    assert chunks(12, 1, 4) == 0 and chunks(8, 1, 16) == 0 and chunks(1, 2, 4) == 0 and chunks(20, 2, 16) == 0


def _params(rng, input_size, hidden, layers, dirs, dtype, writeable=True, gates=4):
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        rows = gates * hidden
        entry = tuple(rng.uniform(-0.6, 0.6, s).astype(dtype)
                      for s in ((rows, layer_in), (rows, hidden), (rows,), (rows,)))
        for a in entry:
            a.flags.writeable = writeable
        params.append(entry)
    return params


@pytest.fixture
def forced(monkeypatch):
    """The loop on every call, in ``parts`` parts of few units, run on ``threads`` threads exactly
    (whatever the machine's load and the thread trials would choose), by tasks unless
    ``state["lanes"]`` says into how many row shares each direction is cut; records each run's
    kernel."""
    if not _numpy_blas_is_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS: lstm and gru keep their step-by-step paths")
    ran = []
    state = {"threads": 2, "lanes": 0}
    monkeypatch.setattr(_recurrence_loop, "chunks_for", lambda batch, dirs, cores: state["lanes"])

    def launch(kernel, busy, *args):
        ran.append(kernel)
        with numba_threads(state["threads"]):
            return kernel(*args)
    monkeypatch.setattr(_recurrence_loop, "launch", launch)
    monkeypatch.setattr(_loop_parts, "UNITS_PER_PART", 4)
    monkeypatch.setattr(_gemm, "PARALLEL_WORK", 0)
    _runtime.start_pool()
    return ran, state


CASES = [  # layers, bidirectional, batch_first, unbatched, with states
    (1, False, False, False, False),
    (2, True, False, False, True),
    (2, False, True, False, True),
    (1, True, True, False, False),
    (2, True, False, True, True),
]


def _case_inputs(case, op, dtype, seed, seq):
    """(layers, params, x, keyword arguments) of a ``CASES`` entry: batch 5, 7 inputs, 14 hidden
    units (3 uneven parts of 4-5 units under the ``forced`` fixture)."""
    layers, bidirectional, batch_first, unbatched, with_state = case
    rng = np.random.default_rng(seed)
    batch, input_size, hidden = 5, 7, 14
    dirs = 2 if bidirectional else 1
    params = _params(rng, input_size, hidden, layers, dirs, dtype, gates=4 if op == "lstm" else 3)
    x_shape = (seq, input_size) if unbatched else (batch, seq, input_size) if batch_first else (seq, batch, input_size)
    x = rng.standard_normal(x_shape).astype(dtype)
    kwargs = {"batch_first": batch_first, "bidirectional": bidirectional}
    if with_state:
        shape = (layers * dirs,) + ((hidden,) if unbatched else (batch, hidden))
        kwargs["h0"] = rng.standard_normal(shape).astype(dtype)
        if op == "lstm":
            kwargs["c0"] = rng.standard_normal(shape).astype(dtype)
    return layers, params, x, kwargs


@pytest.mark.parametrize("lanes", [0, 1, 3], ids=["tasks", "lanes", "lanes-3"])
@pytest.mark.parametrize("op", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_loop_matches_basic_on_one_and_two_threads_with_the_same_bits(forced, dtype, case, op, lanes):
    """By tasks, by lanes of whole directions (one share each), and by 3 uneven shares of the rows
    (1, 2 and 2 of 5; one batch row unbatched, so two lanes hold none)."""
    ran, state = forced
    state["lanes"] = lanes
    kernel = _recurrence_loop._by_lanes if lanes else _recurrence_loop._parallel
    layers, params, x, kwargs = _case_inputs(case, op, dtype, seed=3, seq=9)
    run = getattr(polyeng, op)
    with polyeng.compute_eng("basic", fallback=False):
        expected = run(x, params, **kwargs)
    results = []
    for threads in (1, 2):
        state["threads"] = threads
        before = len(ran)
        with polyeng.compute_eng("numba", fallback=False):
            results.append(run(x, params, **kwargs))
        assert ran[before:] == [kernel] * layers
        assert_close_tree(expected, results[-1], **TOL[np.dtype(dtype)])
    for one, two in zip(np.asarray(results[0][0]).ravel(), np.asarray(results[1][0]).ravel()):
        assert one == two
    for one, two in zip(results[0][1:], results[1][1:]):
        assert_close_tree(one, two, rtol=0, atol=0)


def test_gru_without_reset_after_keeps_the_step_by_step_path(forced):
    ran, state = forced
    rng = np.random.default_rng(9)
    params = _params(rng, 5, 12, 1, 1, np.float32, gates=3)
    x = rng.standard_normal((4, 2, 5)).astype(np.float32)
    expected = _basic("gru", x, params, reset_after=False)
    with polyeng.compute_eng("numba", fallback=False):
        actual = polyeng.gru(x, params, reset_after=False)
    assert ran == []
    assert_close_tree(expected, actual, **TOL[np.dtype(np.float32)])


def _cblas_gemm(dtype, bounds, gates):
    """``gemm(a, b, cols, beta, c)``: ``c = a @ b[:, :cols] + beta * c`` (``a`` and ``b`` C-contiguous, ``c``
    a new array where ``beta`` is 0) by the function the loop calls for a layer of these parts
    (``_recurrence_loop.gemm_for``: numpy's OpenBLAS, or ``_small_gemm``'s on a CPU without AVX-512, which
    reads ``b`` packed)."""
    address, wide, packed = _recurrence_loop.gemm_for(np.dtype(dtype), bounds, gates)
    real = np.ctypeslib.as_ctypes_type(np.dtype(dtype))
    integer, enum, pointer = (ctypes.c_int64 if wide else ctypes.c_int32), ctypes.c_int, ctypes.c_void_p
    cblas = ctypes.CFUNCTYPE(None, enum, enum, enum, integer, integer, integer, real, pointer, integer, pointer,
                             integer, real, pointer, integer)(address)

    def gemm(a, b, cols, beta, c=None):
        c = np.zeros((a.shape[0], cols), dtype) if c is None else c
        laid = _small_gemm.pack(b[:, :cols]) if packed else b
        cblas(101, 111, 111, a.shape[0], cols, a.shape[1], 1.0, a.ctypes.data, a.shape[1], laid.ctypes.data,
              b.shape[1], beta, c.ctypes.data, cols)   # row-major, no transposes
        return c
    return gemm


def _shares(batch, chunks):
    """The rows of each lane of a direction cut in ``chunks`` shares, as ``_recurrence_loop._lane`` cuts them."""
    return [(k * batch // chunks, (k + 1) * batch // chunks) for k in range(chunks)]


def _rows_round_alike(dtype, params, batch, chunks) -> bool:
    """Whether the loop's product function (numpy's OpenBLAS, or ``_small_gemm``'s: ``gemm_for``) gives
    every row of a part's products the same bits in a lane's call, of its share of the rows, as in the
    tasks' call of the whole batch: the loop's calls (``h @ w_hh.T``, then lstm's ``+= x_t @ w_ih.T`` or
    gru's ``x_t @ w_ih.T`` apart) on random data of each layer's shapes, in ``chunks`` shares and in one.
    OpenBLAS picks its kernels, and so the order of a row's sums, by a call's shape alone."""
    hidden = params[0][1].shape[1]
    gates = params[0][1].shape[0] // hidden
    bounds = _recurrence_loop.bounds_for(hidden, _recurrence_loop.parts_for(hidden, available_cores()))
    widths = sorted({gates * int(hi - lo) for lo, hi in zip(bounds[:-1], bounds[1:])})
    gemm = _cblas_gemm(dtype, bounds, gates)
    rng = np.random.default_rng(0)
    for inputs in sorted({entry[0].shape[1] for entry in params}):
        a_h, a_x = (rng.standard_normal((batch, k)).astype(dtype) for k in (hidden, inputs))
        b_h, b_x = (rng.standard_normal((k, gates * hidden)).astype(dtype) for k in (hidden, inputs))
        for cols in widths:
            def products(lo, hi):
                h_part = gemm(np.ascontiguousarray(a_h[lo:hi]), b_h, cols, 0.0)
                if not inputs:
                    return [h_part]
                x_rows = np.ascontiguousarray(a_x[lo:hi])
                return [gemm(x_rows, b_x, cols, 1.0, h_part)] if gates == 4 else [h_part, gemm(x_rows, b_x, cols, 0.0)]
            whole = products(0, batch)
            for lo, hi in _shares(batch, chunks):
                if hi > lo and not all(np.array_equal(w[lo:hi], s) for w, s in zip(whole, products(lo, hi))):
                    return False
    return True


def _assert_lanes_like_tasks(tasks, lanes, dtype, alike):
    if alike:
        assert_close_tree(tasks, lanes, rtol=0, atol=0)
    else:
        assert_close_tree(tasks, lanes, **LANE_TOL[np.dtype(dtype)])


@pytest.mark.parametrize("op", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_tasks_and_lanes_give_the_same_bits_where_blas_does(forced, dtype, case, op):
    """A part's arithmetic is the same in both forms, whatever rows a lane holds: its products are
    OpenBLAS's, for the lane's rows, and its elementwise code is the tasks'. Lanes of whole directions
    (one share) make the tasks' very calls: the same bits on every CPU. Lanes of shares of the rows
    (1, 2 and 2 of 5) make calls of fewer rows, and OpenBLAS may sum a row's products in another order
    in a call of other rows: its Haswell kernels (which it runs on Zen too) do, by a row's place in the
    call and the call's row count. Where every row's sums come out the same (OpenBLAS's AVX-512 kernels
    gave these bit for bit), the shares must give the tasks' bits too (``_rows_round_alike`` makes the
    loop's calls both ways to tell); elsewhere they agree within ``LANE_TOL``, the few ulps of the
    products' rounding carried through the steps."""
    ran, state = forced
    layers, params, x, kwargs = _case_inputs(case, op, dtype, seed=11, seq=6)
    results = {}
    for lanes in (0, 1, 3):
        state["lanes"] = lanes
        with polyeng.compute_eng("numba", fallback=False):
            results[lanes] = getattr(polyeng, op)(x, params, **kwargs)
    assert ran == [_recurrence_loop._parallel] * layers + [_recurrence_loop._by_lanes] * (2 * layers)
    assert_close_tree(results[0], results[1], rtol=0, atol=0)
    unbatched, batch_first = case[3], case[2]
    batch = 1 if unbatched else x.shape[0 if batch_first else 1]
    _assert_lanes_like_tasks(results[0], results[3], dtype, _rows_round_alike(dtype, params, batch, 3))


@pytest.mark.parametrize("lanes", [0, 2], ids=["tasks", "lanes"])
def test_one_thread_running_every_worker_in_turn_takes_every_task(forced, lanes):
    """The loop's serial compile (numba's workqueue layer at one thread) runs its workers one after
    another: the first takes every task (or lane), in order, and waits on none."""
    ran, state = forced
    state["lanes"] = lanes
    kernel = _recurrence_loop._by_lanes if lanes else _recurrence_loop._parallel
    rng = np.random.default_rng(4)
    params = _params(rng, 6, 12, 1, 2, np.float32)
    x = rng.standard_normal((8, 3, 6)).astype(np.float32)
    expected = _basic("lstm", x, params, bidirectional=True)
    serial = _runtime.serial(kernel)

    def launch(kernel, busy, *args):
        ran.append(kernel)
        return serial(*args)
    _recurrence_loop.launch = launch   # restored by the fixture's monkeypatch
    with polyeng.compute_eng("numba", fallback=False):
        actual = polyeng.lstm(x, params, bidirectional=True)
    assert ran == [kernel]
    assert_close_tree(expected, actual, **TOL[np.dtype(np.float32)])


def test_one_lane_worker_alone_takes_every_lane(forced):
    """A thread that starts late, or never, holds nothing up: the first lane worker takes every
    lane, and the counter ends one past the last."""
    ran, state = forced
    state["lanes"] = 2
    rng = np.random.default_rng(6)
    params = _params(rng, 5, 12, 1, 2, np.float32)
    x = rng.standard_normal((6, 5, 5)).astype(np.float32)
    expected = _basic("lstm", x, params, bidirectional=True)
    seen = {}

    def launch(kernel, busy, workers, counter, lanes, *args):
        ran.append(kernel)
        _recurrence_loop._lane_worker(counter, lanes, *args)
        seen["lanes"], seen["taken"] = lanes, int(counter[0])
    _recurrence_loop.launch = launch   # restored by the fixture's monkeypatch
    with polyeng.compute_eng("numba", fallback=False):
        actual = polyeng.lstm(x, params, bidirectional=True)
    assert ran == [_recurrence_loop._by_lanes]
    assert seen == {"lanes": 4, "taken": 5}   # 2 directions x 2 shares of the rows
    assert_close_tree(expected, actual, **TOL[np.dtype(np.float32)])


def test_permuted_weights_are_kept_for_constant_weights_only(forced):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 2, 5)).astype(np.float32)
    _recurrence_loop._permuted.clear()
    writeable = _params(rng, 5, 8, 1, 1, np.float32)
    with polyeng.compute_eng("numba", fallback=False):
        polyeng.lstm(x, writeable)
        assert len(_recurrence_loop._permuted) == 0
        fixed = _params(rng, 5, 8, 1, 1, np.float32, writeable=False)
        first = polyeng.lstm(x, fixed)
        assert len(_recurrence_loop._permuted) == 1
        again = polyeng.lstm(x, fixed)
        assert len(_recurrence_loop._permuted) == 1
    assert_close_tree(first, again, rtol=0, atol=0)


def test_a_task_whose_thread_never_runs_it_is_run_by_the_waiting_thread(forced):
    """A thread that took a task and lost its core holds every later step up: the waiting thread
    runs the task itself. Simulated: task 0 is taken by no one who runs it."""
    ran, state = forced
    rng = np.random.default_rng(6)
    params = _params(rng, 5, 12, 1, 2, np.float32)
    x = rng.standard_normal((6, 3, 5)).astype(np.float32)
    expected = _basic("lstm", x, params, bidirectional=True)
    seen = {}

    def launch(kernel, busy, workers, *args):
        ran.append(kernel)
        counters, flags = args[4], args[5]   # after blas, wide, packed and yield_fn
        counters[_recurrence_loop.TAKEN] = 1   # task 0 taken, never run by its taker
        _recurrence_loop._worker(*args)
        seen["flags"] = flags.copy()
        seen["args"] = args
    _recurrence_loop.launch = launch   # restored by the fixture's monkeypatch
    with polyeng.compute_eng("numba", fallback=False):
        actual = polyeng.lstm(x, params, bidirectional=True)
    assert ran == [_recurrence_loop._parallel] and seen["flags"].all()
    assert_close_tree(expected, actual, **TOL[np.dtype(np.float32)])


def test_a_task_run_twice_is_written_once(forced):
    """The late copy of a task another thread already ran writes nothing (its claim fails)."""
    ran, state = forced
    rng = np.random.default_rng(8)
    params = _params(rng, 5, 12, 1, 1, np.float32)
    x = rng.standard_normal((4, 2, 5)).astype(np.float32)
    kept = {}

    def launch(kernel, busy, workers, *args):
        _recurrence_loop._worker(*args)
        kept["args"] = args
    _recurrence_loop.launch = launch
    with polyeng.compute_eng("numba", fallback=False):
        polyeng.lstm(x, params)
    blas, wide, packed, yield_fn, counters, flags, bounds, source, w_ih, w_hh, bias, bias_hn, h, c, y, seq_len, ts, \
        bs = kept["args"]
    before = [a.copy() for a in (counters, h, c, y)]
    scratch = [np.empty(2 * 4 * 12, np.float32), np.empty(0, np.float32), np.empty(2 * 12, np.float32),
               np.empty(2 * 12, np.float32)]
    _recurrence_loop._task(0, blas, wide, packed, counters, flags, bounds, source, w_ih, w_hh, bias, bias_hn, h, c, y,
                           seq_len, ts, bs, *scratch)
    for old, new in zip(before, (counters, h, c, y)):
        np.testing.assert_array_equal(old, new)


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_the_example_and_warmup_calls_compile_the_loop_by_tasks_and_by_lanes(monkeypatch, op):
    """``polyeng warmup`` runs each op's example and warmup calls: between them they launch both
    forms of the loop, so that neither compiles on a user's first call."""
    if not _numpy_blas_is_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS: lstm and gru keep their step-by-step paths")
    from polyeng.examples import example_calls, warmup_variants
    ran = []
    launch = _recurrence_loop.launch

    def recording(kernel, *args):
        ran.append(kernel)
        return launch(kernel, *args)
    monkeypatch.setattr(_recurrence_loop, "launch", recording)
    calls = [example_calls(np.random.default_rng(0))[op]]
    calls += [(args, kwargs) for name, args, kwargs in warmup_variants(np.random.default_rng(0)) if name == op]
    with polyeng.compute_eng("numba", fallback=False):
        for args, kwargs in calls:
            getattr(polyeng, op)(*args, **kwargs)
    assert set(ran) == {_recurrence_loop._parallel, _recurrence_loop._by_lanes}


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_lanes_and_tasks_without_inputs(forced, op):
    """input_size 0: no input products, only the states' (an ONNX LSTM or GRU may take no input
    features); by tasks, by a lane of the whole batch and by two shares of it."""
    ran, state = forced
    rng = np.random.default_rng(6)
    params = _params(rng, 0, 14, 1, 1, np.float32, gates=4 if op == "lstm" else 3)
    x = np.zeros((9, 5, 0), np.float32)
    h0 = rng.standard_normal((1, 5, 14)).astype(np.float32)
    kwargs = {"h0": h0, "c0": rng.standard_normal((1, 5, 14)).astype(np.float32)} if op == "lstm" else {"h0": h0}
    run = getattr(polyeng, op)
    with polyeng.compute_eng("basic", fallback=False):
        expected = run(x, params, **kwargs)
    results = {}
    for lanes in (0, 1, 2):
        state["lanes"] = lanes
        with polyeng.compute_eng("numba", fallback=False):
            results[lanes] = run(x, params, **kwargs)
    assert ran == [_recurrence_loop._parallel] + [_recurrence_loop._by_lanes] * 2
    assert_close_tree(expected, results[0], **TOL[np.dtype(np.float32)])
    assert_close_tree(results[0], results[1], rtol=0, atol=0)   # the tasks' calls
    # shares of 2 and 3 rows: see test_tasks_and_lanes_give_the_same_bits_where_blas_does
    _assert_lanes_like_tasks(results[0], results[2], np.float32, _rows_round_alike(np.float32, params, 5, 2))
