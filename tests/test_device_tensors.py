"""OpenCL device tensors: round trips, the layout step's host transfer when the
owning engine has no kernel for an op, errors, and the OpenCL program cache."""
import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polyeng
from support import FakeEngine, FakeTensor
from polyeng.engine import dtypes as dt
from polyeng.engine.plugins import registry

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["opencl"].available,
                                reason="no OpenCL platform (the CI run requires one)")

DTYPES = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=dt.short_name)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (7,), (2, 3, 5)])
def test_round_trip_is_bit_exact(dtype, shape):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    t = polyeng.to_device(x)
    assert isinstance(t, registry().engines["opencl"].native_type)
    assert t.shape == x.shape and t.dtype == x.dtype and t.size == x.size
    back = polyeng.to_numpy(t)
    assert back.dtype == x.dtype and back.shape == x.shape
    assert back.tobytes() == np.ascontiguousarray(x).tobytes()


def test_non_contiguous_input_and_repr():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::-2].T
    t = polyeng.to_device(x, "OpenCL")
    np.testing.assert_array_equal(polyeng.to_numpy(t), x)
    text = repr(t)
    assert "shape=(3, 4)" in text and "dtype=f32" in text and "device=" in text
    assert polyeng.to_device(t) is t                  # already there: no copy
    np.testing.assert_array_equal(np.asarray(t), x)   # numpy can read it too


def test_to_numpy_passes_host_arrays_through():
    x = np.ones(3, np.float32)
    assert polyeng.to_numpy(x) is x
    np.testing.assert_array_equal(polyeng.to_numpy([1, 2]), [1, 2])


def test_engines_without_device_tensors_and_bad_values_are_clear_errors():
    with pytest.raises(ValueError, match="engine='basic' has no device tensors; .*opencl"):
        polyeng.to_device(np.ones(2), "basic")
    with pytest.raises(ValueError, match="not a registered engine"):
        polyeng.to_device(np.ones(2), "cuda")
    with pytest.raises(TypeError, match="x has dtype complex128"):
        polyeng.to_device(np.ones(2, complex))


def test_an_unavailable_engine_refuses_device_tensors(monkeypatch):
    record = registry().engines["opencl"]
    monkeypatch.setattr(record, "_resolved", (False, "simulated: no OpenCL platform"))
    with pytest.raises(polyeng.EngineError, match="opencl.*simulated: no OpenCL platform"):
        polyeng.to_device(np.ones(2))
    assert polyeng.softmax(np.ones(3, np.float32)).shape == (3,)   # the rest works unchanged


def test_an_op_the_owner_cannot_run_transfers_once_and_says_so(backends, caplog):
    # OPENCL runs every op, so the owner here is a plugin engine with device tensors and no matmul
    backends(FakeEngine("devfake", ops=("concat",), native=True))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    with caplog.at_level(logging.INFO, logger="polyeng"), polyeng.verbose(1):
        y = polyeng.matmul(FakeTensor(a), b)   # one device input, one host input
    assert type(y) is np.ndarray
    with polyeng.compute_eng("basic"):
        np.testing.assert_array_equal(y, polyeng.matmul(a, b))
    lines = [m for m in caplog.messages if m.startswith("polyeng,exec,matmul")]
    assert len(lines) == 1 and lines[0].endswith("transferred a to host")


def test_concurrent_transfers_from_threads():
    arrays = [np.full((64, 33), i, np.float32) for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        backs = list(pool.map(lambda a: polyeng.to_numpy(polyeng.to_device(a)), arrays))
    for a, b in zip(arrays, backs):
        np.testing.assert_array_equal(a, b)


def test_program_cache_keys_on_source_options_and_device():
    from polyeng.backends.opencl import _runtime as runtime
    source = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }"
    first = runtime.program(source)
    assert runtime.program(source) is first
    assert runtime.program(source, ("-cl-fast-relaxed-math",)) is not first
    assert all(key[2] == runtime.state().identity for key in runtime.state().programs)
