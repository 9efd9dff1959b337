"""amax and amin (torch.amax, torch.amin): exact reductions in the order of maximum and minimum.

BASIC against numpy and PyTorch (NaN wins, +0.0 is above -0.0, integers compare as integers,
zero elements are a ValueError), then every engine under test (see conftest) against BASIC bit for
bit: every axis form, every dtype, views, 0-d and zero-size inputs, rows long enough for parallel
segments, device tensors; graphs, dask and each bad argument."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import FLOATS, INTS, needs_torch, torch
from support import assert_identical, bits, random_values

pytestmark = pytest.mark.uses_ops("amax", "amin")
OPS = ("amax", "amin")
NUMPY = {"amax": np.max, "amin": np.min}
DTYPES = {**FLOATS, **INTS}
AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 0), (0, 1, 2), (1,), [1, 2]]


def run(engine, op, x, axis=None, keepdims=False):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(x, axis=axis, keepdims=keepdims)


def check(engine, op, x, axis=None, keepdims=False):
    want = run("basic", op, x, axis, keepdims)
    assert_identical(run(engine, op, x, axis, keepdims), want)
    return want


def numpy_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def assert_as_numpy(got, x, op, axis=None, keepdims=False):
    """numpy's values (NaN where numpy has NaN, whatever its bits), and of two zeros amax's +0.0
    and amin's -0.0 wherever both are among the reduced values."""
    with np.errstate(invalid="ignore"):
        want = NUMPY[op](x, axis=numpy_axis(axis), keepdims=keepdims)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    if x.dtype.kind not in "iu" and x.size:
        wide = x.astype(np.float64)
        plus = np.any((wide == 0) & ~np.signbit(wide), axis=numpy_axis(axis), keepdims=keepdims)
        minus = np.any((wide == 0) & np.signbit(wide), axis=numpy_axis(axis), keepdims=keepdims)
        zero = got.astype(np.float64) == 0
        sign = np.signbit(got.astype(np.float64))
        if op == "amax":
            assert (sign[zero] == ~plus[zero]).all()
        else:
            assert (sign[zero] == minus[zero]).all()


# -- BASIC against known values, numpy and PyTorch -----------------------------------------------


def test_known_values(on_basic):
    x = np.array([[1.0, -2.0, 3.5], [-0.0, 0.0, -0.0], [np.inf, np.nan, -np.inf]], np.float32)
    np.testing.assert_array_equal(polyeng.amax(x, axis=1), [3.5, 0.0, np.nan])
    np.testing.assert_array_equal(polyeng.amin(x, axis=1), [-2.0, -0.0, np.nan])
    assert not np.signbit(polyeng.amax(x[1])) and np.signbit(polyeng.amin(x[1]))
    assert np.signbit(polyeng.amax(np.array([-0.0, -0.0], np.float16)))
    np.testing.assert_array_equal(polyeng.amax(x[:2], axis=0, keepdims=True), [[1.0, 0.0, 3.5]])
    ints = np.array([[-128, 127], [5, -7]], np.int8)
    assert polyeng.amax(ints).dtype == np.int8 and polyeng.amax(ints) == 127 and polyeng.amin(ints) == -128
    assert polyeng.amax(np.array([0, 255, 7], np.uint8)) == 255
    # a NaN result has the same bits on every engine: amax's 0x7FFF..., amin's 0xFFFF...
    assert bits(polyeng.amax(np.array([np.nan, 1.0], np.float32))) == 0x7FFFFFFF
    assert bits(polyeng.amin(np.array([1.0, -np.nan], dt.bfloat16))) == 0xFFFF


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_as_numpy(on_basic, op, dtype):
    rng = np.random.default_rng(len(dtype))
    x = random_values(rng, (4, 9, 33), DTYPES[dtype])   # NaN, +-inf and -0.0 first among the floats
    if DTYPES[dtype] in FLOATS.values():
        x[2] = np.where(rng.random((9, 33)) > 0.5, 0.0, -0.0).astype(x.dtype)   # rows of zeros of both signs
        x[3, :, ::2] = -0.0
    for axis in AXES:
        for keepdims in (False, True):
            assert_as_numpy(getattr(polyeng, op)(x, axis, keepdims), x, op, axis, keepdims)


@needs_torch
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_as_torch(on_basic, op, dtype):
    from elementwise_checks import from_torch, to_torch
    x = random_values(np.random.default_rng(9), (6, 7, 40), DTYPES[dtype])
    for axis in (None, 0, 2, -2, (0, 2)):
        for keepdims in (False, True):
            got = getattr(polyeng, op)(x, axis, keepdims)
            t = to_torch(x)
            fn = getattr(torch, op)
            want = from_torch(fn(t, dim=axis, keepdim=keepdims) if axis is not None else fn(t))
            if axis is None and keepdims:
                want = want.reshape(1, 1, 1)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


# -- every engine against BASIC -------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_every_axis_form(engine, op, dtype, keepdims):
    for shape in [(3, 4, 5), (2, 17, 33), (5, 1, 1031)]:
        rng = np.random.default_rng(sum(shape))
        x = random_values(rng, shape, DTYPES[dtype])
        if DTYPES[dtype] in FLOATS.values():
            x[..., 1::3] = -0.0
            x[..., ::5] = 0.0
        for axis in AXES:
            assert_as_numpy(check(engine, op, x, axis, keepdims), x, op, axis, keepdims)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_nan_anywhere_wins(engine, op, dtype):
    f = FLOATS[dtype]
    for n in (1, 15, 16, 17, 300, 1031):
        for where in {0, n // 2, n - 1}:
            for nan in (np.nan, -np.nan):
                x = np.linspace(-5, 5, n).astype(f)
                x[where] = nan
                got = check(engine, op, x)
                assert np.isnan(got.astype(np.float64))
                assert np.isnan(check(engine, op, np.stack([x, x[::-1]]), 1).astype(np.float64)).all()


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64", "s8", "u8"])
@pytest.mark.parametrize("op", OPS)
def test_non_contiguous_input(engine, op, dtype):
    base = random_values(np.random.default_rng(1), (6, 34, 10), DTYPES[dtype])
    views = {"transposed": base.transpose(2, 0, 1), "negative": base[::-1, :, ::-1], "strided": base[:, ::2, 1::3],
             "broadcast": np.broadcast_to(base[:1], base.shape)}
    for name, x in views.items():
        assert not x.flags.c_contiguous, name
        for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
            check(engine, op, x, axis)
            check(engine, op, x, axis, keepdims=True)


@pytest.mark.parametrize("op", OPS)
def test_zero_d_and_zero_size_results(engine, op):
    for dtype in (np.float32, dt.bfloat16, np.int64):
        x = np.array(-0.0 if dtype != np.int64 else -3, dtype)
        for axis in (None, 0, -1):
            for keepdims in (False, True):
                got = check(engine, op, x, axis, keepdims)
                assert got.shape == () and bits(got) == bits(x)   # a 0-d array is its own extreme
        for shape, axis in [((0, 3), 1), ((0, 3), -1), ((2, 0, 4), (0, 2)), ((0,), ())]:
            if axis == ():
                continue
            got = check(engine, op, np.zeros(shape, dtype), axis)
            assert got.size == 0 and got.shape == np.max(np.zeros(shape), axis=axis).shape


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.int32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_long_rows_run_in_parallel_segments(engine, op, dtype):
    x = random_values(np.random.default_rng(2), 37 * 56701, dtype)   # past NUMBA's one-thread size
    for shape, axis in [((-1,), None), ((1, -1), 1), ((37, -1), 0), ((37, -1), 1), ((-1, 37), 0), ((-1, 37), 1),
                        ((1, -1, 1), 1)]:
        got = check(engine, op, x.reshape(shape), axis)
        assert_as_numpy(got, x.reshape(shape), op, axis)


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_device_tensors_stay_on_the_device(engine, op, dtype):
    x = random_values(np.random.default_rng(3), (5, 33), dtype)
    got = getattr(polyeng, op)(polyeng.to_device(x, engine), axis=1)
    assert not isinstance(got, np.ndarray)
    assert_identical(polyeng.to_numpy(got), run("basic", op, x, 1))


def test_exact_follow_ops_unchanged_by_the_fp_math_mode():
    from polyeng.amp import Category
    for op in OPS:
        spec = polyeng.ops.OPS[op]
        assert spec.exact and spec.category is Category.FOLLOW and spec.chunking == "reduction"
        assert spec.family == "reduction" and getattr(polyeng, op) is spec.function
    x = random_values(np.random.default_rng(4), (7, 40), np.float32)
    with polyeng.fp_math_mode("bf16"):
        assert polyeng.explain("amax", x).compute_type == "f32"
        assert_identical(polyeng.amax(x, 1), run("basic", "amax", x, 1))


# -- graphs and dask ------------------------------------------------------------------------------


def test_a_graph_of_amax_and_amin():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10

    def model(v):
        return polyeng.sub(polyeng.amax(v, axis=-1), polyeng.amin(v, axis=-1))
    graph = polyeng.graph.trace(model, x)
    assert [n.op for n in graph.nodes] == ["amax", "amin", "sub"]
    assert_identical(graph(x), np.full((2, 3), 3.0, np.float32))
    assert_identical(graph(x[:1]), np.full((1, 3), 3.0, np.float32))


@pytest.mark.parametrize("op", OPS)
def test_dask_reduces_the_chunked_axes_whole(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = random_values(np.random.default_rng(5), (9, 10, 7), np.float32)
    for axis in (None, 0, (0, 2), -1):
        for keepdims in (False, True):
            lazy = getattr(polyeng, op)(da.from_array(x, chunks=(4, 3, 5)), axis, keepdims)
            want = run("basic", op, x, axis, keepdims)
            assert isinstance(lazy, da.Array) and lazy.shape == want.shape and lazy.dtype == want.dtype
            assert_identical(dask.compute(lazy, scheduler="sync")[0], want)


# -- bad arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_bad_arguments_are_named(op):
    fn = getattr(polyeng, op)
    x = np.ones((2, 3), np.float32)
    cases = [
        (lambda: fn(np.zeros((0, 3), np.float32)), ValueError,
         rf"^x has shape \(0, 3\): {op} over axis 0, of size 0, has no value to pick"),
        (lambda: fn(np.zeros((2, 0)), axis=(0, 1)), ValueError, rf"^x has shape \(2, 0\): {op} over axis 1"),
        (lambda: fn(np.zeros(0, np.int8)), ValueError, rf"^x has shape \(0,\): {op} over axis 0"),
        (lambda: fn(x, 2), ValueError, r"^axis=2 is out of range for an array with 2 dimensions"),
        (lambda: fn(x, (1, 1)), ValueError, r"^axis=\(1, 1\) names an axis twice"),
        (lambda: fn(x, ()), ValueError, r"^axis=\(\): give axis=None to reduce over every axis"),
        (lambda: fn(x, 1.0), TypeError, r"^axis=1.0: expected an int"),
        (lambda: fn(x, 0, "yes"), TypeError, r"^keepdims='yes': expected True or False"),
        (lambda: fn(np.ones(2, bool)), TypeError, rf"^x has dtype bool; {op} expects a floating-point or integer"),
        (lambda: fn(np.ones(2, np.complex64)), TypeError, r"^x has dtype complex64"),
        (lambda: fn(None), TypeError, r"^x=None"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
