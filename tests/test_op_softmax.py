"""softmax / log_softmax on every engine under test (see conftest) against BASIC: every kernel
path of the JIT engines (contiguous rows with and without a partial vector, lanes with full and
partial 16-lane blocks, lengths built unrolled and run-time), any axis, 0-d and zero-size input,
rows of -inf, +inf, NaN and huge values, device-resident inputs on engines that have them.

First BASIC against known values, and the bad-axis rule."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip


pytestmark = pytest.mark.uses_ops("softmax", "log_softmax")

FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
OPS = ("softmax", "log_softmax")


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_softmax_known_values():
    out = polyeng.softmax(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(out, [0.09003057317038046, 0.24472847105479767, 0.6652409557748219], rtol=1e-14)
    out = polyeng.log_softmax(np.array([[1.0], [2.0], [3.0]], np.float32), axis=0)
    np.testing.assert_allclose(out[:, 0], [-2.4076059644443806, -1.4076059644443806, -0.4076059644443806],
                               rtol=1e-6)
    big = polyeng.softmax(np.array([1000.0, 1000.0], np.float32))   # no overflow
    assert big.tolist() == [0.5, 0.5]
    assert np.isnan(polyeng.softmax(np.array([-np.inf, -np.inf]))).all()   # as torch
    assert polyeng.softmax(np.float32(3.0), axis=0) == 1.0
    assert polyeng.softmax(np.array([0.0, 0.0], dt.bfloat16)).dtype == dt.bfloat16


@pytest.mark.usefixtures("on_basic")
def test_softmax_bad_axis():
    with pytest.raises(ValueError, match=r"axis=2 is out of range .* 2 dimensions"):
        polyeng.softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match=r"axis=-3"):
        polyeng.log_softmax(np.ones((2, 2)), axis=-3)


# -- every engine against BASIC --------------------------------------------------------------------

def run(engine, op, x, axis):
    # BASIC's f32 result of a huge f16 log_softmax overflows f16 on the way back (-> -inf).
    with polyeng.compute_eng(engine, fallback=False), np.errstate(over="ignore"):
        return getattr(polyeng, op)(x, axis=axis)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_close(got, want, dtype, ulps, scale=1.0):
    assert type(got) is np.ndarray and got.dtype == dtype and got.shape == want.shape
    tol = ulps * eps(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * scale,
                               equal_nan=True)


def assert_matches_basic(engine, op, x, axis, ulps=8):
    finite = np.abs(x.astype(np.float64)[np.isfinite(x.astype(np.float64))])
    scale = max(1.0, float(finite.max())) if op == "log_softmax" and finite.size else 1.0
    assert_close(run(engine, op, x, axis), run("basic", op, x, axis), x.dtype, ulps, scale)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("shape,axis", [((4, 5, 33), 2), ((4, 5, 33), 1), ((4, 5, 33), 0), ((), 0),
                                        ((1,), 0), ((7,), 0), ((13, 1), 1), ((2, 600, 50), 1),
                                        ((3, 13, 7, 2), 1), ((1, 1, 1), 1), ((257, 3), 1), ((3, 259), 0),
                                        ((5, 16), 1), ((5, 64), 1), ((5, 65), 1), ((3, 200), 1),
                                        ((2, 9, 16), 1), ((2, 9, 35), 1), ((2, 70, 33), 1)])
@pytest.mark.parametrize("op", OPS)
def test_matches_basic(engine, op, shape, axis, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 4).astype(FLOATS[dtype])
    assert_matches_basic(engine, op, x, axis)


def special_rows(dtype, width=5):
    big = float(np.finfo(np.float16).max) if dtype == np.float16 else 1e30
    nan, inf = np.nan, np.inf
    rows = [[-inf] * 5, [1.0, inf, 2.0, -inf, 0.0], [1.0, nan, 2.0, 3.0, 4.0], [nan] * 5,
            [-inf, 1.0, -inf, 2.0, -inf], [inf, inf, 1.0, 1.0, 1.0], [nan, 1.0, 2.0, 3.0, 4.0],
            [big, -big, big, 0.0, 1.0], [-big] * 5, [0.0] * 5]
    return np.tile(np.array(rows, np.float64), (1, -(-width // 5)))[:, :width].astype(dtype)


@pytest.mark.parametrize("width", [5, 35])   # 35: a full 16-element vector and a partial one
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_special_values_along_every_path(engine, op, dtype, width):
    x = special_rows(FLOATS[dtype], width)
    assert_matches_basic(engine, op, x, 1)                            # contiguous rows
    assert_matches_basic(engine, op, np.ascontiguousarray(x.T), 0)    # lanes
    assert_matches_basic(engine, op, np.ascontiguousarray(x.T).reshape(width, 2, 5), 0)


@pytest.mark.parametrize("op", OPS)
def test_exact_values(engine, op):
    x = np.array([[0.0, np.log(3.0)], [-np.inf, 5.0]], np.float32)
    got = run(engine, op, x, 1).astype(np.float64)
    want = np.array([[0.25, 0.75], [0.0, 1.0]])
    with np.errstate(divide="ignore"):
        want = want if op == "softmax" else np.log(want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.uses_ops("softmax")
def test_rows_sum_to_one_over_long_axis(engine):
    x = np.random.default_rng(1).standard_normal((3, 5000)).astype(np.float32) * 10
    for axis in (0, 1):
        total = run(engine, "softmax", x, axis).astype(np.float64).sum(axis=axis)
        np.testing.assert_allclose(total, 1.0, rtol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_zero_size_input(engine, op):
    empty = run(engine, op, np.zeros((3, 0, 2), np.float32), 1)
    assert type(empty) is np.ndarray and empty.shape == (3, 0, 2) and empty.dtype == np.float32


@pytest.mark.device_tensors
@pytest.mark.parametrize("op", OPS)
def test_device_input_gives_a_device_result(engine, op):
    x = np.random.default_rng(1).standard_normal((6, 9)).astype(dt.bfloat16)
    t = device_tensor_or_skip(x, engine)
    y = run(engine, op, t, 0)
    assert type(y) is type(t) and y.shape == x.shape and y.dtype == dt.bfloat16
    assert_close(polyeng.to_numpy(y), run("basic", op, x, 0), x.dtype, 8, 4.0)
