"""lstm and gru on ONEDNN with the batch split into lanes of one thread (``_recurrent_lanes.py``):
they run where the budget allows two threads and a call is large enough, match the whole
primitive and the BASIC reference in every layout (uneven parts, layers, both directions,
given initial states), and a call runs whole where a lane's worker is busy, under one thread,
under a bf16 fp math mode that computes bf16 or when a trial found the whole primitive faster."""
import threading

import numpy as np
import pytest

import polyeng
from polyeng.engine import thread_trials
from polyeng.engine.threads import available_cores
from support import bf16_fp_math_computes_bf16

pytestmark = [
    pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                       reason="onednn is not available"),
    pytest.mark.skipif(available_cores() < 2, reason="lanes need two cores"),
]

RNG = np.random.default_rng(8)
CALLS = [("lstm", {}), ("gru", {"reset_after": True}), ("gru", {"reset_after": False})]


def make(kind, input_size, hidden, layers=1, dirs=1):
    gates = 4 if kind == "lstm" else 3
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        params.append(tuple(RNG.uniform(-0.3, 0.3, shape).astype(np.float32) for shape in
                            ((gates * hidden, layer_in), (gates * hidden, hidden), (gates * hidden,),
                             (gates * hidden,))))
    return params


@pytest.fixture(autouse=True)
def budget(monkeypatch):
    """The budget as set, the machine's load aside (a busy neighbour would make it one thread)."""
    from polyeng.backends.onednn import _threads
    monkeypatch.setattr(_threads, "threads_now", polyeng.get_num_threads)


@pytest.fixture
def lanes(monkeypatch):
    """The calls that ran in lanes (the trials off: every call takes the budget, so the lanes)."""
    from polyeng.backends.onednn import _recurrent_lanes
    ran = []
    real = _recurrent_lanes._in_lanes

    def in_lanes(*args):
        y = real(*args)
        ran.append(y is not None)
        return y
    monkeypatch.setattr(_recurrent_lanes, "_in_lanes", in_lanes)
    monkeypatch.setattr(thread_trials, "enabled", False)
    return ran


def _call(kind, x, params, engine="onednn", **kwargs):
    with polyeng.compute_eng(engine, fallback=False), polyeng.num_threads(2):
        y, states = getattr(polyeng, kind)(x, params, **kwargs)
    return [y] + (list(states) if isinstance(states, tuple) else [states])


def _whole(kind, x, params, **kwargs):
    from polyeng.backends.onednn import _recurrent_lanes
    _recurrent_lanes.enabled = False
    try:
        return _call(kind, x, params, **kwargs)
    finally:
        _recurrent_lanes.enabled = True


@pytest.mark.parametrize("kind,extra", CALLS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("batch", [2, 5])
def test_lanes_match_the_whole_primitive_and_the_reference(lanes, kind, extra, batch_first, batch):
    seq, features, hidden = 24, 32, 64
    params = make(kind, features, hidden, layers=2, dirs=2)
    shape = (batch, seq, features) if batch_first else (seq, batch, features)
    x = RNG.standard_normal(shape).astype(np.float32)
    h0 = RNG.standard_normal((4, batch, hidden)).astype(np.float32)
    c0 = RNG.standard_normal((4, batch, hidden)).astype(np.float32)
    kwargs = dict(extra, bidirectional=True, batch_first=batch_first, h0=h0)
    if kind == "lstm":
        kwargs["c0"] = c0
    got = _call(kind, x, params, **kwargs)
    assert lanes == [True]
    whole = _whole(kind, x, params, **kwargs)
    reference = _call(kind, x, params, engine="basic", **kwargs)
    for g, w, r in zip(got, whole, reference):
        assert g.shape == w.shape and g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5)


def test_a_busy_worker_leaves_the_call_whole(lanes):
    from polyeng.backends.onednn import _lane_worker
    params = make("lstm", 32, 64)
    x = RNG.standard_normal((32, 6, 32)).astype(np.float32)
    want = _whole("lstm", x, params)
    worker = _lane_worker.workers(1)[0]
    with worker.lock:
        got = []
        thread = threading.Thread(target=lambda: got.append(_call("lstm", x, params)))
        thread.start()
        thread.join()
    assert lanes == [False]
    for g, w in zip(got[0], want):
        np.testing.assert_array_equal(g, w)
    again = _call("lstm", x, params)   # the worker free again: in lanes
    assert lanes == [False, True]
    for g, w in zip(again, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_one_thread_a_small_call_and_the_bf16_mode_run_whole(lanes):
    """A bf16 fp math mode runs whole where it computes bf16; on a CPU without bf16 units it
    computes f32, as strict does, and runs in lanes like an f32 call."""
    bf16 = bf16_fp_math_computes_bf16()
    params = make("lstm", 32, 64)
    x = RNG.standard_normal((32, 6, 32)).astype(np.float32)
    with polyeng.compute_eng("onednn", fallback=False):
        with polyeng.num_threads(1):
            polyeng.lstm(x, params)
        with polyeng.num_threads(2):
            polyeng.lstm(x[:2, :2], params)   # under a million multiply-adds: one thread
            assert lanes == []
            with polyeng.fp_math_mode("bf16"):
                assert polyeng.explain("lstm", x, params).compute_type == ("bf16" if bf16 else "f32")
                got = polyeng.lstm(x, params)
            assert lanes == ([] if bf16 else [True])
            want = polyeng.lstm(x, params)   # strict f32: in lanes on every CPU
    assert lanes == ([True] if bf16 else [True, True])
    if not bf16:   # f32 in lanes both times: the same bits
        for g, w in zip((got[0],) + tuple(got[1]), (want[0],) + tuple(want[1])):
            np.testing.assert_array_equal(g, w)


def test_the_trials_keep_the_whole_primitive_where_it_ran_faster(monkeypatch):
    from polyeng.backends.onednn import _recurrent_lanes
    monkeypatch.setattr(_recurrent_lanes, "trials", thread_trials.Trials())
    ran = []
    real = _recurrent_lanes._in_lanes

    def slow_lanes(*args):
        import time
        time.sleep(0.01)
        ran.append(True)
        return real(*args)
    monkeypatch.setattr(_recurrent_lanes, "_in_lanes", slow_lanes)
    params = make("lstm", 32, 64)
    x = RNG.standard_normal((32, 6, 32)).astype(np.float32)
    for _ in range(12):
        _call("lstm", x, params)
    chosen = _recurrent_lanes.trials.chosen()
    assert list(chosen.values()) == [1]   # whole
    count = len(ran)
    for _ in range(5):
        _call("lstm", x, params)
    assert len(ran) == count


def test_an_interrupt_as_a_lane_is_posted_leaves_the_lanes_working(lanes, monkeypatch):
    """A KeyboardInterrupt raised as a worker's post returns: the call waits for that lane, then
    raises; later calls run in lanes again."""
    from polyeng.backends.onednn import _lane_worker
    params = make("lstm", 32, 64)
    x = RNG.standard_normal((32, 6, 32)).astype(np.float32)
    want = _whole("lstm", x, params)
    real = _lane_worker.Worker.post
    raised = []

    def post(self, runs):
        real(self, runs)
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt
    monkeypatch.setattr(_lane_worker.Worker, "post", post)
    with pytest.raises(KeyboardInterrupt):
        _call("lstm", x, params)
    for _ in range(2):
        got = _call("lstm", x, params)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert lanes[-2:] == [True, True]
