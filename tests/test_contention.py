"""Small NUMBA calls stay on the calling thread: a parallel launch wakes numba's worker
threads, which on a busy machine wait for a core (milliseconds per call) and then keep
spinning on it. Speed itself is measured by ``benchmarks/contention.py``."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
import numba  # noqa: E402

from polyeng.backends.numba import _runtime  # noqa: E402

# Every example call of polyeng.examples (outputs under 1 KB) on NUMBA, then one large call.
# The OpenMP layer starts its worker threads at the first launch that asks for more than one
# thread, so the process's thread count tells whether any small call went parallel.
PROBE = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import numba
    import polyeng
    from polyeng.examples import example_calls

    def threads():
        return len(os.listdir("/proc/self/task"))

    from polyeng.engine import threads as policy
    policy._others_running = lambda: 0   # the large call below goes parallel however busy the machine is
    numba.get_num_threads()   # loads the threading layer
    calls = example_calls()
    for op in sys.argv[1:]:
        del calls[op]
    counts = {"start": threads()}
    with polyeng.compute_eng("numba", fallback=False):
        for op, (args, kwargs) in calls.items():
            getattr(polyeng, op)(*args, **kwargs)
            counts[op] = threads()
        polyeng.softmax(np.zeros((256, 1024), np.float32))   # 1 MB out: parallel
    counts["large"] = threads()
    print(json.dumps({"layer": numba.threading_layer(), "threads": counts}))
''')


def _omp_available():
    try:
        from numba.np.ufunc import omppool  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="thread count read from /proc (Linux)")
@pytest.mark.skipif(not _omp_available(), reason="numba's omp threading layer is not available")
def test_small_calls_start_no_worker_threads(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = dict(os.environ, NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["layer"] == "omp"
    counts = result["threads"]
    start = counts.pop("start")
    large = counts.pop("large")
    assert {op: n for op, n in counts.items() if n != start} == {}, counts
    assert large > start   # the probe sees the pool when it does start


def test_a_recurrence_too_small_for_threads_leaves_openblas_count_alone():
    # its products are each within OpenBLAS's own serial limit, so the loop holds no count: setting
    # it back afterwards started OpenBLAS's worker threads (one more thread after a small gru call)
    from polyeng.backends import _blas_threads
    from polyeng.backends.numba import _gemm
    assert _gemm.PARALLEL_WORK <= _blas_threads._SERIAL_GEMM


def _thread_count_seen(calls):
    def kernel(fail=False):
        calls.append(numba.get_num_threads())
        if fail:
            raise RuntimeError("kernel failed")
        return "done"
    return kernel


def test_launch_runs_small_outputs_on_one_thread_and_restores_the_count(monkeypatch):
    monkeypatch.setattr(_runtime, "threads_now", lambda: numba.get_num_threads())   # the machine's load aside
    seen = []
    kernel = _thread_count_seen(seen)
    threads = numba.get_num_threads()
    assert _runtime.launch(kernel, _runtime._SERIAL_BYTES - 1) == "done"
    assert _runtime.launch(kernel, _runtime._SERIAL_BYTES) == "done"
    assert seen == [1, threads]
    with pytest.raises(RuntimeError, match="kernel failed"):
        _runtime.launch(kernel, 16, True)
    assert numba.get_num_threads() == threads


def test_launch_without_numbas_raw_controls_uses_the_public_ones(monkeypatch):
    import types

    import numba.np.ufunc
    monkeypatch.setattr(_runtime, "_controls", None)
    monkeypatch.setattr(numba.np.ufunc, "parallel", types.SimpleNamespace())   # a numba without them
    seen = []
    threads = numba.get_num_threads()
    _runtime.launch(_thread_count_seen(seen), 16)
    assert seen == [1] and numba.get_num_threads() == threads
    assert _runtime._controls == (numba.get_num_threads, numba.set_num_threads)
    monkeypatch.setattr(_runtime, "_controls", None)   # the next launch finds the raw ones again


@pytest.mark.parametrize("module, call", [
    ("activation", lambda p: p.gelu(np.ones(1000, np.float32))),
    ("normalization", lambda p: p.layer_norm(np.ones((10, 100), np.float32), 100)),
    ("softmax", lambda p: p.softmax(np.ones((10, 100), np.float32))),
    ("softmax", lambda p: p.log_softmax(np.ones((10, 20, 5), np.float32), axis=1)),
    ("pooling", lambda p: p.max_pool2d(np.ones((2, 3, 20, 20), np.float32), 3)),
    ("pooling", lambda p: p.avg_pool3d(np.ones((2, 3, 6, 8, 8), np.float32), 2)),
])
def test_parallel_kernels_go_through_launch(monkeypatch, module, call):
    import importlib

    import polyeng
    target = importlib.import_module(f"polyeng.backends.numba.{module}")
    sizes = []

    def recording(kernel, out_nbytes, *args):
        sizes.append(out_nbytes)
        return _runtime.launch(kernel, out_nbytes, *args)
    monkeypatch.setattr(target, "launch", recording)
    with polyeng.compute_eng("numba", fallback=False):
        result = call(polyeng)
    assert sizes == [np.asarray(result).nbytes]


def test_select_stays_on_basic_while_numbas_kernel_would_run_serially():
    # NUMBA's serial select lost to np.where at every size measured (benchmarks/contention.py)
    import polyeng
    shape = (2, 12, 32, 32)   # 96 KB of f32 output
    cond = np.ones(shape, bool)
    then = np.ones(shape, np.float32)
    assert polyeng.explain("select", cond, then, np.zeros((1, 1, 1, 32), np.float32)).engine == "basic"
    big = (8, 12, 32, 64)   # 768 KB: the parallel kernel
    assert polyeng.explain("select", np.ones(big, bool), np.ones(big, np.float32), np.float32(0)).engine == "numba"


def test_exact_gelu_goes_to_numba_from_512_elements():
    import polyeng
    from polyeng.ops import _recommend
    rule = _recommend.jit_from(512)   # gelu's rule where ONEDNN does not take the call
    assert polyeng.explain("gelu", np.ones(1 << 20, np.float32)).engine == "numba"   # above ONEDNN's range
    assert polyeng.explain("gelu", np.ones(512, np.float32)).engine == "numba"   # below ONEDNN's range
    onednn = {e.name: e for e in polyeng.engines()}["onednn"].available
    assert polyeng.explain("gelu", np.ones(1 << 14, np.float32)).engine == ("onednn" if onednn else "numba")
    with polyeng.compute_eng("numba"):
        call = polyeng.engine.dispatch.make_call(polyeng.ops.OPS["gelu"], {"x": np.ones(511, np.float32),
                                                                          "approximate": "none"})
    assert rule(call) == "basic"


def test_small_launches_size_their_tasks_for_one_thread(monkeypatch):
    monkeypatch.setattr(_runtime, "threads_now", lambda: 64)   # a budget above the pool's size
    assert _runtime.threads_for(_runtime._SERIAL_BYTES - 1) == 1
    assert _runtime.threads_for(_runtime._SERIAL_BYTES) == numba.config.NUMBA_NUM_THREADS
