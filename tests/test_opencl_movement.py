"""The OPENCL data movement kernels (select, concat, upsample_nearest) against BASIC: bit-equality
for every dtype, broadcasts and mixed dtypes, odd sizes, ranks and device-resident inputs."""
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


def values(rng, shape, dtype):
    """Random values with NaN, +-Inf and -0.0 among the floats, extremes among the ints."""
    dtype = np.dtype(dtype)
    if dtype == dt.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(shape) * 100).astype(np.float32).astype(dtype)
    flat = a.reshape(-1)
    special = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).astype(dtype)
    flat[: min(4, flat.size)] = special[: min(4, flat.size)]
    return a


def assert_same_bits(op, *args, **kwargs):
    expected = np.asarray(on("basic", op, *args, **kwargs))   # tobytes() is C order
    actual = on("opencl", op, *args, **kwargs)
    assert isinstance(actual, np.ndarray)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=dt.short_name)
def test_every_dtype_is_bit_identical(dtype):
    rng = np.random.default_rng(0)
    x = values(rng, (2, 3, 7, 13), dtype)
    assert_same_bits("select", rng.random((3, 7, 1)) > 0.5, x, values(rng, (1, 13), dtype))
    assert_same_bits("concat", [x, values(rng, (2, 1, 7, 13), dtype), values(rng, (2, 5, 7, 13), dtype)], axis=1)
    assert_same_bits("upsample_nearest", x, scale_factor=2)
    assert_same_bits("upsample_nearest", x, size=(5, 17))


@pytest.mark.parametrize("cond_shape,then_shape,else_shape", [
    ((), (), ()), ((257,), (257,), (257,)), ((257,), (), (257,)), ((1,), (5, 1), (1, 3)),
    ((4, 1, 3), (4, 5, 3), (1,)), ((2, 1, 3, 1), (1, 7, 1, 5), (2, 1, 3, 5)), ((1, 1), (3, 1), (3, 300))])
def test_select_broadcasts(cond_shape, then_shape, else_shape):
    rng = np.random.default_rng(1)
    cond = rng.random(cond_shape) > 0.5
    assert_same_bits("select", cond, values(rng, then_shape, np.float32), values(rng, else_shape, np.float32))
    assert_same_bits("select", cond, values(rng, then_shape, np.int64), values(rng, else_shape, np.int64),
                     auto_broadcast="numpy")


def test_select_none_mode_and_scalars():
    rng = np.random.default_rng(2)
    cond, a, b = rng.random((5, 9)) > 0.5, values(rng, (5, 9), dt.bfloat16), values(rng, (5, 9), dt.bfloat16)
    assert_same_bits("select", cond, a, b, auto_broadcast="none")
    assert_same_bits("select", cond, a, 2.5)
    assert_same_bits("select", cond, 7, values(rng, (5, 9), dt.int8))


@pytest.mark.parametrize("then_dtype,else_dtype", [(dt.float16, dt.bfloat16), (dt.int8, dt.float32),
                                                   (dt.bool_, dt.int32), (dt.uint8, dt.int8),
                                                   (dt.int64, dt.float64), (dt.bfloat16, dt.int32)])
def test_mixed_dtypes_promote_as_basic(then_dtype, else_dtype):
    rng = np.random.default_rng(3)
    a, b = values(rng, (3, 11), then_dtype), values(rng, (3, 11), else_dtype)
    assert_same_bits("select", rng.random((3, 1)) > 0.5, a, b)
    assert_same_bits("concat", [a, b, a], axis=0)
    assert_same_bits("concat", [b, a], axis=1)


@pytest.mark.parametrize("shapes,axis", [([(257,), (1,), (3,)], 0), ([(3, 5), (3, 0), (3, 2)], 1),
                                         ([(2, 3, 4), (2, 3, 4)], -1), ([(1, 3, 4), (6, 3, 4)], 0),
                                         ([(2, 3, 5, 7)], 2), ([(2, 0, 3), (2, 0, 3)], 1)])
def test_concat_shapes(shapes, axis):
    rng = np.random.default_rng(4)
    assert_same_bits("concat", [values(rng, s, dt.float16) for s in shapes], axis=axis)


@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"scale_factor": 3}, {"scale_factor": 0.5},
                                    {"scale_factor": 1.2}, {"size": 1}, {"size": 11}])
@pytest.mark.parametrize("spatial", [(13,), (7, 2), (2, 7), (3, 5, 4)])
def test_nearest_1d_2d_3d(spatial, resize):
    x = values(np.random.default_rng(5), (2, 3) + spatial, dt.int8)
    assert_same_bits("upsample_nearest", x, **resize)


def test_nearest_per_dim_arguments_and_odd_sizes():
    rng = np.random.default_rng(6)
    assert_same_bits("upsample_nearest", values(rng, (1, 3, 5, 7, 9), dt.float64), size=(2, 9, 16))
    assert_same_bits("upsample_nearest", values(rng, (3, 1, 7, 5), dt.bool_), scale_factor=(1.7, 0.6))
    assert_same_bits("upsample_nearest", values(rng, (1, 1, 1), dt.uint8), size=257)


def test_zero_size_inputs_give_empty_results():
    empty = np.zeros((2, 0, 3), np.float32)
    assert on("opencl", "upsample_nearest", empty, scale_factor=2).shape == (2, 0, 6)
    assert on("opencl", "concat", [np.zeros((0, 3)), np.zeros((0, 2))], axis=1).shape == (0, 5)
    out = on("opencl", "select", np.zeros((0, 4), bool), np.zeros((0, 4), np.int32), np.zeros((1, 4), np.int8))
    assert out.shape == (0, 4) and out.dtype == np.int32


def test_device_inputs_give_device_results():
    rng = np.random.default_rng(7)
    x = values(rng, (2, 3, 4, 5), dt.bfloat16)
    t = polyeng.to_device(x)
    cond = rng.random((4, 5)) > 0.5
    other = values(rng, (5,), dt.float32)
    cases = [("select", (cond, t, other), {}), ("select", (polyeng.to_device(cond), x, x), {}),
             ("concat", ([x, t],), {"axis": 1}), ("concat", ([t, other.reshape(1, 1, 1, 5).repeat(4, 2)
                                                              .repeat(3, 1).repeat(2, 0)],), {"axis": 3}),
             ("upsample_nearest", (t,), {"size": (3, 11)})]
    for op, args, kwargs in cases:
        actual = on("opencl", op, *args, **kwargs)
        assert type(actual) is type(t)
        host_args = [[polyeng.to_numpy(a) if a is t else a for a in arg] if isinstance(arg, list) else
                     (polyeng.to_numpy(arg) if type(arg) is type(t) else arg) for arg in args]
        expected = np.asarray(on("basic", op, *host_args, **kwargs))
        got = polyeng.to_numpy(actual)
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
