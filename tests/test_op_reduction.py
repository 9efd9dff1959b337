"""mean on every engine under test (see conftest) against BASIC: every axis form, keepdims,
16-bit/f32/f64 storage, non-contiguous input, zero-size input; and the accuracy every engine
(BASIC too) must reach: the rounding error does not grow with the number of values averaged, and
16-bit inputs accumulate in f32.

BASIC's known values and its comparison with PyTorch's CPU op are at the end."""
import math
import warnings

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import FLOATS, basic, eps, from_torch, needs_torch, to_torch, torch


pytestmark = pytest.mark.uses_ops("mean")

AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 0), (0, 1, 2), (1,), [1, 2]]


def mean(engine, x, axis=None, keepdims=False):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.mean(x, axis=axis, keepdims=keepdims)


def assert_matches_basic(engine, x, axis=None, keepdims=False, ulps=4):
    """Within ``ulps`` of BASIC, relative to the mean and absolute to the values' magnitude (a mean
    near zero of large values cancels)."""
    got, want = mean(engine, x, axis, keepdims), mean("basic", x, axis, keepdims)
    assert type(got) is np.ndarray and got.dtype == want.dtype == x.dtype and got.shape == want.shape
    tol = ulps * eps(x.dtype)
    scale = max(1.0, float(np.abs(x.astype(np.float64)).mean())) if x.size else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * scale,
                               equal_nan=True)
    return want


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_every_axis_form(engine, dtype, keepdims):
    for shape in [(3, 4, 5), (2, 17, 33), (5, 1, 1031)]:
        x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 3 + 1).astype(FLOATS[dtype])
        for axis in AXES:
            want = assert_matches_basic(engine, x, axis, keepdims)
            expected = np.mean(x.astype(np.float64), axis=tuple(axis) if isinstance(axis, list) else axis,
                               keepdims=keepdims)
            assert want.shape == expected.shape   # numpy's shape rule, on BASIC too


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_small_and_zero_d_inputs(engine, dtype):
    f = FLOATS[dtype]
    for x, axis in [(np.array(2.5, f), None), (np.array(2.5, f), 0), (np.array(-1.5, f), -1),
                    (np.array([3.0], f), 0), (np.arange(7, dtype=np.float64).astype(f), None),
                    (np.arange(16, dtype=np.float64).astype(f), 0), (np.arange(17, dtype=np.float64).astype(f), -1),
                    (np.ones((1, 1, 1), f), (0, 2))]:
        for keepdims in (False, True):
            want = assert_matches_basic(engine, x, axis, keepdims)
            if x.ndim == 0:   # numpy refuses axis=0 of a 0-d array; PyTorch returns the value
                assert want.shape == () and want == x

@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64"])
def test_non_contiguous_input(engine, dtype):
    base = (np.random.default_rng(1).standard_normal((6, 34, 10)) + 2).astype(FLOATS[dtype])
    views = {"transposed": base.transpose(2, 0, 1), "negative": base[::-1, :, ::-1], "strided": base[:, ::2, 1::3],
             "broadcast": np.broadcast_to(base[:1], base.shape)}
    for name, x in views.items():
        assert not x.flags.c_contiguous, name
        for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
            assert_matches_basic(engine, x, axis)
            assert_matches_basic(engine, x, axis, keepdims=True)


ZERO_SIZE = [((0,), None), ((0, 3), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), 0), ((2, 0), 1), ((2, 0, 4), (0, 2)),
             ((2, 0, 4), (1,)), ((3, 0), -1)]


def assert_zero_size_means(run_on):
    """An empty mean is NaN (as in numpy and PyTorch); an empty result is an empty array; the
    shape is numpy's."""
    for f in (np.float32, np.float16):
        for shape, axis in ZERO_SIZE:
            for keepdims in (False, True):
                with warnings.catch_warnings(), np.errstate(all="ignore"):   # numpy: "Mean of empty slice"
                    warnings.simplefilter("ignore", RuntimeWarning)
                    expected = np.mean(np.zeros(shape), axis=axis, keepdims=keepdims)
                got = mean(run_on, np.zeros(shape, f), axis, keepdims)
                assert type(got) is np.ndarray and got.dtype == f
                assert got.shape == expected.shape, (run_on, shape, axis, keepdims, got.shape)
                assert np.isnan(got.astype(np.float64)).all()


def test_zero_size_input_on_basic():
    assert_zero_size_means("basic")


def test_zero_size_input(engine):
    assert_zero_size_means(engine)


def _long_values(n, seed=0):
    """f32 values whose naive running sum drifts by thousands of ulps over 2**20 of them."""
    return (1.1 + 1e-3 * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)


def _relative_error(got, values, axis=None):
    exact = values.astype(np.float64).mean(axis=axis)   # f64 pairwise: exact to f32 precision
    return np.abs(got.astype(np.float64) - exact) / np.abs(exact) / float(np.finfo(np.float32).eps)


def assert_accurate_for_long_inputs(run_on):
    """The mean of 2**20 f32 values lies within a few f32 ulps of the exact mean, whichever axes are
    reduced: a running f32 sum over them would be off by about 1e5 ulps."""
    x = _long_values(1 << 20)
    cases = [(x, None), (x.reshape(4, -1), 1), (x.reshape(-1, 4), 0), (x.reshape(1024, 1024), (0, 1)),
             (x.reshape(1 << 10, 4, 1 << 8), (0, 2)), (x[:4097], None), (x[::-1], 0)]
    for values, axis in cases:
        error = _relative_error(mean(run_on, values, axis), values, axis)
        assert float(np.max(error)) <= 4.0, (run_on, values.shape, axis, float(np.max(error)))


def test_accuracy_does_not_grow_with_length_on_basic():
    assert_accurate_for_long_inputs("basic")


def test_accuracy_does_not_grow_with_length(engine):
    assert_accurate_for_long_inputs(engine)


def assert_16_bit_inputs_accumulate_in_f32(run_on):
    """A bf16 running sum of 4096 ones stops at 256, and an f16 sum of 60000s overflows at the
    second value; an f32 accumulator gives the mean to the storage precision."""
    values = np.ones(4096)
    values[::7] += 2.0 ** -6
    values[::13] -= 2.0 ** -5
    for storage, x in [(dt.bfloat16, values), (np.float16, values), (np.float16, np.full(4096, 60000.0)),
                       (dt.bfloat16, values.reshape(64, 64) * 3.0)]:
        stored = x.astype(storage)
        exact = stored.astype(np.float64).mean()
        got = mean(run_on, stored)
        assert got.dtype == storage
        assert abs(float(got) - exact) <= eps(storage) * abs(exact), (run_on, storage, float(got), exact)
        rows = mean(run_on, np.broadcast_to(stored.reshape(-1), (3, stored.size)), 1)   # three broadcast rows
        np.testing.assert_allclose(rows.astype(np.float64), exact, rtol=eps(storage))


def test_16_bit_inputs_accumulate_in_f32_on_basic():
    assert_16_bit_inputs_accumulate_in_f32("basic")


def test_16_bit_inputs_accumulate_in_f32(engine):
    assert_16_bit_inputs_accumulate_in_f32(engine)


def test_f64_accuracy(engine):
    x = 1.0 + 1e-6 * np.random.default_rng(3).standard_normal(1 << 18)
    exact = math.fsum(x) / x.size
    got = float(mean(engine, x))
    assert abs(got - exact) <= 4 * np.finfo(np.float64).eps * abs(exact)


# -- known values on BASIC, and BASIC against PyTorch ----------------------------------------------


def test_known_values_of_mean_reshape_and_embedding():
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(basic("mean", x), 6.5)
    np.testing.assert_array_equal(basic("mean", x, 0), [5.0, 6.0, 7.0, 8.0])
    np.testing.assert_array_equal(basic("mean", x, 1, True), [[2.5], [6.5], [10.5]])
    np.testing.assert_array_equal(basic("mean", x, (0, 1), True), [[6.5]])
    np.testing.assert_array_equal(basic("reshape", x, (2, -1))[1], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0])
    np.testing.assert_array_equal(basic("embedding", np.array([2, 0, 2]), x), [x[2], x[0], x[2]])
    np.testing.assert_array_equal(basic("div", np.array([7, -7, 1]), np.array([2, 2, 0])), [3.5, -3.5, np.inf])
    assert basic("add", np.array([127], np.int8), 1).tolist() == [-128]


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_mean_as_torch(dtype):
    f = FLOATS[dtype]
    x = (np.random.default_rng(5).standard_normal((6, 7, 300)) + 1).astype(f)
    for axis in (None, 0, 2, -2, (0, 2)):
        for keepdims in (False, True):
            got = basic("mean", x, axis, keepdims)
            dims = () if axis is None else axis
            want = from_torch(torch.mean(to_torch(x), dim=dims if axis is not None else None, keepdim=keepdims)
                              if axis is not None else torch.mean(to_torch(x)))
            if axis is None and keepdims:
                want = want.reshape(1, 1, 1)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * eps(f),
                                       atol=2 * eps(f))
