"""oneDNN programs in lanes (``polyeng/backends/onednn/lanes.py``) and in one compiled loop
(``_native.py``): the batch split over threads gives what the whole program and the nodes give,
for batches that split evenly or not; one thread runs the whole program in the compiled loop; a
lane's error reaches the caller; the trials keep the faster of whole and lanes; a forked child
runs lanes of its own; and without the compiled loop the lanes run from Python."""
from __future__ import annotations

import os

import numpy as np
import pytest

import polyeng
from polyeng.engine import thread_trials
from polyeng.graph import fuse, trace

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available,
                                reason="onednn is unavailable")

RNG = np.random.default_rng(5)


def _w(cout, cin, k, scale=0.2):
    return (RNG.standard_normal((cout, cin, k, k)) * scale).astype(np.float32)


W1, B1, W_DW, W_SE, W2 = _w(16, 3, 3), RNG.standard_normal(16).astype(np.float32), _w(16, 1, 3), _w(16, 16, 1), \
    _w(16, 16, 3, 0.05)


def net(x):
    """A stem, a depthwise convolution, squeeze-excite, a residual, pooling and a mean (two outputs)."""
    y = polyeng.relu(polyeng.conv2d(x, W1, B1, stride=2, padding=1))
    y = polyeng.hardswish(polyeng.conv2d(y, W_DW, groups=16, padding=1))
    e = polyeng.sigmoid(polyeng.conv2d(polyeng.mean(y, axis=(2, 3), keepdims=True), W_SE))
    y = polyeng.mul(y, e)
    y = polyeng.add(polyeng.conv2d(y, W2, padding=1), y)
    y = polyeng.max_pool2d(y, 2)
    return polyeng.mean(y, axis=(2, 3)), y


def _x(n):
    return RNG.standard_normal((n, 3, 18, 22)).astype(np.float32)


def _planned(n):
    """(x of batch ``n``, the traced and fused graph after its first run on x: planned)."""
    x = _x(n)
    g = fuse(trace(net, x))
    g(x)
    return x, g


def _nodes(x):
    return fuse(trace(net, x), disable="onednn_programs")(x)


def close(got, want, tol=2e-5):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.max(np.abs(w))), 1e-30)
        assert float(np.max(np.abs(g.astype(np.float64) - w))) <= tol * scale


@pytest.fixture
def lanes(monkeypatch):
    """The lanes module with fresh trials, on a budget of two threads and two cores;
    ``module.taken`` lists the lane counts of the runs in lanes that gave results."""
    from polyeng.backends.onednn import lanes as module
    monkeypatch.setattr(module, "trials", thread_trials.Trials(warmup=module.LANE_WARMUP))
    monkeypatch.setattr(module, "threads_now", lambda: 2)
    monkeypatch.setattr(module, "get_num_threads", lambda: 2)
    monkeypatch.setattr(module, "available_cores", lambda: 2)
    taken = []
    real = module.Lanes._in_lanes

    def spy(self, lanes_, arrays, threads):
        out = real(self, lanes_, arrays, threads)
        if out is not None:
            taken.append(len(lanes_))
        return out
    monkeypatch.setattr(module.Lanes, "_in_lanes", spy)
    monkeypatch.setattr(module, "taken", taken, raising=False)
    return module


def _needs_worker():
    """Skips the test where the compiled lane worker is not available (llvmlite or POSIX semaphores
    wanting: lanes then run on Python threads, which the other tests cover)."""
    from polyeng.backends.onednn import _lane_worker
    if not _lane_worker.available():
        pytest.skip("the lane worker's loop does not compile here")


def _choose(monkeypatch, module, lanes_wanted: bool):
    monkeypatch.setattr(module.trials, "choose", lambda key, n: (n if lanes_wanted else 1, False))


def _program(g):
    plan = g._compiled().plans[next(iter(g._compiled().plans))]
    from polyeng.graph.segments import Segment
    found = [e for e in plan if type(e) is Segment]
    assert found, "no program was planned"
    return found[0].program


@pytest.mark.parametrize("n", [2, 3, 5])
def test_lanes_give_what_the_whole_program_and_the_nodes_give(lanes, monkeypatch, n):
    x, g = _planned(n)
    _choose(monkeypatch, lanes, True)
    in_lanes = g(x)
    assert lanes.taken == [2]
    program = _program(g)
    assert type(program).__name__ == "Lanes" and program.batch == n
    assert [(start, stop) for start, stop, _ in program._lanes[2]] == [(0, (n + 1) // 2), ((n + 1) // 2, n)]
    _choose(monkeypatch, lanes, False)
    whole = g(x)
    close(in_lanes, whole, 1e-6)
    close(in_lanes, _nodes(x))


def test_one_thread_runs_the_whole_program_in_the_compiled_loop(lanes, monkeypatch):
    from polyeng.backends.onednn import _native
    monkeypatch.setattr(lanes, "threads_now", lambda: 1)
    ran = []
    real = _native.Native.run
    monkeypatch.setattr(_native.Native, "run", lambda self, arrays: ran.append(self) or real(self, arrays))
    for n in (1, 4):
        x, g = _planned(n)
        got = g(x)
        assert ran and all((t == 1) for t in ran[-1].threads) and lanes.taken[-1] == 1
        close(got, _nodes(x))


def test_without_the_compiled_loop_lanes_run_from_python(lanes, monkeypatch):
    from polyeng.backends.onednn import _native
    monkeypatch.setattr(_native, "_loop", {"error": "no loop here"})
    assert not _native.available()
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    close(g(x), _nodes(x))
    assert lanes.taken == [2]


@pytest.mark.parametrize("worker", ["compiled", "python"])
def test_a_lane_that_raises_raises_in_the_caller_and_the_next_run_is_whole(lanes, monkeypatch, worker):
    from polyeng.backends.onednn import _lane_worker, segment
    if worker == "compiled":
        _needs_worker()
    if worker == "python":
        monkeypatch.setattr(_lane_worker, "available", lambda: False)
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    g(x)   # builds the lanes
    program = _program(g)
    second = program._lanes[2][1][2]
    name = "native_task" if worker == "compiled" else "run"   # how the other thread's lane starts
    real = getattr(segment.Program, name)

    def failing(self, *args):
        if self is second:
            raise RuntimeError("lane failed")
        return real(self, *args)
    monkeypatch.setattr(segment.Program, name, failing)
    with pytest.raises(RuntimeError, match="lane failed"):
        g(x)
    monkeypatch.setattr(segment.Program, name, real)
    del lanes.taken[:]
    close(g(x), _nodes(x))   # the lanes' locks were released
    assert lanes.taken == [2]


def test_a_lane_worker_failing_an_execution_names_it_and_the_next_run_stands(lanes, monkeypatch):
    from polyeng.backends.onednn import _lib, _native, _native_loops
    _needs_worker()
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    want = g(x)
    nothing = np.zeros(64, np.uint64)   # null memory handles: oneDNN turns the first binding down
    real = _native.Native.row

    def bad_row(self, pointers, out):
        real(self, pointers, out)
        out[_native_loops.BOUND] = nothing.ctypes.data
    monkeypatch.setattr(_native.Native, "row", bad_row)
    with pytest.raises(_lib.OneDNNError, match="dnnl_memory_set_data_handle"):
        g(x)
    monkeypatch.setattr(_native.Native, "row", real)
    del lanes.taken[:]
    got = g(x)
    assert lanes.taken == [2] and all(np.array_equal(a, b) for a, b in zip(got, want))


def test_a_lane_thread_that_ends_leaves_its_lanes_to_python_threads_then_is_replaced(lanes, monkeypatch):
    from polyeng.backends.onednn import _lane_worker, _native_loops
    _needs_worker()
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    want = g(x)
    compiled = _native_loops.functions()
    real = compiled["serve"]

    def broken(*args):
        raise RuntimeError("the loop failed")
    monkeypatch.setitem(compiled, "serve", broken)
    monkeypatch.setattr(_lane_worker, "_workers", [])
    worker = _lane_worker.workers(1)[0]
    worker.thread.join(10)
    assert isinstance(worker.failed, RuntimeError)
    with pytest.raises(RuntimeError, match="lane thread failed"):
        worker.post([])
    del lanes.taken[:]
    got = g(x)   # on a Python thread
    assert lanes.taken == [2] and all(np.array_equal(a, b) for a, b in zip(got, want))
    monkeypatch.setitem(compiled, "serve", real)
    fresh = _lane_worker.workers(1)[0]
    assert fresh is not worker and fresh.failed is None
    close(g(x), want, 1e-6)


def _alternating(n):
    """Two inputs of batch n, so that a run reading a buffer another run left finds other values."""
    return [_x(n), _x(n)]


def test_a_signal_as_a_lane_is_posted_leaves_the_worker_waited_for(lanes, monkeypatch):
    """CPython runs signal handlers as a C call returns: a KeyboardInterrupt raised as the post
    returns must still find the caller waiting for that lane, and later runs right."""
    from polyeng.backends.onednn import _lane_worker, _native_loops
    _needs_worker()
    _choose(monkeypatch, lanes, True)
    xs = _alternating(4)
    g = fuse(trace(net, xs[0]))
    g(xs[0])
    wants = [g(x) for x in xs]
    compiled = _native_loops.functions()
    real = compiled["post"]

    def post_then_interrupt(*args):
        real(*args)
        raise KeyboardInterrupt
    monkeypatch.setitem(compiled, "post", post_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        g(xs[0])
    monkeypatch.setitem(compiled, "post", real)
    worker = _lane_worker.workers(1)[0]
    assert worker._done[0] == worker._posted[0]
    del lanes.taken[:]
    for i in range(20):
        got = g(xs[i % 2])
        assert all(np.array_equal(a, b) for a, b in zip(got, wants[i % 2]))
    assert lanes.taken == [2] * 20


def test_a_signal_as_a_python_lane_thread_is_waited_for_does_not_lose_its_end(lanes, monkeypatch):
    from polyeng.backends.onednn import _lane_worker
    monkeypatch.setattr(_lane_worker, "available", lambda: False)
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    want = g(x)
    interrupts = [1]

    class Interrupted(lanes._Done):
        __slots__ = ()

        def wait(self):
            super().wait()
            if interrupts:   # as if the signal came as the lane's end was taken
                interrupts.pop()
                raise KeyboardInterrupt
    monkeypatch.setattr(lanes, "_Done", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        g(x)   # waits again after the signal, and returns
    del lanes.taken[:]
    close(g(x), want, 1e-6)
    assert lanes.taken == [2]


def test_lane_workers_start_before_anything_asked_whether_they_are_available(tmp_path):
    """``workers`` first in a process: it finds the compiled functions itself (it held the lock
    that finding them takes, and hung)."""
    import subprocess
    import sys
    _needs_worker()
    script = tmp_path / "first.py"
    script.write_text("from polyeng.backends.onednn import _lane_worker\n"
                      "print('workers', len(_lane_worker.workers(1)))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "workers 1" in done.stdout, done.stderr[-2000:]


def test_a_lock_left_held_by_a_signal_keeps_other_threads_off_not_the_thread_that_ran(lanes, monkeypatch):
    """A KeyboardInterrupt raised as a lock's acquire returns skips the try that releases it: the
    program's and the lanes' locks are reentrant, so the thread that ran them runs them again."""
    import threading
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    want = g(x)
    program = _program(g)
    locks = [program._lock, program.whole.lock] + [p.lock for _, _, p in program._lanes[2]]
    for lock in locks:   # left held, as by such an exception
        assert lock.acquire(blocking=False)
    del lanes.taken[:]
    close(g(x), want, 1e-6)
    assert lanes.taken == [2]
    other = []
    thread = threading.Thread(target=lambda: other.append(g(x)))
    thread.start()
    thread.join(60)
    close(other[0], _nodes(x))   # another thread: the nodes
    for lock in locks:
        lock.release()


def test_a_lane_worker_waited_for_twice_returns_at_once():
    """A wait that a signal handler's exception cut short after the task was taken (the caller
    waits again) must not wait for a task that was never posted."""
    from polyeng.backends.onednn import _lane_worker
    _needs_worker()
    worker = _lane_worker.workers(1)[0]
    with worker.lock:
        worker.post([])
        worker.wait()
        worker.wait()
        assert worker.statuses() == [] and worker._done[0] == worker._posted[0]


def test_the_trials_keep_the_faster_of_the_lanes_and_the_compiled_loop_on_one_thread(lanes, monkeypatch):
    x, g = _planned(4)
    program = _program(g)
    clock = [0.0]
    monkeypatch.setattr(lanes, "perf_counter", lambda: clock[0])
    real_lanes = type(program)._in_lanes

    def timed_lanes(self, lanes_, arrays, threads):   # two lanes take 3 s on this clock, one lane 1 s
        clock[0] += 3.0 if len(lanes_) > 1 else 1.0
        return real_lanes(self, lanes_, arrays, threads)
    monkeypatch.setattr(type(program), "_in_lanes", timed_lanes)
    for _ in range(lanes.LANE_WARMUP + 2 * thread_trials.TRIALS + 1):
        g(x)
    trial = lanes.trials._trials[(id(program), 2)]
    assert trial.chosen == 1   # the whole program in the compiled loop
    assert trial.best_one == 1.0 and trial.best_budget == 3.0
    # the second trial (the compiled loop against the whole program on the budget) starts now
    assert (id(program), 2, "whole") in lanes.trials._trials


def test_without_lanes_the_trials_keep_the_faster_of_the_compiled_loop_and_the_whole_program(lanes, monkeypatch):
    x, g = _planned(4)
    program = _program(g)
    monkeypatch.setattr(program, "_lanes", {2: program._one})   # as where the batch does not split
    clock = [0.0]
    monkeypatch.setattr(lanes, "perf_counter", lambda: clock[0])
    real_lanes, real_whole = type(program)._in_lanes, program.whole.run

    def slow_loop(self, lanes_, arrays, threads):   # the compiled loop takes 3 s on this clock, whole 1 s
        clock[0] += 3.0
        return real_lanes(self, lanes_, arrays, threads)
    monkeypatch.setattr(type(program), "_in_lanes", slow_loop)

    def whole(arrays, *rest):   # on its own (not in a lane): 1 s
        if not rest:
            clock[0] += 1.0
        return real_whole(arrays, *rest)
    monkeypatch.setattr(program.whole, "run", whole)
    for _ in range(lanes.LANE_WARMUP + 2 * thread_trials.TRIALS + 1):
        got = g(x)
    trial = lanes.trials._trials[(id(program), 2, "whole")]
    assert trial.chosen == 2   # the whole program, each primitive on the budget
    assert trial.best_one == 3.0 and trial.best_budget == 1.0
    close(got, _nodes(x))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_lanes_of_its_own(lanes, monkeypatch):
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    want = g(x)   # lanes, with a lane thread in this process
    pid = os.fork()
    if pid == 0:
        try:
            del lanes.taken[:]
            got = g(x)
            ok = lanes.taken == [2] and all(np.array_equal(a, b) for a, b in zip(got, want))
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_failed_execution_in_the_compiled_loop_names_its_status(lanes, monkeypatch):
    from polyeng.backends.onednn import _lib, _native
    if not _native.available():
        pytest.skip("llvmlite cannot compile the loop here")
    monkeypatch.setattr(lanes, "threads_now", lambda: 1)
    x, g = _planned(2)
    g(x)
    loop = dict(_native._loop)
    monkeypatch.setitem(_native._loop, "run", lambda *args: 3 * 1000 + 5)   # the third call: status 5
    with pytest.raises(_lib.OneDNNError, match="primitive execution"):
        g(x)
    monkeypatch.setattr(_native, "_loop", loop)
    del lanes.taken[:]
    close(g(x), _nodes(x))
    assert lanes.taken == [1]


def test_a_busier_machine_runs_the_lanes_of_the_budget_on_fewer_threads(lanes, monkeypatch):
    monkeypatch.setattr(lanes, "available_cores", lambda: 4)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 4)
    _choose(monkeypatch, lanes, True)
    x, g = _planned(5)
    want = _nodes(x)
    groups = []
    real = lanes._groups
    monkeypatch.setattr(lanes, "_groups", lambda l, t: groups.append(real(l, t)) or groups[-1])
    for now in (4, 3, 2):   # threads_now: the budget less the cores other processes keep busy
        monkeypatch.setattr(lanes, "threads_now", lambda n=now: n)
        close(g(x), want)
    program = _program(g)
    assert [(a, b) for a, b, _ in program._lanes[4]] == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert set(program._lanes) == {4} and lanes.taken == [4, 4, 4]   # built once, whatever the load
    sizes = [sorted(sum(b - a for a, b, _ in group) for group in run) for run in groups]
    assert sizes == [[1, 1, 1, 2], [1, 2, 2], [2, 3]]   # the largest lane first, to the least loaded


def test_a_batch_of_one_tries_the_compiled_loop_against_the_whole_program_on_the_budget(lanes, monkeypatch):
    asked = []
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: asked.append(n) or (1, False))
    x, g = _planned(1)
    close(g(x), _nodes(x))
    assert asked == [2] and lanes.taken == [1]   # one thread: the compiled loop, as one lane
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))
    close(g(x), _nodes(x))
    assert lanes.taken == [1]   # the budget: the whole program, each primitive on it (no lane)


def test_once_the_interpreter_exits_programs_run_whole(lanes, monkeypatch):
    _choose(monkeypatch, lanes, True)
    monkeypatch.setattr(lanes, "_closing", [True])
    x, g = _planned(4)
    close(g(x), _nodes(x))
    assert lanes.taken == []


def test_a_graph_run_by_an_exit_hook_gives_its_results(tmp_path):
    # hooks run last registered first: this one runs after polyeng's own
    script = tmp_path / "at_exit.py"
    script.write_text(
        "import atexit\n"
        "atexit.register(lambda: at_exit())\n"
        "import numpy as np, polyeng\n"
        "from polyeng.graph import fuse, trace\n"
        "rng = np.random.default_rng(0)\n"
        "w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.2).astype(np.float32)\n"
        "w2 = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32)\n"
        "def f(x):\n"
        "    y = polyeng.relu(polyeng.conv2d(x, w1, padding=1))\n"
        "    return polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(y, w2, padding=1)), 2)\n"
        "x = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)\n"
        "g = fuse(trace(f, x))\n"
        "def at_exit():\n"
        "    print('at exit', bool(np.allclose(g(x), want, rtol=1e-5, atol=1e-6)), flush=True)\n"
        "g(x)\n"
        "want = g(x)\n")
    import subprocess
    import sys
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "at exit True" in done.stdout, (done.returncode, done.stdout, done.stderr[-2000:])


ONEDNN_ONLY = """
import sys
import numpy as np, polyeng
from polyeng.graph import fuse, trace
from polyeng.backends.onednn import _native
rng = np.random.default_rng(0)
w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.2).astype(np.float32)
w2 = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32)
def f(x):
    y = polyeng.relu(polyeng.conv2d(x, w1, padding=1))
    return polyeng.max_pool2d(polyeng.add(polyeng.conv2d(y, w2, padding=1), y), 2)
x = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
with polyeng.compute_eng("onednn", fallback=False):
    want = fuse(trace(f, x), disable="onednn_programs")(x)
    g = fuse(trace(f, x))
    got = [g(x) for _ in range(4)]
import gc
natives = sum(isinstance(o, _native.Native) for o in gc.get_objects())
print("numba" in sys.modules, _native.available(), natives,
      all(np.allclose(r, want, rtol=1e-5, atol=1e-6) for r in got), flush=True)
"""


def test_a_process_running_only_onednn_programs_does_not_load_numba(tmp_path):
    """The programs' compiled loop is llvmlite's, not numba's: numba's import and set-up took
    longer than a CNN's whole run, and most of its memory."""
    script = tmp_path / "onednn_only.py"
    script.write_text(ONEDNN_ONLY)
    import subprocess
    import sys
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    numba_loaded, compiled, natives, right = done.stdout.split()
    assert (numba_loaded, compiled, right) == ("False", "True", "True") and int(natives) >= 1, done.stdout


def test_a_loop_that_does_not_compile_leaves_programs_to_python(lanes, monkeypatch):
    from polyeng.backends.onednn import _native

    def broken():
        def run(*args):
            raise RuntimeError("llvmlite failed")
        return run
    monkeypatch.setattr(_native, "_loop", {})
    monkeypatch.setattr(_native, "_compile", broken)
    assert not _native.available() and "llvmlite failed" in _native._loop["error"]
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    close(g(x), _nodes(x))
    assert lanes.taken == [2]


def test_while_another_thread_builds_the_lanes_a_run_takes_the_whole_program(lanes, monkeypatch):
    _choose(monkeypatch, lanes, True)
    x, g = _planned(4)
    program = _program(g)
    with program._building:   # held as another thread (or a fork's parent) would hold it
        close(g(x), _nodes(x))
    assert lanes.taken == [] and 2 not in program._lanes   # nothing cached: built on the next run
    close(g(x), _nodes(x))
    assert lanes.taken == [2]


def test_the_lanes_first_calls_are_not_timed(lanes):
    """The lanes of a new program may run at one thread's speed for their first calls (their worker
    not yet on a core of its own): the trials time none of the first ``LANE_WARMUP`` calls."""
    x, g = _planned(4)
    program = _program(g)
    for _ in range(lanes.LANE_WARMUP):
        g(x)
    trial = lanes.trials._trials[(id(program), 2)]
    assert trial.best_one == trial.best_budget == float("inf") and not trial.chosen
    assert lanes.taken and set(lanes.taken) == {2}   # the warm-up calls ran in the lanes


@pytest.mark.parametrize("form", ["slice", "split", "gather"])
def test_an_attention_unbinding_qkv_runs_in_lanes(lanes, monkeypatch, form):
    """timm's ViT permutes qkv to (3, B, H, N, D) and unbinds the 3: with the batch first again
    (the ``batch_first_unbind`` rewrite) its program splits the batch; without it, it cannot."""
    pytest.importorskip("onnxruntime")
    from test_graph_batch_first import attention, _x
    import polyeng.onnx
    model, x = attention(form), _x(4)
    g = polyeng.onnx.load(model)
    g(x)
    _choose(monkeypatch, lanes, True)
    in_lanes = g(x)
    assert lanes.taken == [2]
    assert len(_program(g)._lanes[2]) == 2
    unchanged = polyeng.onnx.load(model, disable_fusions="batch_first_unbind")
    unchanged(x)
    close([in_lanes], [unchanged(x)], 1e-6)
    assert lanes.taken == [2], "the permutation putting the batch second ran in lanes"
    assert len(_program(unchanged)._lanes[2]) == 1   # the batch does not split: one lane, the whole program


def _class_token_model(distinct_rows: bool, batch: int) -> bytes:
    """(B, 4, 8) -> (B, 5, 8): a class token concatenated before the rows, then an add, a relu and a
    product. The token is expanded to the batch from the input's shape (every image's row the
    same: a host value the program reads as a constant), or, with ``distinct_rows``, a constant
    of ``batch`` rows of its own."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((1, 5, 8)).astype(np.float32), "pos"),
             numpy_helper.from_array((rng.standard_normal((8, 8)) * 0.3).astype(np.float32), "w")]
    if distinct_rows:
        inits.append(numpy_helper.from_array(rng.standard_normal((batch, 1, 8)).astype(np.float32), "token"))
        nodes = []
    else:
        inits += [numpy_helper.from_array(rng.standard_normal((1, 1, 8)).astype(np.float32), "cls"),
                  numpy_helper.from_array(np.array([1, 8], np.int64), "rest"),
                  numpy_helper.from_array(np.array([0], np.int64), "first")]
        nodes = [helper.make_node("Shape", ["x"], ["shape"]),
                 helper.make_node("Gather", ["shape", "first"], ["b"], axis=0),
                 helper.make_node("Concat", ["b", "rest"], ["to"], axis=0),
                 helper.make_node("Expand", ["cls", "to"], ["token"])]
    nodes += [helper.make_node("Concat", ["token", "x"], ["cat"], axis=1),
              helper.make_node("Add", ["cat", "pos"], ["added"]),
              helper.make_node("Relu", ["added"], ["r"]),
              helper.make_node("MatMul", ["r", "w"], ["y"])]
    graph = helper.make_graph(nodes, "token", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("distinct_rows", [False, True])
def test_a_constant_the_same_in_every_image_is_cut_to_each_lane_and_others_are_turned_down(lanes, monkeypatch,
                                                                                         distinct_rows):
    """A ViT's class token, expanded to the batch, is the same in every image: each lane reads its
    own images' part of it. A constant whose images differ keeps the program whole."""
    ort = pytest.importorskip("onnxruntime")
    import polyeng.onnx
    x = RNG.standard_normal((5, 4, 8)).astype(np.float32)
    model = _class_token_model(distinct_rows, 5)
    g = polyeng.onnx.load(model)
    g(x)
    _choose(monkeypatch, lanes, True)
    got = g(x)
    assert len(_program(g)._lanes[2]) == (1 if distinct_rows else 2)
    assert lanes.taken == ([] if distinct_rows else [2])
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    close([got], [want], 1e-6)


def test_a_constant_whose_images_differ_only_in_the_sign_of_zero_is_not_cut():
    from types import SimpleNamespace
    from polyeng.backends.onednn.lanes import _batch_like
    step = SimpleNamespace(op="add", shape=(2, 1, 8))
    zeros = np.zeros((2, 1, 8), np.float32)
    signed = zeros.copy()
    signed[1] = -0.0
    assert not _batch_like(step, zeros)                     # every image the same: cut to each lane
    assert not _batch_like(step, np.broadcast_to(zeros[:1], zeros.shape))
    assert _batch_like(step, signed)                        # image 1's -0.0 is not image 0's 0.0
    assert _batch_like(step, RNG.standard_normal((2, 1, 8)).astype(np.float32))
