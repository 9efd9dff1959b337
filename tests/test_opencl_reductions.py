"""OPENCL softmax / log_softmax against BASIC: any axis (inner > 1 lanes), odd sizes past a
work group, 0-d and zero-size inputs, rows of -inf, +inf, NaN and huge values; device-resident
inputs of softmax and layer_norm giving device results (layer_norm's values on every JIT engine
are in test_layer_norm_engines.py)."""
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
