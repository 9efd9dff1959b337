"""cast on every engine under test (see conftest) bit for bit against BASIC, for every source
dtype and target float type.

test_cast_rounding.py sweeps the rounding itself on every engine; this covers the pairs,
layouts, sizes past a vector or work item's run, integer and special inputs, same-dtype
copies and, on engines with device tensors (OPENCL), device-resident inputs.
"""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip

pytestmark = pytest.mark.uses_ops("cast")
TARGETS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def run(engine, x, dtype):
    with polyeng.compute_eng(engine, fallback=False), np.errstate(all="ignore"):
        return polyeng.cast(x, dtype)


def source_values(dtype):
    rng = np.random.default_rng(0)
    if dtype == dt.bool_:
        return rng.random(101) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, -1, 255, 256, 65504, 65519, 65520, 2 ** 24 + 1, 2 ** 24 + 3,
                 2 ** 31 - 1, 2 ** 53 + 1, (2 ** 24 + 1) << 30, ((2 ** 23 + 1) << 40) + 1, -((2 ** 24 + 3) << 20)]
        edges = [v for v in edges if info.min <= v <= info.max]
        spread = rng.integers(info.min, info.max, size=200, dtype=dtype, endpoint=True)
        return np.concatenate([np.array(edges, dtype), spread])
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 65520.0, 65519.99, 3.4e38, -3.4e38,
                1e-8, 6e-8, 2.0 ** -24, 2.0 ** -25, 1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -40, 1e-45, 1e-300, 1e300]
    with np.errstate(all="ignore"):
        values = np.concatenate([np.array(specials), rng.standard_normal(300) * 10.0 ** rng.integers(-8, 8, 300)])
        return values.astype(dtype)


def assert_same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), nan)
    kind = UINT[want.dtype.itemsize]
    np.testing.assert_array_equal(got.view(kind)[~nan], want.view(kind)[~nan])


SOURCES = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_]


@pytest.mark.parametrize("target", TARGETS, ids=dt.short_name)
@pytest.mark.parametrize("source", SOURCES, ids=dt.short_name)
def test_bit_identical_to_basic(engine, source, target):
    x = source_values(source)
    assert_same_bits(run(engine, x, target), run("basic", x, target))


@pytest.mark.parametrize("target", [dt.bfloat16, dt.float16], ids=dt.short_name)
def test_layouts_and_shapes(engine, target):
    x = source_values(dt.float64)[:300].reshape(10, 30)
    for view in (x.T, x[:, ::3], x[::-1], x[3, 4], x.reshape(2, 5, 30)[:, 1:4]):
        got = run(engine, view, target)
        assert got.shape == np.shape(view)
        assert_same_bits(np.asarray(got), np.asarray(run("basic", view, target)))


@pytest.mark.parametrize("size", [1, 15, 16, 17, 255, 257, 4097])
def test_sizes_around_runs_and_groups(engine, size):
    x = (np.random.default_rng(size).standard_normal(size) * 1e4).astype(np.float32)
    x[::7] = np.nan
    for target in (dt.bfloat16, dt.float16, dt.float64):
        assert_same_bits(run(engine, x, target), run("basic", x, target))


def test_same_dtype_is_a_copy(engine):
    x = np.arange(6, dtype=np.float32)
    y = run(engine, x, "f32")
    assert y.dtype == x.dtype and not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, y)
    payloads = np.array([0x7FC00001, 0xFF800123, 0x7F800001], np.uint32).view(np.float32)   # NaN payloads
    assert run(engine, payloads, np.float32).view(np.uint32).tolist() == payloads.view(np.uint32).tolist()


@pytest.mark.device_tensors
@pytest.mark.parametrize("target", TARGETS, ids=dt.short_name)
@pytest.mark.parametrize("source", SOURCES, ids=dt.short_name)
def test_device_inputs_give_device_results(engine, source, target):
    x = source_values(source)
    t = device_tensor_or_skip(x, engine)
    got = run(engine, t, target)
    assert type(got) is type(t) and got.shape == x.shape and got.dtype == target
    assert_same_bits(polyeng.to_numpy(got), run("basic", x, target))


def test_bad_target_is_rejected_before_any_kernel(engine):
    with pytest.raises(TypeError, match="dtype"):
        run(engine, np.ones(3, np.float32), np.int32)
