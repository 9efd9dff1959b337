"""Small numpy products of lstm and the convolutions run with OpenBLAS on the calling thread: on
a busy machine OpenBLAS's worker threads wait for a core, and a 0.1 ms product took tens of
milliseconds. Large products run on polyeng's thread budget, never above the count OpenBLAS had.
matmul's and linear's products keep whichever of the budget and one thread their first calls
ran faster on. The count is restored afterwards. Speed itself is measured by ``benchmarks/contention.py`` and
``benchmarks/threads.py``."""
import os
import threading

import numpy as np
import pytest

import polyeng
from polyeng.backends import _blas, _blas_threads
from polyeng.engine import thread_trials

ENGINES = ["basic"] + [e.name for e in polyeng.engines() if e.name == "numba" and e.available]


class FakeOpenBLAS:
    """A thread count that starts at ``threads``, with its (get, set) pair; records every set."""

    def __init__(self, threads=4):
        self.threads, self.sets = threads, []

    def get(self):
        return self.threads

    def set(self, n):
        self.sets.append(n)
        self.threads = n


@pytest.fixture
def fake(monkeypatch):
    lib = FakeOpenBLAS()
    monkeypatch.setattr(_blas_threads, "_controls", (lib.get, lib.set))
    monkeypatch.setattr(_blas_threads, "trials", thread_trials.Trials())   # no choice from earlier calls
    return lib


def spy_on_matmul(monkeypatch, get, fail=False):
    """The thread count ``get()`` reports inside every np.matmul call from now on."""
    seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(get())
        if fail:
            raise FloatingPointError("product failed")
        return real(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", spy)
    return seen


def ones(*shape):
    return np.ones(shape, np.float32)


def run(engine, op, *args):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args)


PRODUCTS = [
    ("linear", (ones(128, 192), ones(192, 192), ones(192))),
    ("linear", (ones(1, 192), ones(96, 192))),          # a row: OpenBLAS's gemv threads from 9216
    ("matmul", (ones(128, 192), ones(192, 192))),
    ("matmul", (ones(4, 32, 64), ones(64, 256))),       # 2.1 M multiply-adds in 4 products
    ("matmul", (ones(2048), ones(2048, 64))),
]


def timed_matmul(monkeypatch, fake, faster):
    """np.matmul that records the thread count of each product, on a clock that runs 1 s per
    product on ``faster`` threads and 3 s on any other count."""
    clock, seen = [0.0], []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(fake.threads)
        clock[0] += 1.0 if fake.threads == faster else 3.0
        return real(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", spy)
    monkeypatch.setattr(_blas_threads, "perf_counter", lambda: clock[0])
    return seen


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("op, args", PRODUCTS)
@pytest.mark.parametrize("faster", [1, 4])
def test_matmul_and_linear_keep_the_faster_of_the_budget_and_one_thread(fake, monkeypatch, engine, op, args,
                                                                         faster):
    expected = np.matmul(args[0], args[1] if op == "matmul" else args[1].T) + (args[2] if len(args) > 2 else 0)
    monkeypatch.setattr(_blas_threads, "threads_now", lambda: 4)
    seen = timed_matmul(monkeypatch, fake, faster)
    tried = thread_trials.WARMUP + 2 * thread_trials.TRIALS
    per_call = []
    for _ in range(tried + 3):
        np.testing.assert_allclose(run(engine, op, *args), expected)
        per_call.append(seen[-1])   # the last product is the call's own (NUMBA may widen inputs first)
        assert fake.threads == 4    # restored after every call
    assert per_call == [4] + [4, 1] * thread_trials.TRIALS + [faster] * 3
    assert fake.sets == [1, 4] * (thread_trials.TRIALS + (3 if faster == 1 else 0))


@pytest.mark.parametrize("op, args", PRODUCTS[:1] + PRODUCTS[3:4])
def test_on_a_busy_machine_products_run_on_one_thread_untried(fake, monkeypatch, op, args):
    monkeypatch.setattr(_blas_threads, "threads_now", lambda: 1)
    seen = timed_matmul(monkeypatch, fake, 4)
    for _ in range(3):
        run("basic", op, *args)
    assert seen == [1, 1, 1] and fake.threads == 4 and fake.sets == [1, 4] * 3
    assert not _blas_threads.trials._trials


def test_unnamed_small_products_run_on_one_thread_and_restore_the_count(fake):
    with _blas_threads.blas_threads(1 << 20):
        assert fake.threads == 1
    assert fake.threads == 4 and fake.sets == [1, 4]
    with _blas_threads.blas_threads(1 << 20, key=None):
        assert fake.threads == 1


def test_the_count_is_restored_when_the_product_raises(fake, monkeypatch):
    monkeypatch.setattr(_blas_threads, "threads_now", lambda: 4)
    monkeypatch.setattr(_blas_threads.trials, "choose", lambda key, n: (1, True))   # a timed one-thread trial
    recorded = []
    monkeypatch.setattr(_blas_threads.trials, "record", lambda *args: recorded.append(args))
    seen = spy_on_matmul(monkeypatch, fake.get, fail=True)
    with pytest.raises(FloatingPointError, match="product failed"):
        _blas.linear(None, ones(128, 192), ones(192, 192), None)
    assert seen == [1] and fake.threads == 4 and fake.sets == [1, 4]
    assert recorded == []   # a failed call is no measurement


@pytest.mark.parametrize("a, b", [
    (ones(2048, 64), ones(64, 64)),          # 2**23 multiply-adds: SMALL_WORK
    (ones(4, 64, 128), ones(128, 256)),      # 2**23 in 4 products of 2**21: the call counts
])
def test_large_products_run_on_the_thread_budget(fake, monkeypatch, a, b):
    assert a.size * b.shape[-1] == _blas_threads.SMALL_WORK
    seen = spy_on_matmul(monkeypatch, fake.get)
    monkeypatch.setattr(_blas_threads, "threads_now", polyeng.get_num_threads)   # the load aside
    with polyeng.num_threads(4):
        run("basic", "matmul", a, b)
    assert seen == [4] and fake.sets == []          # the budget is what OpenBLAS has: nothing set
    with polyeng.num_threads(2):
        run("basic", "matmul", a, b)
    assert seen == [4, 2] and fake.sets == [2, 4]   # two threads for the call, the four restored
    with polyeng.num_threads(8):
        run("basic", "matmul", a, b)
    assert seen == [4, 2, 4] and fake.sets == [2, 4]   # never above the count OpenBLAS had


@pytest.mark.parametrize("a, b", [
    (ones(64, 64), ones(64, 64)),    # 262144: OpenBLAS keeps products up to this on one thread
    (ones(1, 96), ones(96, 95)),     # 9120, a row: gemv stays on one thread below 9216
    (ones(96), ones(96, 95)),
])
def test_products_openblas_keeps_serial_set_nothing(fake, a, b):
    run("basic", "matmul", a, b)
    assert fake.sets == []


def _loop_products(monkeypatch, engine, own):
    """NUMBA's recurrent loop on OpenBLAS's products (``own`` False: ``_small_gemm`` not wanted) or
    on ``_small_gemm``'s (skipped where this CPU does not take them)."""
    if engine != "numba":
        return
    from polyeng.backends.numba import _recurrence_loop, _small_gemm
    if own and not _small_gemm.wanted():
        pytest.skip("the loop makes its own products only on CPUs with AVX2 and FMA and without AVX-512")
    if not own:
        monkeypatch.setattr(_small_gemm, "wanted", lambda: False)
    _recurrence_loop._gemm_choice.cache_clear()   # the choice is kept per dtype, parts and gates
    monkeypatch.setattr(_recurrence_loop, "_gemm_choice", _recurrence_loop._gemm_choice.__wrapped__)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", [8, 1])   # batch 1: every product has a single row
def test_lstm_runs_its_small_products_on_one_thread(fake, monkeypatch, engine, batch):
    _loop_products(monkeypatch, engine, own=False)
    rng = np.random.default_rng(0)
    hidden = 128
    x = rng.standard_normal((16, batch, 64)).astype(np.float32)
    params = [tuple((rng.standard_normal(s) * 0.1).astype(np.float32)
                    for s in ((4 * hidden, 64), (4 * hidden, hidden), (4 * hidden,), (4 * hidden,)))]
    expected = run("basic", "lstm", x, params) if engine != "basic" else None
    fake.sets.clear()
    seen = spy_on_matmul(monkeypatch, fake.get)
    y, _ = run(engine, "lstm", x, params)
    assert fake.sets and fake.sets == [1, 4] * (len(fake.sets) // 2)   # projection, then the steps
    assert fake.threads == 4
    assert set(seen) <= {1}   # NUMBA's products go through np.matmul; BASIC's through `@`
    if expected is not None:
        np.testing.assert_allclose(y, expected[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [8, 1])
def test_an_lstm_loop_on_its_own_products_leaves_openblas_count_alone(fake, monkeypatch, batch):
    """It calls no OpenBLAS: setting the count and back would only start OpenBLAS's threads."""
    if "numba" not in ENGINES:
        pytest.skip("numba is unavailable")
    _loop_products(monkeypatch, "numba", own=True)
    rng = np.random.default_rng(0)
    hidden = 128   # 4 parts of 32 units: whole blocks of 16 gate columns
    x = rng.standard_normal((16, batch, 64)).astype(np.float32)
    params = [tuple((rng.standard_normal(s) * 0.1).astype(np.float32)
                    for s in ((4 * hidden, 64), (4 * hidden, hidden), (4 * hidden,), (4 * hidden,)))]
    expected = run("basic", "lstm", x, params)
    fake.sets.clear()
    y, _ = run("numba", "lstm", x, params)
    assert fake.sets == [] and fake.threads == 4
    np.testing.assert_allclose(y, expected[0], rtol=1e-5, atol=1e-6)


def test_overlapping_small_calls_restore_the_count_once(fake):
    outer = _blas_threads.blas_threads(1 << 20)
    inner = _blas_threads.blas_threads(1 << 20)
    with outer:
        with inner:
            assert fake.threads == 1
        assert fake.threads == 1   # the outer block still runs
    assert fake.threads == 4 and fake.sets == [1, 4]


def test_small_calls_in_two_threads_restore_the_count_once(fake):
    # the count is process-wide: thread A leaves while B is still inside, so B must keep 1
    # and the 4 they both found must come back when B leaves (not the 1 that B found set)
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with _blas_threads.blas_threads(1 << 20):
            a_inside.set()
            b_inside.wait(10)
        a_left.set()

    def second():
        a_inside.wait(10)
        with _blas_threads.blas_threads(1 << 20):
            b_inside.set()
            a_left.wait(10)
            seen.append(fake.threads)
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == [1] and fake.threads == 4 and fake.sets == [1, 4]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_during_another_threads_small_call_restores_the_count_in_the_child(fake):
    inside, release = threading.Event(), threading.Event()

    def hold():
        with _blas_threads.blas_threads(1 << 20):
            inside.set()
            release.wait(10)
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(10) and fake.threads == 1
        pid = os.fork()
        if pid == 0:   # the child has no holder to restore the count
            with _blas_threads.blas_threads(1 << 20):
                ok = fake.threads == 1
            os._exit(0 if ok and fake.threads == 4 and not _blas_threads._active else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join(10)
    assert os.waitstatus_to_exitcode(status) == 0 and fake.threads == 4


def test_nothing_is_set_without_openblas(monkeypatch):
    monkeypatch.setattr(_blas_threads, "_controls", ())
    assert _blas_threads.blas_threads(1 << 20) is _blas_threads._NOTHING
    np.testing.assert_array_equal(run("basic", "linear", ones(128, 192), ones(192, 192)), np.full((128, 192), 192))


def test_another_blas_or_no_library_is_left_alone(monkeypatch):
    config = {"Build Dependencies": {"blas": {"name": "accelerate"}}}
    monkeypatch.setattr(np.__config__, "CONFIG", config, raising=False)
    monkeypatch.setattr(_blas_threads, "_controls", None)
    assert _blas_threads._find_controls() == () and _blas_threads._controls == ()
    assert _blas_threads.blas_info() is None


class FakeLibrary:
    def __init__(self, internal_api, threading_layer):
        self.internal_api, self.threading_layer = internal_api, threading_layer
        self.get_num_threads, self.set_num_threads = (lambda: 3), (lambda n: None)


@pytest.mark.parametrize("library, found", [
    (FakeLibrary("openblas", "pthreads"), True),
    (FakeLibrary("openblas", "openmp"), False),   # its count is per OpenMP thread
    (FakeLibrary("mkl", "intel"), False),
])
def test_threadpoolctl_finds_the_library_polyeng_may_drive(monkeypatch, library, found):
    import threadpoolctl

    class Controller:
        def select(self, **kwargs):
            assert kwargs == {"user_api": "blas"}
            return type("Selected", (), {"lib_controllers": [library]})()
    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Controller)
    monkeypatch.setattr(np.__config__, "CONFIG", {"Build Dependencies": {"blas": {"name": "scipy-openblas"}}},
                        raising=False)
    monkeypatch.setattr(_blas_threads, "_controls", None)
    assert bool(_blas_threads._find_controls()) is found


def test_the_real_library_is_found_and_reported():
    monkey = _blas_threads._controls
    try:
        _blas_threads._controls = None
        info = _blas_threads.blas_info()
    finally:
        _blas_threads._controls = monkey
    assert info is not None and info["library"] == "openblas" and info["threads"] >= 1


@pytest.mark.parametrize("at", ["set", "clock"])
def test_an_interrupted_enter_of_a_timed_trial_raises_the_interrupt_and_holds_nothing(fake, monkeypatch, at):
    """A Ctrl-C raised in the enter of a timed product, where the library's count is set or where
    the trial's clock is read (Python checks for signals after a builtin's call). At "set",
    _Hold.__enter__ undoes the enter by calling __exit__() with no arguments: the trial's own
    __exit__ must not fail there, or the interrupt becomes an error a fallback catches. At "clock",
    the hold must not be counted yet, since a with statement does not call __exit__ when __enter__
    raises: it once was, and OpenBLAS stayed on one thread."""
    def interrupted(*_):
        raise KeyboardInterrupt
    if at == "set":
        monkeypatch.setattr(_blas_threads, "_controls", (fake.get, interrupted))
    else:
        monkeypatch.setattr(_blas_threads, "perf_counter", interrupted)
    monkeypatch.setattr(_blas_threads, "threads_now", lambda: 4)
    monkeypatch.setattr(_blas_threads.trials, "choose", lambda key, n: (1, True))
    with pytest.raises(KeyboardInterrupt):
        with _blas_threads.blas_threads(1 << 20, key=("matmul", (1024, 1024))):
            pass
    assert _blas_threads._active == {} and fake.threads == 4
