"""The OPENCL engine's kernels beyond the shared suite: every dtype and rank for the data
movement kernel, chains of ops staying on the device, threads, and the float64 rule."""
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["opencl"].available,
                                reason="no OpenCL platform (the CI run requires one)")
DTYPES = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_]


def on(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=dt.short_name)
@pytest.mark.parametrize("shape,dims", [((), ()), ((257,), (0,)), ((3, 7), (1, 0)), ((2, 1, 5, 3), (3, 0, 2, 1)),
                                        ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1)), ((0, 3), (1, 0))])
def test_permute_is_bit_identical_to_basic(dtype, shape, dims):
    x = (np.random.default_rng(0).standard_normal(shape) * 40).astype(dtype)
    expected = on("basic", "permute_contiguous", x, dims)
    actual = on("opencl", "permute_contiguous", x, dims)
    assert isinstance(actual, np.ndarray) and actual.dtype == x.dtype and actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("size", [1, 255, 257, 4099])
def test_gelu_odd_sizes_and_special_values(approximate, size):
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32) * 4
    x[:3] = [np.nan, np.inf, -0.0][:min(3, size)] if size >= 3 else x[:3]
    expected = on("basic", "gelu", x, approximate=approximate)
    # atol of 8 f32 eps: 1 + tanh(...) cancels for large negative x
    np.testing.assert_allclose(on("opencl", "gelu", x, approximate=approximate), expected, rtol=4e-6, atol=1e-6)


def test_a_chain_stays_on_the_device(monkeypatch, caplog):
    from polyeng.backends.opencl import _enqueue as enqueue, _tensor as tensor
    x = np.random.default_rng(1).standard_normal((4, 5, 6)).astype(dt.bfloat16)
    t = polyeng.to_device(x)
    transfers = []
    monkeypatch.setattr(enqueue, "to_numpy", lambda *a: transfers.append("down") or tensor.to_numpy(*a))
    monkeypatch.setattr(enqueue, "from_numpy", lambda *a: transfers.append("up") or tensor.from_numpy(*a))
    with caplog.at_level(logging.INFO, logger="polyeng"), polyeng.verbose(1):
        y = polyeng.gelu(polyeng.permute_contiguous(t, (2, 0, 1)), approximate="tanh")
    assert transfers == []
    assert type(y) is type(t) and y.shape == (6, 4, 5) and y.dtype == dt.bfloat16
    lines = [m for m in caplog.messages if m.startswith("polyeng,exec")]
    assert len(lines) == 2 and all(",opencl,layout," in m and "transferred" not in m for m in lines)
    expected = on("basic", "gelu", on("basic", "permute_contiguous", x, (2, 0, 1)), approximate="tanh")
    np.testing.assert_allclose(polyeng.to_numpy(y).astype(np.float32), expected.astype(np.float32),
                               rtol=2 ** -7, atol=2 ** -8)


def test_host_inputs_come_back_as_numpy():
    x = np.linspace(-3, 3, 11, dtype=np.float32)
    y = on("opencl", "gelu", x)
    assert type(y) is np.ndarray and y.dtype == np.float32


def test_concurrent_calls_from_threads_are_correct():
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(n).astype(np.float32) for n in range(1, 200, 7)]
    expected = [on("basic", "gelu", x) for x in inputs]

    def work(i):
        with polyeng.compute_eng("opencl", fallback=False):
            return [polyeng.gelu(inputs[i]) for _ in range(5)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(len(inputs))))
    for got, want in zip(results, expected):
        for g in got:
            np.testing.assert_allclose(g, want, rtol=4e-6, atol=1e-6)   # 8 f32 eps: 1 + tanh cancels for large negative x


def test_float64_needs_cl_khr_fp64(monkeypatch):
    from polyeng.backends.opencl import _runtime as runtime
    monkeypatch.setattr(runtime.State, "has_fp64", property(lambda self: False))
    x = np.ones(8, np.float64)
    decision = polyeng.explain("gelu", polyeng.to_device(x))
    verdicts = {c.engine: c for c in decision.candidates}
    assert verdicts["opencl"].verdict == "rejected" and "cl_khr_fp64" in verdicts["opencl"].reason
    assert decision.step == "special-argument"
    with pytest.raises(polyeng.EngineError, match="cl_khr_fp64"):
        on("opencl", "gelu", x)


def test_without_cl_khr_fp64_bit_moving_ops_still_take_float64(monkeypatch):
    from polyeng.backends.opencl import _runtime as runtime
    monkeypatch.setattr(runtime.State, "has_fp64", property(lambda self: False))
    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    for op, args, kwargs in [("permute_contiguous", (x, (1, 0)), {}), ("concat", ([x, x],), {"axis": 0}),
                             ("select", (x > 0.5, x, -x), {}), ("cast", (x, "bf16"), {}),
                             ("upsample_nearest", (x[None],), {"scale_factor": 2})]:
        got, want = on("opencl", op, *args, **kwargs), on("basic", op, *args, **kwargs)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    # an f64 result from narrower inputs is f64 work too
    ints, floats = np.ones((2, 3), np.int32), np.ones((3, 2), np.float32)
    verdicts = {c.engine: c for c in polyeng.explain("matmul", ints, floats).candidates}
    assert verdicts["opencl"].verdict == "rejected" and "cl_khr_fp64" in verdicts["opencl"].reason


@pytest.mark.parametrize("setting", ["cpu", "0:0", "0", "portable computing", "PTHREAD"])
def test_device_setting_picks_a_device(monkeypatch, setting):
    from polyeng.backends.opencl import _runtime as runtime
    first = runtime.devices()[0][2]
    if "pthread" not in first.name.lower():
        pytest.skip("the settings here name PoCL's CPU device")
    monkeypatch.setenv("POLYENG_OPENCL_DEVICE", setting)
    assert runtime.choose_device() == first


def test_a_device_setting_matching_nothing_makes_opencl_unavailable_with_the_reason(monkeypatch):
    from polyeng.backends import opencl
    from polyeng.backends.opencl import _runtime as runtime
    monkeypatch.setenv("POLYENG_OPENCL_DEVICE", "no-such-device")
    with pytest.raises(RuntimeError, match="matches no OpenCL device.*devices: 0:0"):
        runtime.choose_device()
    ok, reason = opencl.availability()
    assert not ok and "POLYENG_OPENCL_DEVICE='no-such-device' matches no OpenCL device" in reason


def test_a_kernel_failing_after_queued_launches_waits_before_releasing_them(monkeypatch):
    from polyeng.backends.opencl import _enqueue as enqueue
    real = enqueue.kernel

    def failing(file, name, options, args=()):
        if name == "bilinear_cols":   # the second of bilinear's two launches
            raise RuntimeError("simulated enqueue failure")
        return real(file, name, options, args)
    monkeypatch.setattr(enqueue, "kernel", failing)
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 7)).astype(np.float32)
    with pytest.raises(polyeng.EngineError, match="simulated enqueue failure"):
        on("opencl", "upsample_bilinear2d", x, scale_factor=2)
    assert not getattr(enqueue._local, "held", None)   # the first launch ran and was let go
    monkeypatch.setattr(enqueue, "kernel", real)
    np.testing.assert_array_equal(on("opencl", "upsample_bilinear2d", x, scale_factor=2),
                                  on("basic", "upsample_bilinear2d", x, scale_factor=2))


def test_unaligned_host_arrays_are_copied_before_the_kernels_read_them():
    raw = np.zeros(4 * 257 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=257, offset=1)   # an odd address
    x.flags.writeable = True
    x[:] = np.arange(257, dtype=np.float32) / 7
    assert not x.flags.aligned
    np.testing.assert_array_equal(on("opencl", "permute_contiguous", x, (0,)), x)
    np.testing.assert_allclose(on("opencl", "softmax", x), on("basic", "softmax", x), rtol=1e-6)


@pytest.mark.parametrize("op,args,kwargs", [
    ("softmax", (np.arange(60, dtype=np.float32).reshape(3, 20) / 9,), {"axis": 0}),
    ("permute_contiguous", (np.arange(60, dtype=np.int8).reshape(3, 4, 5), (2, 0, 1)), {}),
    ("max_pool2d", (np.arange(2 * 3 * 9 * 9, dtype=np.float32).reshape(2, 3, 9, 9) % 11, 3), {"stride": 2}),
    ("matmul", (np.arange(12, dtype=np.float32).reshape(3, 4), np.ones((4, 5), np.float32)), {}),
    ("cast", (np.linspace(-3, 3, 40), "bf16"), {}),
    ("lstm", (np.ones((4, 2, 3), np.float32), [(np.full((8, 3), 0.1, np.float32), np.full((8, 2), 0.2, np.float32),
                                               None, None)]), {}),
])
def test_a_device_with_its_own_memory_copies_in_and_out(monkeypatch, op, args, kwargs):
    """The path a GPU takes (no zero-copy): simulated on PoCL by reporting separate memory."""
    from polyeng.backends.opencl import _runtime as runtime
    monkeypatch.setattr(runtime.State, "unified", property(lambda self: False))
    want = on("basic", op, *args, **kwargs)
    got = on("opencl", op, *args, **kwargs)
    flat = lambda v: list(v) if isinstance(v, (tuple, list)) else [v]   # noqa: E731
    for g, w in zip(flat(got if op != "lstm" else [got[0], *got[1]]), flat(want if op != "lstm" else [want[0], *want[1]])):
        assert type(g) is np.ndarray and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6)
    t = polyeng.to_device(args[0])
    assert t.host is None and np.array_equal(polyeng.to_numpy(t), np.asarray(args[0]))


_HALF_KERNEL = """
__kernel void halves(__global const half *x, __global float *widened, __global const float *f,
                     __global half *narrowed, const ulong at) {
    const size_t i = get_global_id(0) * VLANES + at;
    vstore16(VLOAD(x, i), 0, widened + i);
    VSTORE(narrowed, i, vload16(0, f + i));
}
"""


def _same_half_bits(got, want):
    """Equal bit patterns, but for NaN, where only NaN and the sign are compared (a signalling
    NaN may come back quiet)."""
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(g[~nan], w[~nan]) and np.array_equal(g[nan] >> 15, w[nan] >> 15)


@pytest.mark.parametrize("at", [0, 1, 5])   # element offsets: aligned, then 2 and 10 bytes past
def test_float16_vectors_load_and_store_exactly_at_any_offset(at):
    """common.cl's VLOAD and VSTORE of f16 storage: every f16 bit pattern widens to the f32 numpy
    gives, and f32 values round to numpy's f16 (nearest even: ties between neighbours, subnormals,
    the overflow threshold 65520, inf, NaN), at aligned addresses (the device's vector built-ins)
    and at addresses that are not (the 16-bit patterns converted in the kernel)."""
    import pyopencl as cl
    from polyeng.backends.opencl import _enqueue as enqueue, _runtime as runtime
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(invalid="ignore", over="ignore"):   # NaN and inf patterns among them
        below = np.nextafter(halves.astype(np.float32), np.float32(-np.inf))
        neighbours = halves.view(np.uint16) + np.uint16(1)
        ties = (halves.astype(np.float64) + neighbours.view(np.float16).astype(np.float64)) / 2
    rng = np.random.default_rng(at)
    floats = np.concatenate([halves.astype(np.float32), below, ties.astype(np.float32),
                             rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint32).view(np.float32),
                             np.float32([65519.99, 65520, -65520, 1e-8, -3e-8, 2.0 ** -25, 2.0 ** -24 * 1.5,
                                         1e-40, -1e-45, 3e38, np.inf, -np.inf, np.nan, -np.nan])])
    floats = np.resize(floats, -(-floats.size // 16) * 16)
    x = np.resize(halves, floats.size)
    st = runtime.state()
    source = (Path(enqueue.__file__).parent / "common.cl").read_text() + _HALF_KERNEL
    program = cl.Program(st.context, source).build(options=["-DSTORAGE=2"])
    pad = lambda a: np.concatenate([np.zeros(at, a.dtype), a])   # noqa: E731
    mf = cl.mem_flags
    x_buf = cl.Buffer(st.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pad(x))
    f_buf = cl.Buffer(st.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pad(floats))
    widened, narrowed = np.empty(at + x.size, np.float32), np.empty(at + x.size, np.float16)
    w_buf, n_buf = (cl.Buffer(st.context, mf.WRITE_ONLY, a.nbytes) for a in (widened, narrowed))
    program.halves(st.queue, (x.size // 16,), None, x_buf, w_buf, f_buf, n_buf, np.uint64(at))
    cl.enqueue_copy(st.queue, widened, w_buf)
    cl.enqueue_copy(st.queue, narrowed, n_buf)
    st.queue.finish()
    want = x.astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(widened[at:].view(np.uint32)[~nan], want.view(np.uint32)[~nan])
    assert np.isnan(widened[at:][nan]).all() and np.array_equal(np.signbit(widened[at:]), np.signbit(want))
    with np.errstate(over="ignore"):
        _same_half_bits(narrowed[at:], floats.astype(np.float16))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_float16_rows_starting_at_every_offset(op):
    """Rows of n float16 elements start n * 2 bytes apart, so n = 17..24 and 33..40 start rows at
    every 2-byte offset within 16 bytes, with one and two whole 16-element vectors then a partial
    one (lengths built unrolled), and 65 and 71 the looped form."""
    for n in [*range(17, 25), *range(33, 41), 65, 71]:
        x = (np.random.default_rng(n).standard_normal((5, n)) * 4).astype(np.float16)
        got, want = on("opencl", op, x, axis=1), on("basic", op, x, axis=1)
        assert got.dtype == np.float16
        tol = 8 * 2.0 ** -10
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol * (20 if op == "log_softmax" else 1))
