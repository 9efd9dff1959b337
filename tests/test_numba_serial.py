"""A small NUMBA launch on numba's workqueue layer runs a serial compile of its kernel
(``backends/numba/_runtime.serial``): the layer hands even one thread's work to a worker it
wakes. The serial compile gives what the parallel kernel gives, bit for bit, for every op."""
import numpy as np
import pytest

import polyeng
from polyeng.backends.numba import _runtime
from polyeng.examples import example_calls

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["numba"].available,
                                reason="numba is unavailable")


# the ops whose 16-bit storage launches Python functions that split their own work (``_gemm``)
SIXTEEN_BIT_OPS = {"linear", "matmul", "lstm", "gru", "conv1d", "conv2d", "layer_norm", "softmax"}


def _as_arrays(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _as_arrays(r)]
    return [np.asarray(result)]


def _run_all(calls):
    out = {}
    with polyeng.compute_eng("numba", fallback=False):
        for op, (args, kwargs) in calls.items():
            out[op] = _as_arrays(getattr(polyeng, op)(*args, **kwargs))
    return out


# the f32 ops whose NUMBA kernels are not ``jit(parallel=True)`` launches: the products and
# convolutions split their own work around BLAS, reshape is a view
NO_PARALLEL_KERNEL = {"conv1d", "conv2d", "matmul", "linear", "reshape"}


def _examples(dtype):
    from polyeng.engine import dtypes as dt
    return example_calls(np.random.default_rng(0), dt.as_dtype(dtype))


def _serial_gives_the_same_bits(monkeypatch, calls) -> list:
    """Runs ``calls`` with their parallel kernels, then on the workqueue layer (their serial
    compiles), checks the results are the same bits, and returns the kernels that went serial."""
    parallel = _run_all(calls)
    _runtime._thread_count_controls()   # the pool started, its layer recorded
    monkeypatch.setitem(_runtime._pool, "layer", "workqueue")
    ran = []
    real = _runtime.serial
    monkeypatch.setattr(_runtime, "serial", lambda kernel: ran.append(kernel) or real(kernel))
    serial = _run_all(calls)
    assert all(_runtime._is_parallel(k) for k in ran)
    for op in calls:
        assert len(serial[op]) == len(parallel[op])
        for a, b in zip(serial[op], parallel[op]):
            assert a.dtype == b.dtype and a.shape == b.shape, op
            assert np.array_equal(a, b, equal_nan=True) or np.array_equal(a.view(np.uint8), b.view(np.uint8)), op
    return ran


# one test per op, so that the serial compiles (minutes, cold) spread over the suite's workers
@pytest.mark.parametrize("op", list(_examples("float32")))
def test_small_launches_on_the_workqueue_layer_run_serial_compiles_that_give_the_same_bits(monkeypatch, op):
    ran = _serial_gives_the_same_bits(monkeypatch, {op: _examples("float32")[op]})
    assert bool(ran) == (op not in NO_PARALLEL_KERNEL), f"{op}: serial kernels {ran}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_storage_keeps_the_usual_path_where_products_split_their_own_work(monkeypatch, dtype):
    """16-bit storage, whose products launch Python functions that split their own work
    (``_gemm.gemv``), which keep the usual path; each other kernel's compile is f32's, widened."""
    calls = {op: call for op, call in _examples(dtype).items() if op in SIXTEEN_BIT_OPS}
    assert _serial_gives_the_same_bits(monkeypatch, calls)


def test_a_serial_compile_is_made_once_under_its_own_name():
    from polyeng.backends.numba.normalization import _layer_norm
    compiled = _runtime.serial(_layer_norm)
    assert compiled is _runtime.serial(_layer_norm)
    assert compiled.py_func.__qualname__ == _layer_norm.py_func.__qualname__ + "_serial"
    assert _layer_norm.targetoptions.get("parallel") and not compiled.targetoptions.get("parallel")
    from polyeng.backends.numba._storage import read_only
    # the inputs as layer_norm hands them over: the kernels the op's calls compile
    x = read_only(np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32))
    w, b = read_only(np.ones(7, np.float32)), read_only(np.zeros(7, np.float32))
    want, got = np.empty_like(x), np.empty_like(x)
    _layer_norm(x, w, b, np.float32(1e-5), np.float32(7), want)
    compiled(x, w, b, np.float32(1e-5), np.float32(7), got)
    assert np.array_equal(got, want)
