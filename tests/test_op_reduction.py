"""mean and sum on every engine under test (see conftest) against BASIC: every axis form, keepdims,
16-bit/f32/f64 storage, integers (sum: int64, exact), non-contiguous input, zero-size input; and
the accuracy every engine (BASIC too) must reach: the rounding error does not grow with the number
of values summed, and 16-bit inputs accumulate in f32.

BASIC's known values, its comparison with numpy and PyTorch's CPU ops, graphs, dask, device tensors
and bad arguments are at the end. amax and amin are in test_op_amax_amin.py."""
import math
import warnings

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import FLOATS, basic, eps, from_torch, needs_torch, to_torch, torch
from support import random_values


pytestmark = pytest.mark.uses_ops("mean", "sum")

AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 0), (0, 1, 2), (1,), [1, 2]]
OPS = ("mean", "sum")
INTS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}


def reduce(op, engine, x, axis=None, keepdims=False):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(x, axis=axis, keepdims=keepdims)


def mean(engine, x, axis=None, keepdims=False):
    return reduce("mean", engine, x, axis, keepdims)


def numpy_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def assert_matches_basic(engine, x, axis=None, keepdims=False, ulps=4, op="mean"):
    """Within ``ulps`` of BASIC, relative to the result and absolute to the values' magnitude (a
    result near zero of large values cancels); integer sums equal BASIC's."""
    got, want = reduce(op, engine, x, axis, keepdims), reduce(op, "basic", x, axis, keepdims)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    if x.dtype.kind in "iu":
        assert want.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        return want
    assert want.dtype == x.dtype
    tol = ulps * eps(x.dtype)
    magnitude = np.abs(x.astype(np.float64))
    if op == "mean":
        scale = max(1.0, float(magnitude.mean())) if x.size else 1.0
    else:   # a sum's rounding grows with the sum of the magnitudes (by log(n) at most: pairwise)
        scale = np.maximum(1.0, np.sum(magnitude, axis=numpy_axis(axis), keepdims=keepdims))
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    same = (g == w) | np.isnan(w)   # infinities too
    assert (same | (np.abs(g - w) <= tol * np.maximum(np.abs(w), scale))).all(), (g, w)
    return want


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op,dtype", [(op, d) for op in OPS for d in FLOATS] + [("sum", d) for d in INTS])
def test_every_axis_form(engine, op, dtype, keepdims):
    for shape in [(3, 4, 5), (2, 17, 33), (5, 1, 1031)]:
        rng = np.random.default_rng(sum(shape))
        x = (rng.standard_normal(shape) * 3 + 1).astype(FLOATS[dtype]) if dtype in FLOATS else \
            random_values(rng, shape, INTS[dtype])
        for axis in AXES:
            want = assert_matches_basic(engine, x, axis, keepdims, op=op)
            expected = getattr(np, op)(x.astype(np.float64), axis=numpy_axis(axis), keepdims=keepdims)
            assert want.shape == expected.shape   # numpy's shape rule, on BASIC too


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_small_and_zero_d_inputs(engine, op, dtype):
    f = FLOATS[dtype]
    for x, axis in [(np.array(2.5, f), None), (np.array(2.5, f), 0), (np.array(-1.5, f), -1),
                    (np.array([3.0], f), 0), (np.arange(7, dtype=np.float64).astype(f), None),
                    (np.arange(16, dtype=np.float64).astype(f), 0), (np.arange(17, dtype=np.float64).astype(f), -1),
                    (np.ones((1, 1, 1), f), (0, 2))]:
        for keepdims in (False, True):
            want = assert_matches_basic(engine, x, axis, keepdims, op=op)
            if x.ndim == 0:   # numpy refuses axis=0 of a 0-d array; PyTorch returns the value
                assert want.shape == () and want == x


@pytest.mark.parametrize("op,dtype", [(op, d) for op in OPS for d in ("f32", "bf16", "f64")] + [("sum", "s8")])
def test_non_contiguous_input(engine, op, dtype):
    rng = np.random.default_rng(1)
    base = (rng.standard_normal((6, 34, 10)) + 2).astype(FLOATS[dtype]) if dtype in FLOATS else \
        random_values(rng, (6, 34, 10), INTS[dtype])
    views = {"transposed": base.transpose(2, 0, 1), "negative": base[::-1, :, ::-1], "strided": base[:, ::2, 1::3],
             "broadcast": np.broadcast_to(base[:1], base.shape)}
    for name, x in views.items():
        assert not x.flags.c_contiguous, name
        for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
            assert_matches_basic(engine, x, axis, op=op)
            assert_matches_basic(engine, x, axis, keepdims=True, op=op)


ZERO_SIZE = [((0,), None), ((0, 3), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), 0), ((2, 0), 1), ((2, 0, 4), (0, 2)),
             ((2, 0, 4), (1,)), ((3, 0), -1)]


def assert_zero_size_results(run_on, op):
    """An empty mean is NaN and an empty sum 0 (as in numpy and PyTorch); an empty result is an
    empty array; the shape is numpy's; an integer sum is int64."""
    for f in (np.float32, np.float16) + ((np.int8,) if op == "sum" else ()):
        for shape, axis in ZERO_SIZE:
            for keepdims in (False, True):
                with warnings.catch_warnings(), np.errstate(all="ignore"):   # numpy: "Mean of empty slice"
                    warnings.simplefilter("ignore", RuntimeWarning)
                    expected = getattr(np, op)(np.zeros(shape), axis=axis, keepdims=keepdims)
                got = reduce(op, run_on, np.zeros(shape, f), axis, keepdims)
                assert type(got) is np.ndarray and got.dtype == (f if f != np.int8 else np.int64)
                assert got.shape == expected.shape, (run_on, shape, axis, keepdims, got.shape)
                np.testing.assert_array_equal(got.astype(np.float64), expected)


@pytest.mark.parametrize("op", OPS)
def test_zero_size_input_on_basic(op):
    assert_zero_size_results("basic", op)


@pytest.mark.parametrize("op", OPS)
def test_zero_size_input(engine, op):
    assert_zero_size_results(engine, op)


def _long_values(n, seed=0):
    """f32 values whose naive running sum drifts by thousands of ulps over 2**20 of them."""
    return (1.1 + 1e-3 * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)


def _relative_error(got, values, axis, op):
    exact = getattr(values.astype(np.float64), op)(axis=axis)   # f64 pairwise: exact to f32 precision
    return np.abs(got.astype(np.float64) - exact) / np.abs(exact) / float(np.finfo(np.float32).eps)


def assert_accurate_for_long_inputs(run_on, op):
    """The mean or sum of 2**20 f32 values lies within a few f32 ulps of the exact result, whichever
    axes are reduced: a running f32 sum over them would be off by about 1e5 ulps."""
    x = _long_values(1 << 20)
    cases = [(x, None), (x.reshape(4, -1), 1), (x.reshape(-1, 4), 0), (x.reshape(1024, 1024), (0, 1)),
             (x.reshape(1 << 10, 4, 1 << 8), (0, 2)), (x[:4097], None), (x[::-1], 0)]
    for values, axis in cases:
        error = _relative_error(reduce(op, run_on, values, axis), values, axis, op)
        assert float(np.max(error)) <= 4.0, (run_on, values.shape, axis, float(np.max(error)))


@pytest.mark.parametrize("op", OPS)
def test_accuracy_does_not_grow_with_length_on_basic(op):
    assert_accurate_for_long_inputs("basic", op)


@pytest.mark.parametrize("op", OPS)
def test_accuracy_does_not_grow_with_length(engine, op):
    assert_accurate_for_long_inputs(engine, op)


def assert_16_bit_inputs_accumulate_in_f32(run_on, op):
    """A bf16 running sum of 4096 ones stops at 256, and an f16 sum of 60000s overflows at the
    second value; an f32 accumulator gives the mean (and the sum, where it fits) to the storage
    precision."""
    values = np.ones(4096)
    values[::7] += 2.0 ** -6
    values[::13] -= 2.0 ** -5
    for storage, x in [(dt.bfloat16, values), (np.float16, values), (np.float16, np.full(4096, 60000.0)),
                       (dt.bfloat16, values.reshape(64, 64) * 3.0)]:
        stored = x.astype(storage)
        exact = getattr(stored.astype(np.float64), op)()
        got = reduce(op, run_on, stored)
        assert got.dtype == storage
        if op == "sum" and exact > 65504 and storage == np.float16:
            assert float(got) == np.inf   # past f16's range: inf, as numpy and PyTorch round it
            continue
        assert abs(float(got) - exact) <= eps(storage) * abs(exact), (run_on, storage, float(got), exact)
        rows = reduce(op, run_on, np.broadcast_to(stored.reshape(-1), (3, stored.size)), 1)   # three broadcast rows
        np.testing.assert_allclose(rows.astype(np.float64), exact, rtol=eps(storage))


@pytest.mark.parametrize("op", OPS)
def test_16_bit_inputs_accumulate_in_f32_on_basic(op):
    assert_16_bit_inputs_accumulate_in_f32("basic", op)


@pytest.mark.parametrize("op", OPS)
def test_16_bit_inputs_accumulate_in_f32(engine, op):
    assert_16_bit_inputs_accumulate_in_f32(engine, op)


@pytest.mark.parametrize("op", OPS)
def test_f64_accuracy(engine, op):
    x = 1.0 + 1e-6 * np.random.default_rng(3).standard_normal(1 << 18)
    exact = math.fsum(x) / (x.size if op == "mean" else 1)
    got = float(reduce(op, engine, x))
    assert abs(got - exact) <= 4 * np.finfo(np.float64).eps * abs(exact)


def test_integer_sums_are_int64_and_wrap_as_numpy(engine):
    """Every integer dtype sums to int64, exactly; past int64's range the sum wraps around, as
    numpy's and PyTorch's do."""
    rng = np.random.default_rng(4)
    for dtype in INTS.values():
        x = random_values(rng, (3, 70001), dtype)   # long enough for parallel segments
        for axis in (None, 0, 1):
            got = reduce("sum", engine, x, axis)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, np.sum(x.astype(np.int64), axis=axis))
    big = np.full(1 << 17, np.iinfo(np.int64).max, np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(reduce("sum", engine, big), np.sum(big))   # wraps: -131072


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


def test_known_values_of_sum():
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(basic("sum", x), 78.0)
    np.testing.assert_array_equal(basic("sum", x, 0), [15.0, 18.0, 21.0, 24.0])
    np.testing.assert_array_equal(basic("sum", x, -1, True), [[10.0], [26.0], [42.0]])
    ints = basic("sum", np.array([100, 100, 100], np.int8))
    assert ints.dtype == np.int64 and ints == 300   # no int8 wrap-around: an int64 sum
    assert basic("sum", np.array([200, 100], np.uint8)).tolist() == 300
    assert np.isnan(basic("sum", np.array([1.0, np.nan], np.float32)))
    assert basic("sum", np.array([np.inf, 1.0], np.float16)) == np.inf
    assert np.isnan(basic("sum", np.array([np.inf, -np.inf], np.float32)))


@pytest.mark.parametrize("dtype", list(FLOATS) + list(INTS))
def test_sum_as_numpy_and_torch(dtype):
    rng = np.random.default_rng(6)
    f = FLOATS.get(dtype) or INTS[dtype]
    x = (rng.standard_normal((6, 7, 300)) + 1).astype(f) if dtype in FLOATS else random_values(rng, (6, 7, 300), f)
    for axis in (None, 0, 2, -2, (0, 2)):
        for keepdims in (False, True):
            got = basic("sum", x, axis, keepdims)
            wide = np.sum(x.astype(np.float64 if dtype in FLOATS else np.int64), axis=axis, keepdims=keepdims)
            assert got.shape == wide.shape
            if dtype in INTS:
                assert got.dtype == np.int64
                np.testing.assert_array_equal(got, wide)
            else:
                assert got.dtype == f
                np.testing.assert_allclose(got.astype(np.float64), wide, rtol=2 * eps(f), atol=2 * eps(f) * 300)
            if torch is None:
                continue
            t = to_torch(x)
            want = from_torch(torch.sum(t, dim=axis, keepdim=keepdims) if axis is not None else torch.sum(t))
            if axis is None and keepdims:
                want = want.reshape(1, 1, 1)
            assert got.dtype == want.dtype and got.shape == want.shape   # torch.sum of integers is int64 too
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * eps(f) if
                                       dtype in FLOATS else 0, atol=2 * eps(f) * 300 if dtype in FLOATS else 0)


def test_sum_is_a_deny_op_computed_in_f32_under_any_mode():
    from polyeng.amp import Category
    spec = polyeng.ops.OPS["sum"]
    assert spec.category is Category.DENY and spec.chunking == "reduction" and not spec.exact
    x = _long_values(1 << 12)
    with polyeng.fp_math_mode("bf16"):
        assert polyeng.explain("sum", x).compute_type == "f32"
        assert abs(float(polyeng.sum(x)) - math.fsum(x.astype(np.float64))) <= 4 * eps(np.float32) * 4500
    assert polyeng.explain("sum", np.ones(3, np.int8)).compute_type == "s64"


def test_a_graph_of_sum():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    graph = polyeng.graph.trace(lambda v: polyeng.sum(polyeng.mul(v, 2.0), axis=(1, 2)), x)
    assert [n.op for n in graph.nodes] == ["mul", "sum"]
    np.testing.assert_array_equal(graph(x), [132.0, 420.0])
    np.testing.assert_array_equal(graph(x[:1]), [132.0])


@pytest.mark.parametrize("op", OPS)
def test_dask_reduces_the_chunked_axes_whole(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = np.random.default_rng(7).standard_normal((9, 10, 7)).astype(np.float32)
    for axis in (None, 0, (0, 2), -1):
        for keepdims in (False, True):
            lazy = reduce(op, "basic", da.from_array(x, chunks=(4, 3, 5)), axis, keepdims)
            want = reduce(op, "basic", x, axis, keepdims)
            assert isinstance(lazy, da.Array) and lazy.shape == want.shape and lazy.dtype == want.dtype
            np.testing.assert_array_equal(dask.compute(lazy, scheduler="sync")[0], want)
    ints = polyeng.sum(da.from_array(np.arange(12, dtype=np.int8).reshape(3, 4), chunks=2), axis=0)
    assert ints.dtype == np.int64 and ints.compute(scheduler="sync").tolist() == [12, 15, 18, 21]


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8], ids=lambda d: np.dtype(d).name)
def test_sum_of_a_device_tensor_stays_on_the_device(engine, dtype):
    x = random_values(np.random.default_rng(8), (5, 33), dtype)
    if dtype != np.int8:
        x = np.abs(x.astype(np.float32)).clip(0, 10).astype(dtype)
    got = polyeng.sum(polyeng.to_device(x, engine), axis=1)
    assert not isinstance(got, np.ndarray)
    want = basic("sum", x, 1)
    np.testing.assert_allclose(polyeng.to_numpy(got).astype(np.float64), want.astype(np.float64),
                               rtol=4 * (eps(dtype) if dtype != np.int8 else 0))


@pytest.mark.parametrize("op", OPS)
def test_bad_arguments_are_named(op):
    x = np.ones((2, 3), np.float32)
    verb = "average" if op == "mean" else "reduce"
    cases = [
        (lambda: getattr(polyeng, op)(x, 2), ValueError, r"^axis=2 is out of range for an array with 2 dimensions"),
        (lambda: getattr(polyeng, op)(x, (0, -2)), ValueError, r"^axis=\(0, -2\) names an axis twice"),
        (lambda: getattr(polyeng, op)(x, ()), ValueError, rf"^axis=\(\): give axis=None to {verb} over every axis"),
        (lambda: getattr(polyeng, op)(x, 0.5), TypeError, r"^axis=0.5: expected an int"),
        (lambda: getattr(polyeng, op)(x, [0, "1"]), TypeError, r"^axis\[1\]='1': expected an int"),
        (lambda: getattr(polyeng, op)(x, 0, 1), TypeError, r"^keepdims=1: expected True or False"),
        (lambda: getattr(polyeng, op)(np.ones(2, np.complex64)), TypeError, r"^x has dtype complex64"),
        (lambda: getattr(polyeng, op)(np.ones(2, bool)), TypeError, r"^x has dtype bool"),
    ]
    if op == "sum":
        cases.append((lambda: polyeng.sum(np.ones(2, bool)), TypeError,
                      r"^x has dtype bool; sum expects a floating-point or integer array: count the True values"))
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
