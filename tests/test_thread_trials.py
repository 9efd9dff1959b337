"""A parallel kernel's first calls run alternately on the thread budget and on one thread, and it
keeps the faster (``engine/thread_trials.py``): the choice, its recheck, and NUMBA launches and
ONEDNN primitives giving the same results whichever count runs them."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import thread_trials, threads
from polyeng.engine.thread_trials import RECHECKS, TRIALS, WARMUP, Trials

CALLS = WARMUP + 2 * TRIALS


def run_trials(trials, key, n, seconds_for):
    """The thread counts of CALLS calls of ``key``, each recorded as taking seconds_for(threads)."""
    counts = []
    for _ in range(CALLS):
        count, timed = trials.choose(key, n)
        counts.append(count)
        if timed:
            trials.record(key, n, count, seconds_for(count))
    return counts


def test_the_first_calls_alternate_and_the_faster_choice_is_kept():
    trials = Trials()
    counts = run_trials(trials, "k", 4, lambda t: 1.0 if t == 1 else 2.0)
    assert counts[:WARMUP] == [4] * WARMUP   # warm-up calls take the budget, untimed
    assert sorted(counts[WARMUP:]) == [1] * TRIALS + [4] * TRIALS
    assert trials.choose("k", 4) == (1, False) and trials.chosen() == {"k": 1}

    trials.clear()
    run_trials(trials, "k", 4, lambda t: 2.0 if t == 1 else 1.0)
    assert trials.choose("k", 4) == (4, False)


def test_a_tie_keeps_one_thread_and_the_fastest_call_decides():
    trials = Trials()
    run_trials(trials, "tie", 2, lambda t: 1.0)
    assert trials.choose("tie", 2) == (1, False)
    trials = Trials()   # one slow budget call (a neighbour's burst) does not decide alone
    times = iter([5.0, 3.0, 1.0, 3.0, 1.0, 3.0])
    run_trials(trials, "burst", 2, lambda t: next(times))
    assert trials.choose("burst", 2) == (2, False)


def test_budgets_are_tried_apart_and_the_choice_is_made_again_later():
    trials = Trials()
    run_trials(trials, ("k", 2), 2, lambda t: 1.0 if t == 1 else 2.0)
    assert trials.choose(("k", 4), 4) == (4, False)   # another key: its own warm-up
    for _ in range(RECHECKS[0]):
        assert trials.choose(("k", 2), 2) == (1, False)
    assert trials.choose(("k", 2), 2) == (2, False)   # the recheck starts again with a warm-up call
    assert ("k", 2) not in trials.chosen()


def test_a_recheck_has_the_short_warm_up_whatever_the_first_had():
    trials = Trials(warmup=20)
    counts = []
    for _ in range(20 + 2 * TRIALS):
        count, timed = trials.choose("k", 2)
        if timed:
            trials.record("k", 2, count, 1.0 if count == 1 else 2.0)
    for _ in range(RECHECKS[0]):
        assert trials.choose("k", 2) == (1, False)
    for _ in range(WARMUP + 2 * TRIALS):
        count, timed = trials.choose("k", 2)
        counts.append((count, timed))
        if timed:
            trials.record("k", 2, count, 1.0 if count == 1 else 2.0)
    assert counts[:WARMUP] == [(2, False)] * WARMUP and all(t for _, t in counts[WARMUP:])
    assert trials.chosen() == {"k": 1}


def test_each_choice_is_kept_longer_than_the_one_before():
    trials, kept = Trials(), []
    for made in range(len(RECHECKS) + 1):
        run_trials(trials, "k", 2, lambda t: 1.0 if t == 1 else 2.0)
        count = 0
        while trials.choose("k", 2) == (1, False):
            count += 1
        kept.append(count)
        # that call started the next trials' warm-up: the helper runs them from their start
        trials._trials["k"].calls = 0
    assert kept == list(RECHECKS) + [RECHECKS[-1]]


def test_trials_off_give_the_budget(monkeypatch):
    monkeypatch.setattr(thread_trials, "enabled", False)
    trials = Trials()
    assert [trials.choose("k", 3) for _ in range(CALLS + 1)] == [(3, False)] * (CALLS + 1)
    assert trials.chosen() == {}


def test_a_full_table_starts_afresh():
    trials = Trials(limit=2)
    for key in "abc":
        trials.choose(key, 2)
    assert len(trials._trials) == 1


@pytest.fixture
def two_threads(monkeypatch):
    if threads.available_cores() < 2:
        pytest.skip("needs 2 usable cores: with one there is nothing to choose")
    monkeypatch.setattr(threads, "_others_running", lambda: 0)   # the machine's load aside
    monkeypatch.setattr(threads, "_load", [0.0, 0])


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["numba"].available, reason="numba is unavailable")
def test_a_numba_launch_runs_on_the_count_its_trials_chose(two_threads, monkeypatch):
    import numba
    from numba import prange

    from polyeng.backends.numba import _runtime

    @numba.njit(parallel=True)
    def count(out):
        for i in prange(out.size):
            out[i] = numba.get_num_threads()
    clock = iter(np.arange(0.0, 100.0, 0.5))   # each timed call "takes" 0.5 s; the one-thread ones less:
    monkeypatch.setattr(_runtime, "perf_counter", lambda: next(clock))
    seen = []
    out = np.zeros(64, np.int64)
    budget = _runtime.threads_for(_runtime._SERIAL_BYTES)
    if budget < 2:
        pytest.skip("numba's pool has one worker")
    real_record = _runtime.trials.record
    monkeypatch.setattr(_runtime.trials, "record", lambda key, n, t, s: real_record(key, n, t, s / (4 if t == 1 else 1)))
    before = numba.get_num_threads()
    for _ in range(CALLS + 3):
        _runtime.launch(count, _runtime._SERIAL_BYTES, out)
        seen.append(int(out[0]))
    assert numba.get_num_threads() == before
    assert seen[:WARMUP] == [budget] * WARMUP and set(seen[WARMUP:CALLS]) == {1, budget}
    assert seen[CALLS:] == [1, 1, 1]


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available, reason="onednn is unavailable")
def test_onednn_gives_the_same_results_on_every_count_its_trials_run(two_threads, monkeypatch):
    from polyeng.backends.onednn import _primitive
    seen = []
    real = _primitive.set_threads
    monkeypatch.setattr(_primitive, "set_threads", lambda n: (seen.append(n), real(n)))
    _primitive.trials.clear()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)   # above the one-thread size
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    with polyeng.compute_eng("basic"):
        want = polyeng.conv2d(x, w, padding=1)
    results = []
    with polyeng.compute_eng("onednn", fallback=False):
        for _ in range(CALLS + 2):
            results.append(polyeng.conv2d(x, w, padding=1))
    assert {1, 2} <= set(seen)   # both counts ran
    assert _primitive.trials.chosen()   # and a choice was kept
    for got in results:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(got, results[0])
