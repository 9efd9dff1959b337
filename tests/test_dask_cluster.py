"""Ops and graphs on a local dask.distributed cluster of two worker processes: the same results as
eager calls, the caller's settings on the workers, the graph sent to each worker once, and no
result lost when a worker dies in the middle of a computation."""
import os
import pickle
import threading
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

import polyeng  # noqa: E402
from dask_cases import BLAS_ROWS_EXACT, CASES, flat  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        yield c


@pytest.fixture(scope="module")
def encoder():
    onnx_loader = pytest.importorskip("polyeng.onnx")
    from polyeng import models
    return onnx_loader.load(models.path("encoder_opset17"))


def _encoder_inputs(batch, seq=16, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), bool)
    mask[:, seq - 3:] = rng.random((batch, 3)) > 0.5
    return rng.integers(0, 1000, (batch, seq)), mask


def _tasks_naming(graph, key):
    return [k for k, task in graph.items() if key in (getattr(task, "dependencies", None) or ())]


def test_every_op_family_on_the_cluster_equals_eager(client):
    want, lazy = [], []
    with polyeng.compute_eng("basic"):
        for name, fn, arrays, chunks, exact in CASES:
            want.append((name, exact, flat(fn(*arrays))))
            lazy.append(flat(fn(*[da.from_array(a, chunks=c) for a, c in zip(arrays, chunks)])))
    got = client.compute(lazy, sync=True)
    for (name, exact, wanted), computed in zip(want, got):
        for g, w in zip(computed, wanted):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            if exact:
                np.testing.assert_array_equal(g, w, err_msg=name)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("engine_name", ["numba", "opencl"])
def test_workers_make_their_own_engines(client, engine_name):
    x = np.random.default_rng(1).standard_normal((64, 40)).astype(np.float32)
    with polyeng.compute_eng(engine_name, fallback=False):
        want = polyeng.softmax(polyeng.gelu(x))
        lazy = polyeng.softmax(polyeng.gelu(da.from_array(x, chunks=(16, 40))))
    np.testing.assert_allclose(client.compute(lazy, sync=True), want, rtol=1e-6, atol=1e-7)


def test_a_bf16_matmul_computed_outside_its_mode_equals_the_eager_bf16_result(client):
    a = np.random.default_rng(2).standard_normal((48, 96)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((96, 40)).astype(np.float32)
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode("bf16"):
        lazy = polyeng.matmul(da.from_array(a, chunks=(48, 96)), b)
        eager_bf16 = polyeng.matmul(a, b)
    assert polyeng.get_fp_math_mode() == polyeng.FpMathMode.STRICT
    assert np.abs(eager_bf16 - polyeng.matmul(a, b)).max() > 1e-2
    np.testing.assert_array_equal(client.compute(lazy, sync=True), eager_bf16)


def test_bind_and_current_settings_travel_to_workers(client):
    def probe():
        return polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, polyeng.verbose and \
            __import__("polyeng.engine.verbose", fromlist=["level"]).level()
    with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"):
        bound = polyeng.bind(probe)
        settings = polyeng.current_settings()
    assert pickle.loads(cloudpickle.dumps(bound)).settings == settings
    assert client.submit(bound, pure=False).result() == ("numba", "bf16", 0)
    assert client.submit(probe, pure=False).result() == ("recommend", "strict", 0)

    def under(s):
        with s:
            return probe()
    assert client.submit(under, settings, pure=False).result() == ("numba", "bf16", 0)


def test_a_graph_runs_on_the_cluster_with_its_constants_sent_once(client, encoder):
    ids, mask = _encoder_inputs(40)
    with polyeng.compute_eng("numba"):
        want = encoder(ids, mask)
        lazy = encoder(da.from_array(ids, chunks=(8, 16)), da.from_array(mask, chunks=(8, 16)))
    assert lazy.chunks == ((8,) * 5, (16,), (128,))
    np.testing.assert_allclose(client.compute(lazy, sync=True), want, rtol=1e-6, atol=1e-6)
    # the graph is one scattered piece of data that every task names, not a part of each task
    future = encoder.__dict__["_scattered"][client.id]
    graph = dict(lazy.__dask_graph__())
    assert len(_tasks_naming(graph, future.key)) == 5   # one per chunk
    # held by the cluster after the compute (distributed's memory manager may keep only one copy)
    assert future.status == "finished" and len(client.who_has([future])[future.key]) >= 1
    tasks = cloudpickle.dumps(graph)
    assert len(tasks) < len(pickle.dumps(encoder)) / 10, (len(tasks), len(pickle.dumps(encoder)))
    # a second call sends nothing from the client again: the same scattered key
    again = encoder(da.from_array(ids[:16], chunks=(8, 16)), da.from_array(mask[:16], chunks=(8, 16)))
    assert len(_tasks_naming(dict(again.__dask_graph__()), future.key)) == 2
    assert encoder.__dict__["_scattered"][client.id] is future
    np.testing.assert_allclose(client.compute(again, sync=True), want[:16], rtol=1e-6, atol=1e-6)


def test_a_graph_whose_scattered_copy_is_gone_is_scattered_again(client, encoder):
    ids, mask = _encoder_inputs(8)
    want = encoder(ids, mask)
    first = encoder(da.from_array(ids, chunks=(4, 16)), da.from_array(mask, chunks=(4, 16)))
    old = encoder.__dict__["_scattered"][client.id]
    client.cancel(old)   # as if the workers holding it had died
    lazy = encoder(da.from_array(ids, chunks=(4, 16)), da.from_array(mask, chunks=(4, 16)))
    new = encoder.__dict__["_scattered"][client.id]
    assert new.key != old.key and new.status == "finished"
    assert _tasks_naming(dict(lazy.__dask_graph__()), new.key)
    assert not _tasks_naming(dict(lazy.__dask_graph__()), old.key)
    np.testing.assert_allclose(client.compute(lazy, sync=True), want, rtol=1e-6, atol=1e-6)
    del first


def test_a_worker_killed_mid_computation_loses_nothing(client, encoder):
    ids, mask = _encoder_inputs(320, seq=32, seed=4)
    with polyeng.compute_eng("basic"):
        want = encoder(ids, mask)
        lazy = encoder(da.from_array(ids, chunks=(16, 32)), da.from_array(mask, chunks=(16, 32)))
    workers = list(client.scheduler_info()["workers"])
    future = client.compute(lazy)

    def finished(dask_scheduler):
        return sum(ts.state == "memory" and str(ts.key).find("polyeng-graph-output") >= 0
                   for ts in dask_scheduler.tasks.values())
    deadline = time.monotonic() + 60
    while client.run_on_scheduler(finished) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    done_before = client.run_on_scheduler(finished)
    assert 2 <= done_before < 20 and not future.done(), done_before   # killed mid-way
    def die_soon():   # returns first, so the call is answered; the process then ends at once
        threading.Timer(0.05, os._exit, (1,)).start()
    client.run(die_soon, workers=[workers[0]])
    got = future.result(timeout=180)
    assert workers[0] not in client.scheduler_info()["workers"]   # it did die
    assert got.shape == (320, 32, 128)
    if BLAS_ROWS_EXACT:   # every block's products are the whole call's rows (see dask_cases)
        np.testing.assert_array_equal(got, want)
    else:   # a lost or doubled block would be far off; f32 rounding of another summation order is not
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    client.wait_for_workers(2, timeout=120)   # the nanny restarted it, for the tests after this one


@pytest.mark.parametrize("n", [1, 2])   # on 2 cores: BLAS not on 1 thread, numba not on one per core
def test_local_cluster_shares_the_cores_out_and_keeps_glibc_s_mmap_threshold(monkeypatch, n):
    from polyeng.dask.cluster import local_cluster, worker_threads
    # as a cluster started earlier with distributed's defaults leaves the parent's environment
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("POLYENG_NUM_THREADS", raising=False)
    ours = ("MALLOC_TRIM_THRESHOLD_", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
    before = {name: os.environ.get(name) for name in ours}

    def worker_state():
        import numba

        import polyeng
        from polyeng.backends import _blas_threads
        from polyeng.backends.numba._runtime import start_pool
        wait = start_pool()["wait"]   # first: numba.get_num_threads() would start numba's pool itself
        controls = _blas_threads._find_controls()
        return (numba.get_num_threads(), controls[0]() if controls else None,
                os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS"),
                polyeng.get_num_threads(), wait)
    with local_cluster(n) as cluster, distributed.Client(cluster) as c:
        assert {name: os.environ.get(name) for name in ours} == before   # the parent's, as it was
        threads = worker_threads(n)
        assert threads == max(1, len(os.sched_getaffinity(0)) // n)
        c.wait_for_workers(n, timeout=60)
        states = list(c.run(worker_state).values())
        blas = states[0][1]
        assert states == [(threads, blas, None, str(threads), threads,
                           "PASSIVE: workers sleep between kernels")] * n
        assert blas in (None, threads)   # None: numpy's BLAS is not OpenBLAS
        assert c.submit(worker_state, pure=False).result()[0] == threads   # in the task thread too
    assert worker_threads(10 ** 6) == 1


def test_a_local_worker_outlives_ctrl_c_and_logs_no_errors_after_it():
    """Ctrl-C reaches a terminal's whole group; a worker goes on, and what it would log while the
    cluster closes (a heartbeat to a scheduler already gone) is not printed."""
    import logging
    import signal

    from polyeng.dask.cluster import local_cluster

    def disabled():
        return logging.root.manager.disable
    with local_cluster(1) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(1, timeout=60)
        (address, pid), = c.run(os.getpid).items()
        assert c.run(disabled) == {address: 0}
        os.kill(pid, signal.SIGINT)
        time.sleep(0.5)
        assert c.run(disabled) == {address: logging.ERROR}
        assert c.submit(lambda x: x + 1, 1).result(timeout=60) == 2
