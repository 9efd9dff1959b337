"""OPENCL softmax / log_softmax and layer_norm against BASIC: any axis (inner > 1 lanes),
odd sizes past a work group, 0-d and zero-size inputs, rows of -inf, +inf, NaN and huge
values, every weight/bias combination (f32 weights with 16-bit inputs too), eps, and
device-resident inputs giving device results."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["opencl"].available,
                                reason="no OpenCL platform (the CI run requires one)")
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
OPS = ("softmax", "log_softmax")


def on(engine, op, *args, **kwargs):
    # BASIC's f32 result of a huge f16 log_softmax overflows f16 on the way back (-> -inf).
    with polyeng.compute_eng(engine, fallback=False), np.errstate(over="ignore"):
        return getattr(polyeng, op)(*args, **kwargs)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_close(got, want, dtype, ulps, scale=1.0):
    assert type(got) is np.ndarray and got.dtype == dtype and got.shape == want.shape
    tol = ulps * eps(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * scale,
                               equal_nan=True)


def assert_softmax_matches_basic(op, x, axis, ulps=8):
    finite = np.abs(x.astype(np.float64)[np.isfinite(x.astype(np.float64))])
    scale = max(1.0, float(finite.max())) if op == "log_softmax" and finite.size else 1.0
    assert_close(on("opencl", op, x, axis=axis), on("basic", op, x, axis=axis), x.dtype, ulps, scale)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("shape,axis", [((4, 5, 33), 2), ((4, 5, 33), 1), ((4, 5, 33), 0), ((), 0),
                                        ((1,), 0), ((7,), 0), ((13, 1), 1), ((2, 300, 3), 1),
                                        ((3, 13, 7, 2), 1), ((1, 1, 1), 1), ((257, 3), 1), ((3, 259), 0)])
@pytest.mark.parametrize("op", OPS)
def test_softmax_matches_basic(op, shape, axis, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 4).astype(FLOATS[dtype])
    assert_softmax_matches_basic(op, x, axis)


def special_rows(dtype):
    big = float(np.finfo(np.float16).max) if dtype == np.float16 else 1e30
    nan, inf = np.nan, np.inf
    rows = [[-inf, -inf, -inf, -inf, -inf], [1.0, inf, 2.0, -inf, 0.0], [1.0, nan, 2.0, 3.0, 4.0],
            [nan, nan, nan, nan, nan], [-inf, 1.0, -inf, 2.0, -inf], [inf, inf, 1.0, 1.0, 1.0],
            [nan, 1.0, 2.0, 3.0, 4.0], [big, -big, big, 0.0, 1.0], [-big, -big, -big, -big, -big],
            [0.0, 0.0, 0.0, 0.0, 0.0]]
    return np.array(rows, np.float64).astype(dtype)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_softmax_special_values_along_any_axis(op, dtype):
    x = special_rows(FLOATS[dtype])
    assert_softmax_matches_basic(op, x, 1)
    assert_softmax_matches_basic(op, np.ascontiguousarray(x.T), 0)
    assert_softmax_matches_basic(op, np.ascontiguousarray(x.T).reshape(5, 2, 5), 0)


@pytest.mark.parametrize("op", OPS)
def test_softmax_zero_size_and_device_input(op):
    empty = on("opencl", op, np.zeros((3, 0, 2), np.float32), axis=1)
    assert type(empty) is np.ndarray and empty.shape == (3, 0, 2) and empty.dtype == np.float32
    x = np.random.default_rng(1).standard_normal((6, 9)).astype(dt.bfloat16)
    y = on("opencl", op, polyeng.to_device(x), axis=0)
    assert type(y).__name__ == "OpenCLTensor" and y.shape == x.shape and y.dtype == dt.bfloat16
    assert_close(polyeng.to_numpy(y), on("basic", op, x, axis=0), x.dtype, 8, 4.0)


def assert_layer_norm_matches_basic(x, shape, ulps=16, **kwargs):
    want = on("basic", "layer_norm", x, shape, **kwargs).astype(np.float64)
    finite = want[np.isfinite(want)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    assert_close(on("opencl", "layer_norm", x, shape, **kwargs), want, x.dtype, ulps, scale)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("xshape,nshape", [((4, 6, 32), 32), ((3, 5, 7), (5, 7)), ((2, 13), (2, 13)),
                                           ((5, 1), 1), ((1, 7), (7,)), ((2, 3, 4, 5), (3, 4, 5)),
                                           ((259, 3), 3)])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both", "f32-both"])
def test_layer_norm_matches_basic(affine, xshape, nshape, dtype):
    rng = np.random.default_rng(0)
    storage = FLOATS[dtype]
    x = (rng.standard_normal(xshape) * 3 + 1).astype(storage)
    feature_shape = (nshape,) if isinstance(nshape, int) else nshape
    param = np.float32 if affine == "f32-both" else storage
    w = rng.standard_normal(feature_shape).astype(param)
    b = rng.standard_normal(feature_shape).astype(param)
    kwargs = {"weight": w if affine in ("weight", "both", "f32-both") else None,
              "bias": b if affine in ("bias", "both", "f32-both") else None}
    assert_layer_norm_matches_basic(x, nshape, **kwargs)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("eps_value", [0.0, 1e-5, 0.5])
def test_layer_norm_eps_and_special_rows(dtype, eps_value):
    storage = FLOATS[dtype]
    big = 1000.0 if storage in (np.float16, dt.bfloat16) else 1e4
    rows = np.array([[1.5] * 8,                                          # constant: variance 0
                     [big + 0.25 * i for i in range(8)],                 # large mean, small spread
                     [1.0, np.nan, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [1.0, np.inf, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [-np.inf, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0],
                     list(range(-4, 4))], np.float64).astype(storage)
    assert_layer_norm_matches_basic(rows, 8, eps=eps_value)
    assert_layer_norm_matches_basic(rows, 8, eps=eps_value, weight=np.full(8, 2.0, storage),
                                    bias=np.full(8, -1.0, storage))


def test_layer_norm_constant_row_is_exactly_the_bias():
    x = np.full((3, 10), 0.1, np.float32)
    y = on("opencl", "layer_norm", x, 10, bias=np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(10, dtype=np.float32), (3, 10)))


def test_layer_norm_signed_zeros_without_bias():
    x = np.array([[-1.0, 1.0]], np.float32)
    got = on("opencl", "layer_norm", x, 2, weight=np.array([0.0, -0.0], np.float32))
    want = on("basic", "layer_norm", x, 2, weight=np.array([0.0, -0.0], np.float32))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("where", ["x", "weight", "all"])
def test_layer_norm_device_inputs_give_a_device_result(where):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3, 4)).astype(np.float16)
    w, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float16)
    dev = {"x": x, "weight": w, "bias": b}
    for name in (("x", "weight", "bias") if where == "all" else (where,)):
        dev[name] = polyeng.to_device(dev[name])
    y = on("opencl", "layer_norm", dev["x"], (3, 4), weight=dev["weight"], bias=dev["bias"])
    assert type(y).__name__ == "OpenCLTensor" and y.shape == x.shape and y.dtype == np.float16
    want = on("basic", "layer_norm", x, (3, 4), weight=w, bias=b)
    assert_close(polyeng.to_numpy(y), want, x.dtype, 16, 8.0)


def test_layer_norm_zero_size():
    y = on("opencl", "layer_norm", np.zeros((0, 4), np.float64), 4, weight=np.ones(4))
    assert type(y) is np.ndarray and y.shape == (0, 4) and y.dtype == np.float64
