"""layer_norm on every engine under test (see conftest) against BASIC: multi-dim
normalized_shape, every weight/bias combination (f32 weights with 16-bit inputs too), eps,
constant and offset rows, NaN/Inf, signed zeros, rows past a work group, zero-size input,
device-resident inputs on engines that have them.

First BASIC against known values, and the bad-argument rules."""
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip


pytestmark = pytest.mark.uses_ops("layer_norm")
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_layer_norm_known_values():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])          # mean 2.5, biased var 1.25
    out = polyeng.layer_norm(x, 4, eps=0.0)
    np.testing.assert_allclose(out, [[-1.3416407864998738, -0.4472135954999579,
                                      0.4472135954999579, 1.3416407864998738]], rtol=1e-14)
    out = polyeng.layer_norm(x.astype(np.float32), (4,), weight=np.array([1, 2, 0, -1], np.float32),
                             bias=np.full(4, 0.5, np.float32), eps=1.25)   # var + eps = 2.5
    s = 1 / math.sqrt(2.5)
    np.testing.assert_allclose(out, [[-1.5 * s + 0.5, -1.0 * s + 0.5, 0.5, -1.5 * s + 0.5]], rtol=1e-6)
    two = polyeng.layer_norm(np.array([[[0.0, 2.0], [4.0, 6.0]]], np.float16), (2, 2))
    assert two.dtype == np.float16
    np.testing.assert_allclose(two.astype(np.float64), [[[-1.3416, -0.4472], [0.4472, 1.3416]]], atol=2e-3)


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("kwargs,error,match", [
    ({"normalized_shape": 5}, ValueError, r"normalized_shape=\(5,\) does not match"),
    ({"normalized_shape": ()}, ValueError, r"normalized_shape=\(\)"),
    ({"normalized_shape": (2, 3, 4, 5)}, ValueError, "does not match"),
    ({"normalized_shape": 4, "weight": np.ones(3)}, ValueError, r"weight has shape \(3,\)"),
    ({"normalized_shape": 4, "bias": np.ones(4, np.float16)}, TypeError, "bias has dtype float16"),
    ({"normalized_shape": 4, "eps": -1}, ValueError, "eps=-1"),
    ({"normalized_shape": 4, "eps": 10 ** 400}, ValueError, "eps=1000.*0: expected a finite real number"),
    ({"normalized_shape": 4.0}, TypeError, "normalized_shape=4.0"),
])
def test_layer_norm_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        polyeng.layer_norm(np.ones((2, 3, 4)), **kwargs)


@pytest.mark.usefixtures("on_basic")
def test_float_ops_reject_integers():
    for fn, args in [(polyeng.layer_norm, (np.ones(4, np.int32), 4)), (polyeng.softmax, (np.ones(3, np.int8),)),
                     (polyeng.gelu, (np.ones(3, bool),)), (polyeng.linear, (np.ones(3, np.int32), np.ones((2, 3))))]:
        with pytest.raises(TypeError, match="expects a floating-point array"):
            fn(*args)


# -- every engine against BASIC --------------------------------------------------------------------

def run(engine, x, shape, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.layer_norm(x, shape, **kwargs)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_matches_basic(engine, x, shape, ulps=16, **kwargs):
    got, want = run(engine, x, shape, **kwargs), run("basic", x, shape, **kwargs)
    assert got.dtype == x.dtype and got.shape == x.shape
    want = want.astype(np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(want[np.isfinite(want)])))) if np.isfinite(want).any() else 1.0
    tol = ulps * eps(x.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, equal_nan=True)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("xshape,nshape", [((4, 6, 32), 32), ((3, 5, 7), (5, 7)), ((2, 13), (2, 13)),
                                           ((5, 1), 1), ((1, 7), (7,)), ((2, 3, 4, 5), (3, 4, 5)),
                                           ((259, 3), 3)])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both", "f32-both"])
def test_matches_basic(engine, affine, xshape, nshape, dtype):
    rng = np.random.default_rng(0)
    storage = FLOATS[dtype]
    x = (rng.standard_normal(xshape) * 3 + 1).astype(storage)
    feature_shape = (nshape,) if isinstance(nshape, int) else nshape
    param = np.float32 if affine == "f32-both" else storage
    w = rng.standard_normal(feature_shape).astype(param)
    b = rng.standard_normal(feature_shape).astype(param)
    kwargs = {"weight": w if affine in ("weight", "both", "f32-both") else None,
              "bias": b if affine in ("bias", "both", "f32-both") else None}
    assert_matches_basic(engine, x, nshape, **kwargs)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("eps_value", [0.0, 1e-5, 0.5])
def test_eps_and_special_rows(engine, dtype, eps_value):
    storage = FLOATS[dtype]
    big = 1000.0 if storage in (np.float16, dt.bfloat16) else 1e4
    rows = np.array([[1.5] * 8,                                          # constant: variance 0
                     [big + 0.25 * i for i in range(8)],                 # large mean, small spread
                     [1.0, np.nan, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [1.0, np.inf, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [-np.inf, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                     [0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0],
                     list(range(-4, 4))], np.float64).astype(storage)
    assert_matches_basic(engine, rows, 8, eps=eps_value)
    assert_matches_basic(engine, rows, 8, eps=eps_value, weight=np.full(8, 2.0, storage), bias=np.full(8, -1.0, storage))


def test_constant_row_is_exactly_the_bias(engine):
    x = np.full((3, 10), 0.1, np.float32)
    y = run(engine, x, 10, bias=np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(10, dtype=np.float32), (3, 10)))


def test_signed_zeros_without_bias(engine):
    x = np.array([[-1.0, 1.0]], np.float32)
    got = run(engine, x, 2, weight=np.array([0.0, -0.0], np.float32))
    want = run("basic", x, 2, weight=np.array([0.0, -0.0], np.float32))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_zero_size(engine):
    y = run(engine, np.zeros((0, 4), np.float64), 4, weight=np.ones(4))
    assert type(y) is np.ndarray and y.shape == (0, 4) and y.dtype == np.float64


@pytest.mark.device_tensors
@pytest.mark.parametrize("where", ["x", "weight", "all"])
def test_device_inputs_give_a_device_result(engine, where):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3, 4)).astype(np.float16)
    w, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float16)
    dev = {"x": x, "weight": w, "bias": b}
    on_device = ("x", "weight", "bias") if where == "all" else (where,)
    for name in on_device:
        dev[name] = device_tensor_or_skip(dev[name], engine)
    y = run(engine, dev["x"], (3, 4), weight=dev["weight"], bias=dev["bias"])
    assert type(y) is type(dev[on_device[0]]) and y.shape == x.shape and y.dtype == np.float16
    want = run("basic", x, (3, 4), weight=w, bias=b).astype(np.float64)
    np.testing.assert_allclose(polyeng.to_numpy(y).astype(np.float64), want, rtol=16 * eps(np.float16),
                               atol=16 * eps(np.float16) * 8.0)
