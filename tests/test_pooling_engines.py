"""Pooling on every engine under test (see conftest) against BASIC: every option, integer and
bool storage, NaN/Inf and tie rules, odd sizes, unbatched input. Max pooling matches bit for
bit (values and indices); avg pooling within rounding, and bit for bit on OPENCL, which sums
the taps in BASIC's order (NUMBA may fuse multiply-adds). Device-resident inputs stay on the
device on engines that have them."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip

BIT_EXACT_AVG = {"opencl"}   # engines whose avg pooling sums the taps as BASIC does


FLOATS = [np.float32, np.float64, np.float16, dt.bfloat16]
ALL = FLOATS + [np.int8, np.uint8, np.int32, np.int64, np.bool_]

MAX_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1), ceil_mode=True),
    dict(kernel_size=3, stride=3, padding=1, dilation=2),
    dict(kernel_size=(1, 5), stride=(2, 4), padding=(0, 2), ceil_mode=True),
    dict(kernel_size=3, stride=2, dilation=3, padding=1),   # windows with no tap inside
]
AVG_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=3, padding=1, divisor_override=5),
    dict(kernel_size=(1, 4), stride=(3, 3), padding=(0, 2), ceil_mode=True),
]


def run(engine, fn, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return fn(*args, **kwargs)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype == dt.bool_ else a.view(f"u{a.dtype.itemsize}")


def sample(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == dt.bool_:
        return rng.random(shape) > 0.7
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        # few distinct values: plenty of ties; the extremes included
        return rng.choice(np.array([info.min, info.min + 1, 0, 1, 7, info.max], dtype=dtype), shape)
    x = np.round(rng.standard_normal(shape) * 3).astype(np.float32)   # ties and signed zeros
    x[rng.random(shape) < 0.05] = -0.0
    x[rng.random(shape) < 0.03] = np.nan
    x[rng.random(shape) < 0.02] = -np.nan
    x[rng.random(shape) < 0.03] = np.inf
    x[rng.random(shape) < 0.05] = -np.inf
    return x.astype(dtype)


def fits(x, kwargs):
    """Whether the window fits the input (else the op rejects the call; not what is tested here)."""
    try:
        run("basic", polyeng.max_pool2d, x, **kwargs)
        return True
    except ValueError:
        return False


def assert_avg_equal(engine, actual, expected):
    if engine in BIT_EXACT_AVG:
        np.testing.assert_array_equal(bits(actual), bits(expected))
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=1e-6, atol=1e-6)


def assert_max_equal(engine, x, fn, **kwargs):
    expected = run("basic", fn, x, return_indices=True, **kwargs)
    values, index = run(engine, fn, x, return_indices=True, **kwargs)
    assert values.dtype == x.dtype and index.dtype == np.int64
    np.testing.assert_array_equal(bits(values), bits(expected[0]))
    np.testing.assert_array_equal(index, expected[1])
    np.testing.assert_array_equal(bits(run(engine, fn, x, **kwargs)), bits(expected[0]))


@pytest.mark.uses_ops("max_pool2d")
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_max_pool2d_bit_exact(engine, dtype):
    rng = np.random.default_rng(1)
    for shape in [(2, 3, 13, 17), (3, 7, 1), (1, 1, 1, 40)]:
        x = sample(rng, shape, dtype)
        for kwargs in MAX_CASES:
            if fits(x, kwargs):
                assert_max_equal(engine, x, polyeng.max_pool2d, **kwargs)


@pytest.mark.uses_ops("max_pool3d")
@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_max_pool3d_bit_exact(engine, dtype):
    rng = np.random.default_rng(2)
    x = sample(rng, (2, 3, 7, 9, 13), dtype)
    for kwargs in [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                   dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 2),
                        ceil_mode=True)]:
        assert_max_equal(engine, x, polyeng.max_pool3d, **kwargs)
    assert_max_equal(engine, x[0], polyeng.max_pool3d, kernel_size=3, stride=2, padding=1)   # unbatched


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_nan_rule_and_lowest_windows(engine):
    # the last NaN of a window wins; an all -inf window reports its first in-bounds tap
    x = np.array([[1, np.nan, 5, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=np.float32)[None, None]
    values, index = run(engine, polyeng.max_pool2d, x, (1, 4), return_indices=True)
    assert np.isnan(values[0, 0, 0, 0]) and index[0, 0, 0, 0] == 3
    assert values[0, 0, 1, 0] == -np.inf and index[0, 0, 1, 0] == 4
    assert_max_equal(engine, x, polyeng.max_pool2d, kernel_size=2, stride=1, padding=1)


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_non_contiguous_and_large(engine):
    rng = np.random.default_rng(3)
    x = sample(rng, (4, 6, 40, 66), np.float32)[:, ::2, 3:, ::-1]
    assert_max_equal(engine, x, polyeng.max_pool2d, kernel_size=3, stride=2, padding=1)
    big = (rng.standard_normal((2, 3, 20, 20)) * 1e37).astype(np.float32)
    assert_max_equal(engine, big, polyeng.max_pool2d, kernel_size=3, stride=2)


@pytest.mark.uses_ops("avg_pool2d")
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_avg_pool2d_matches_basic(engine, dtype):
    rng = np.random.default_rng(4)
    for shape in [(2, 3, 13, 17), (3, 7, 5)]:
        x = rng.standard_normal(shape).astype(np.float32).astype(dtype)
        for kwargs in AVG_CASES:
            expected = run("basic", polyeng.avg_pool2d, x, **kwargs)
            actual = run(engine, polyeng.avg_pool2d, x, **kwargs)
            assert actual.dtype == x.dtype and actual.shape == expected.shape
            assert_avg_equal(engine, actual, expected)


@pytest.mark.uses_ops("avg_pool3d")
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_avg_pool3d_matches_basic(engine, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 9, 11)).astype(np.float32).astype(dtype)
    for kwargs in [dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 1), ceil_mode=True,
                        count_include_pad=False),
                   dict(kernel_size=2, divisor_override=3)]:
        expected = run("basic", polyeng.avg_pool3d, x, **kwargs)
        actual = run(engine, polyeng.avg_pool3d, x, **kwargs)
        assert_avg_equal(engine, actual, expected)


@pytest.mark.uses_ops("avg_pool2d")
def test_avg_pool_nan_inf_propagate(engine):
    x = np.zeros((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 0, 0], x[0, 0, 3, 3] = np.nan, np.inf
    y = run(engine, polyeng.avg_pool2d, x, 2)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 1, 1] == np.inf and y[0, 0, 0, 1] == 0


@pytest.mark.uses_ops("max_pool2d", "avg_pool2d")
def test_zero_size(engine):
    x = np.zeros((0, 3, 8, 8), dtype=np.float32)
    values, index = run(engine, polyeng.max_pool2d, x, 2, return_indices=True)
    assert values.shape == index.shape == (0, 3, 4, 4)
    assert run(engine, polyeng.avg_pool2d, x, 2).shape == (0, 3, 4, 4)


@pytest.mark.device_tensors
@pytest.mark.uses_ops("max_pool2d", "avg_pool3d")
def test_device_resident_input_stays_on_device(engine):
    rng = np.random.default_rng(6)
    x = sample(rng, (2, 3, 9, 11), np.float16)
    t = device_tensor_or_skip(x, engine)
    values, index = run(engine, polyeng.max_pool2d, t, 3, 2, 1, return_indices=True)
    assert type(values) is type(t) and type(index) is type(t)
    expected = run("basic", polyeng.max_pool2d, x, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(bits(polyeng.to_numpy(values)), bits(expected[0]))
    np.testing.assert_array_equal(polyeng.to_numpy(index), expected[1])
    y = rng.standard_normal((3, 5, 7, 9)).astype(np.float32)
    avg = run(engine, polyeng.avg_pool3d, polyeng.to_device(y, engine), 3, 2, 1, count_include_pad=False)
    assert type(avg) is type(t)
    assert_avg_equal(engine, polyeng.to_numpy(avg),
                     run("basic", polyeng.avg_pool3d, y, 3, 2, 1, count_include_pad=False))


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_raw_16_bit_copy(engine):
    # 16-bit NaN payloads and signs come back as stored
    x = np.array([0x7E01, 0xFE23, 0x3C00, 0xBC00], dtype=np.uint16).view(np.float16).reshape(1, 1, 2, 2)
    values = run(engine, polyeng.max_pool2d, x, (1, 2))
    np.testing.assert_array_equal(bits(values).ravel(), [0xFE23, 0x3C00])
