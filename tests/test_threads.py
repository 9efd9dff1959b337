"""polyeng's thread policy: one budget for every pool it drives, applied per call and restored,
a user's variables winning, and numba's pool started without spinning workers. Speed itself is
measured by ``benchmarks/threads.py``, not here."""
import json
import os
import subprocess
import sys
import threading
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polyeng
from polyeng.backends import _blas_threads
from polyeng.engine import threads
from support import numba_threads

NUMBA = any(e.name == "numba" and e.available for e in polyeng.engines())
needs_numba = pytest.mark.skipif(not NUMBA, reason="numba is unavailable")
SCRUBBED = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS",
            "NUMBA_THREADING_LAYER", "POLYENG_NUM_THREADS")


def child(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter whose environment has none of the pools' variables but ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    clean.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean, capture_output=True, text=True,
                          timeout=120)


def test_the_default_budget_is_the_cores_this_process_may_use():
    out = child("import os, polyeng; print(polyeng.get_num_threads(), len(os.sched_getaffinity(0)))")
    assert out.returncode == 0, out.stderr
    budget, cores = out.stdout.split()
    assert budget == cores


def test_the_environment_variable_sets_the_default():
    out = child("import polyeng; print(polyeng.get_num_threads())", POLYENG_NUM_THREADS="1")
    assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr
    bad = child("import polyeng; polyeng.get_num_threads()", POLYENG_NUM_THREADS="lots")
    assert bad.returncode != 0 and "POLYENG_NUM_THREADS='lots' is not a number of threads" in bad.stderr


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError),
                                        ("2", TypeError), (None, TypeError)])
def test_bad_budgets_are_named(bad, error):
    with pytest.raises(error, match="n=.* is not a number of threads; expected an int >= 1"):
        polyeng.set_num_threads(bad)
    with pytest.raises(error, match="is not a number of threads"):
        polyeng.num_threads(bad)


def test_set_num_threads_sets_the_process_default_and_a_scope_overrides_it(monkeypatch):
    monkeypatch.setattr(threads, "_default", [threads._process_default()])
    polyeng.set_num_threads(3)
    assert polyeng.get_num_threads() == 3
    with polyeng.num_threads(1):
        assert polyeng.get_num_threads() == 1
        with polyeng.num_threads(2):
            assert polyeng.get_num_threads() == 2
        assert polyeng.get_num_threads() == 1
    assert polyeng.get_num_threads() == 3
    with ThreadPoolExecutor(1) as pool:   # the default holds in every thread
        assert pool.submit(polyeng.get_num_threads).result() == 3


def test_a_scope_stays_in_its_thread_and_travels_with_bind():
    barrier, seen = threading.Barrier(2), {}

    def scoped():
        with polyeng.num_threads(1):
            barrier.wait(10)
            seen["inside"] = polyeng.get_num_threads()
            barrier.wait(10)

    def other():
        barrier.wait(10)
        seen["other"] = polyeng.get_num_threads()
        barrier.wait(10)
    workers = [threading.Thread(target=scoped), threading.Thread(target=other)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(20)
    assert seen == {"inside": 1, "other": polyeng.get_num_threads()}
    with polyeng.num_threads(1):
        bound = polyeng.bind(polyeng.get_num_threads)
        assert polyeng.current_settings().num_threads == 1
    assert polyeng.current_settings().num_threads is None   # no scope: wherever it runs, its own default
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(bound).result() == 1
    import pickle
    assert pickle.loads(pickle.dumps(bound))() == 1


@needs_numba
def test_numba_kernels_run_on_the_budget_and_the_count_is_restored(monkeypatch):
    import numba
    from numba import prange

    from polyeng.backends.numba._runtime import _SERIAL_BYTES, launch

    @numba.njit(parallel=True)
    def count(out):
        for i in prange(out.size):
            out[i] = numba.get_num_threads()
    monkeypatch.setattr(threads, "_others_running", lambda: 0)   # the machine's load aside
    monkeypatch.setattr(threads, "_load", [0.0, 0])
    out = np.zeros(64, np.int64)
    before = numba.get_num_threads()
    with polyeng.num_threads(1):
        launch(count, _SERIAL_BYTES, out)
    assert set(out) == {1} and numba.get_num_threads() == before
    launch(count, 100, out)    # a small output: on the calling thread whatever the budget
    assert set(out) == {1}
    launch(count, _SERIAL_BYTES, out)
    assert set(out) == {min(threads.threads_now(), numba.config.NUMBA_NUM_THREADS)}


def test_large_products_follow_the_budget_of_the_scope(monkeypatch):
    lib = {"threads": 4, "sets": []}
    monkeypatch.setattr(_blas_threads, "_controls", (lambda: lib["threads"], lambda n: (lib["sets"].append(n),
                                                                                          lib.__setitem__("threads", n))))
    monkeypatch.setattr(_blas_threads, "threads_now", polyeng.get_num_threads)
    a, b = np.ones((2048, 64), np.float32), np.ones((64, 128), np.float32)
    with polyeng.num_threads(1), polyeng.compute_eng("basic"):
        polyeng.matmul(a, b)
    assert lib["sets"] == [1, 4] and lib["threads"] == 4


def test_a_busy_machine_gets_fewer_threads(monkeypatch):
    monkeypatch.setattr(threads, "_machine_cores", lambda: 4)
    monkeypatch.setattr(threads, "_load", [0.0, 0])
    for others, expected in ((0, 4), (1, 3), (3, 1), (9, 1)):
        monkeypatch.setattr(threads, "_others_running", lambda n=others: n)
        threads._load[0] = 0.0   # read the load again
        with polyeng.num_threads(4):
            assert threads.threads_now() == expected
    with polyeng.num_threads(2):   # within the budget: 3 free cores do not make 3 threads
        threads._load[0] = 0.0
        monkeypatch.setattr(threads, "_others_running", lambda: 1)
        assert threads.threads_now() == 2


def test_the_load_counts_other_processes_threads_not_this_ones(tmp_path):
    (tmp_path / "loadavg").write_text("1.00 0.50 0.25 5/300 12345\n")
    for tid, state in ((1, "R"), (2, "S"), (3, "R"), (4, "D")):   # two of ours run (the reader, a spinner)
        (tmp_path / "task" / str(tid)).mkdir(parents=True)
        (tmp_path / "task" / str(tid) / "stat").write_text(f"{tid} (python (a) b) {state} 1 2 3\n")
    assert threads._others_running(str(tmp_path / "loadavg"), str(tmp_path / "task")) == 3
    assert threads._others_running(str(tmp_path / "missing"), str(tmp_path / "task")) == 0   # no /proc: not busy
    (tmp_path / "loadavg").write_text("0.0 0.0 0.0 1/300 1\n")
    assert threads._others_running(str(tmp_path / "loadavg"), str(tmp_path / "task")) == 0


POOL = """
    import ctypes, json, os
    if {preload}:
        ctypes.CDLL("libgomp.so.1")   # another library started GNU OpenMP first
    import numpy as np, polyeng
    from polyeng.engine import threads
    with polyeng.compute_eng("numba", fallback=False):
        polyeng.softmax(np.ones((512, 512), np.float32))
    print(json.dumps([threads.policy()["pools"]["numba"], os.environ.get("OMP_WAIT_POLICY")]))
"""


@needs_numba
@pytest.mark.parametrize("preload, env, layer, wait", [
    (False, {}, "omp", "PASSIVE: workers sleep between kernels"),
    (False, {"OMP_WAIT_POLICY": "ACTIVE"}, "omp", "OMP_WAIT_POLICY=ACTIVE (set by the user)"),
    (True, {}, "workqueue", "the workqueue layer does not spin (libgomp was loaded before)"),
    (True, {"NUMBA_THREADING_LAYER": "omp"}, "omp", None),
])
def test_numba_s_pool_starts_without_spinning_workers_unless_the_user_chose(preload, env, layer, wait):
    import json
    out = child(POOL.format(preload=preload), **env)
    assert out.returncode == 0, out.stderr
    pool, left = json.loads(out.stdout.strip().splitlines()[-1])
    assert pool["layer"] == layer and pool["size"] == len(os.sched_getaffinity(0)) or "NUMBA_NUM_THREADS" in env
    if wait is not None:
        assert pool["wait"] == wait
    assert left == env.get("OMP_WAIT_POLICY")   # the environment as the user left it
    assert pool["set_by_user"] == (", ".join(sorted(env)) or "nothing")


def test_info_shows_the_policy():
    out = subprocess.run([sys.executable, "-m", "polyeng", "info"], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k not in SCRUBBED})
    assert out.returncode == 0, out.stderr
    section = out.stdout.split("threads:\n", 1)[1]
    assert f"budget:         {len(os.sched_getaffinity(0))} (default" in section
    assert "BLAS:           openblas" in section and "small products on 1, large on the budget, matmul and linear on the faster of the two" in section
    if NUMBA:
        assert "numba:          omp layer" in section and "PASSIVE: workers sleep between kernels" in section


def test_a_failed_blas_count_change_leaves_nothing_held(monkeypatch):
    state = {"threads": 4, "fail": True}

    def set_(n):
        if state["fail"]:
            state["fail"] = False
            raise KeyboardInterrupt   # landed as the count was being set
        state["threads"] = n
    monkeypatch.setattr(_blas_threads, "_controls", (lambda: state["threads"], set_))
    with pytest.raises(KeyboardInterrupt):
        with _blas_threads.blas_threads(1 << 20):
            pass
    assert not _blas_threads._active and state["threads"] == 4
    monkeypatch.setattr(_blas_threads, "threads_now", lambda: 4)
    with _blas_threads.blas_threads(1 << 30):   # a large product gets its threads again
        assert state["threads"] == 4


@needs_numba
def test_numba_set_num_threads_of_the_user_caps_a_launch(monkeypatch):
    import numba
    from numba import prange

    from polyeng.backends.numba._runtime import _SERIAL_BYTES, launch

    @numba.njit(parallel=True)
    def count(out):
        for i in prange(out.size):
            out[i] = numba.get_num_threads()
    monkeypatch.setattr(threads, "threads_now", lambda: 64)
    out = np.zeros(8, np.int64)
    with numba_threads(1):
        launch(count, _SERIAL_BYTES, out)
    assert set(out) == {1}


def test_a_pool_started_under_a_narrower_affinity_reports_its_real_size():
    code = """
        import os, json
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        import numba
        os.sched_setaffinity(0, set(range(os.cpu_count())))
        from polyeng.backends.numba._runtime import start_pool
        from numba.np.ufunc import parallel
        print(json.dumps([start_pool()["size"], parallel.NUM_THREADS, numba.get_num_threads()]))
    """
    out = child(code)
    assert out.returncode == 0, out.stderr
    size, pool, current = json.loads(out.stdout.strip().splitlines()[-1])
    assert size == pool == current
