"""BASIC against independent known values, and the bad-argument rules, for concat, permute_contiguous,
select, layer_norm, softmax/log_softmax, matmul/linear, gelu and cast."""
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt


@pytest.fixture(autouse=True)
def on_basic():
    with polyeng.compute_eng("basic", fallback=False):
        yield


# -- concat ---------------------------------------------------------------------------------------
def test_concat_known_values_and_promotion():
    a = np.array([[1, 2]], np.int8)
    b = np.array([[3.5, 4.5]], np.float16)
    out = polyeng.concat([a, b], axis=0)
    assert out.dtype == np.float16 and out.tolist() == [[1, 2], [3.5, 4.5]]
    out = polyeng.concat((np.array([[1], [2]], np.int32), np.array([[3, 4], [5, 6]], np.int32)), axis=-1)
    assert out.dtype == np.int32 and out.tolist() == [[1, 3, 4], [2, 5, 6]]
    mixed = polyeng.concat([np.ones(1, dt.bfloat16), np.ones(1, np.float16)])
    assert mixed.dtype == np.float32
    assert polyeng.concat([np.array([True]), np.array([False])]).tolist() == [True, False]


@pytest.mark.parametrize("tensors,axis,error,match", [
    ([], 0, ValueError, r"tensors=\[\]"),
    (np.ones((2, 2)), 0, TypeError, "list or tuple"),
    ([np.ones((2, 2)), np.ones(2)], 0, ValueError, r"tensors\[1\].*same rank"),
    ([np.ones((2, 2)), np.ones((3, 3))], 1, ValueError, r"tensors\[1\] has shape \(3, 3\).*axis=1"),
    ([np.ones((2, 2))], 2, ValueError, r"axis=2 is out of range"),
    ([np.ones((2, 2))], 1.0, TypeError, r"axis=1.0"),
    ([np.float32(1)], 0, ValueError, r"0-D"),
])
def test_concat_bad_arguments(tensors, axis, error, match):
    with pytest.raises(error, match=match):
        polyeng.concat(tensors, axis=axis)


# -- permute_contiguous ---------------------------------------------------------------------------
def test_permute_known_values():
    x = np.arange(6).reshape(1, 2, 3)
    out = polyeng.permute_contiguous(x, (2, 0, -2))
    assert out.flags.c_contiguous and out.shape == (3, 1, 2)
    assert out.tolist() == [[[0, 3]], [[1, 4]], [[2, 5]]]


@pytest.mark.parametrize("dims,error,match", [
    ((0, 1), ValueError, r"dims=\(0, 1\) has 2 entries but x is 3-D"),
    ((0, 1, 1), ValueError, "repeats an axis"),
    ((0, 1, 3), ValueError, r"dims=3 is out of range"),
    ("abc", TypeError, "dims="),
])
def test_permute_bad_arguments(dims, error, match):
    with pytest.raises(error, match=match):
        polyeng.permute_contiguous(np.ones((2, 3, 4)), dims)


# -- select ---------------------------------------------------------------------------------------
def test_select_two_step_broadcast_examples():
    then = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    cond = np.eye(4, 5, dtype=bool)                       # {4,5} into {2,3,4,5}: ok
    out = polyeng.select(cond, then, np.float32(-1))
    assert out.shape == (2, 3, 4, 5) and out[1, 2, 3, 3] == then[1, 2, 3, 3] and out[0, 0, 0, 1] == -1
    cond = np.zeros((3, 1, 5), bool)                      # {3,1,5} into {2,3,4,5}: ok
    assert (polyeng.select(cond, then, np.zeros(5, np.float32)) == 0).all()
    with pytest.raises(ValueError, match=r"cond \(3, 5\) does not broadcast one way"):
        polyeng.select(np.ones((3, 5), bool), then, then)
    # cond may not grow the output: then/else are (4,), cond (2, 4)
    with pytest.raises(ValueError, match="may not add dimensions"):
        polyeng.select(np.ones((2, 4), bool), np.ones(4), np.ones(4))
    # then and else broadcast to each other first
    out = polyeng.select(np.array([True, False]), np.array([[1.0], [2.0]]), np.array([10.0, 20.0]))
    assert out.tolist() == [[1.0, 20.0], [2.0, 20.0]]


def test_select_never_leaks_nan_and_promotes():
    cond = np.array([True, False, True])
    out = polyeng.select(cond, np.array([1, 2, 3], np.int8), np.array([np.nan, np.nan, np.nan], np.float16))
    assert out.dtype == np.float16
    assert out[0] == 1 and math.isnan(out[1]) and out[2] == 3
    out = polyeng.select(~cond, np.full(3, np.nan, np.float32), np.array([4, 5, 6], np.float32))
    assert out[0] == 4 and out[2] == 6


def test_select_bad_arguments():
    with pytest.raises(TypeError, match="cond has dtype int64.*bool"):
        polyeng.select(np.array([1, 0]), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"then \(2,\) and else_ \(3,\) do not broadcast"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="auto_broadcast='none' requires equal shapes"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(1), auto_broadcast="none")
    with pytest.raises(ValueError, match="auto_broadcast='bidirectional'"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(2), auto_broadcast="bidirectional")
    out = polyeng.select(np.ones(2, bool), np.ones(2), np.zeros(2), auto_broadcast="none")
    assert out.tolist() == [1, 1]


# -- layer_norm -----------------------------------------------------------------------------------
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


def test_float_ops_reject_integers():
    for fn, args in [(polyeng.layer_norm, (np.ones(4, np.int32), 4)), (polyeng.softmax, (np.ones(3, np.int8),)),
                     (polyeng.gelu, (np.ones(3, bool),)), (polyeng.linear, (np.ones(3, np.int32), np.ones((2, 3))))]:
        with pytest.raises(TypeError, match="expects a floating-point array"):
            fn(*args)


# -- softmax --------------------------------------------------------------------------------------
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


def test_softmax_bad_axis():
    with pytest.raises(ValueError, match=r"axis=2 is out of range .* 2 dimensions"):
        polyeng.softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match=r"axis=-3"):
        polyeng.log_softmax(np.ones((2, 2)), axis=-3)


# -- matmul / linear ------------------------------------------------------------------------------
def test_matmul_known_values_and_numpy_rules():
    a = np.array([[1, 2], [3, 4]], np.int32)
    b = np.array([[5, 6], [7, 8]], np.int32)
    assert polyeng.matmul(a, b).tolist() == [[19, 22], [43, 50]]
    assert polyeng.matmul(a, b).dtype == np.int32
    assert polyeng.matmul(np.array([1.0, 2.0]), np.array([3.0, 4.0])).shape == ()
    assert polyeng.matmul(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 11.0
    assert polyeng.matmul(np.ones((5, 1, 2, 3)), np.ones((4, 3, 2))).shape == (5, 4, 2, 2)
    half = polyeng.matmul(np.full((1, 300), 0.1, np.float16), np.ones((300, 1), np.float16))
    assert half.dtype == np.float16
    np.testing.assert_allclose(float(half[0, 0]), 300 * float(np.float16(0.1)), rtol=1e-3)  # f32 accumulation


def test_matmul_bad_shapes():
    with pytest.raises(ValueError, match=r"a \(2, 3\) and b \(2, 3\) do not chain"):
        polyeng.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="batch dimensions"):
        polyeng.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))
    with pytest.raises(ValueError, match="a is 0-D"):
        polyeng.matmul(np.float32(2), np.ones(2))


def test_linear_known_values_and_errors():
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    w = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]], np.float32)
    assert polyeng.linear(x, w).tolist() == [[1.0, 6.0]]
    assert polyeng.linear(x[0], w, np.array([0.5, -1.0], np.float32)).tolist() == [1.5, 5.0]
    with pytest.raises(ValueError, match=r"weight has shape \(2, 3\) but x \(1, 4\)"):
        polyeng.linear(np.ones((1, 4)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"bias has shape \(3,\)"):
        polyeng.linear(x, w, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="weight has shape .* linear expects a 2-D"):
        polyeng.linear(x, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="weight has dtype float16 but the input is float32"):
        polyeng.linear(x, w.astype(np.float16))


# -- gelu -----------------------------------------------------------------------------------------
def test_gelu_known_values():
    out = polyeng.gelu(np.array([-1.0, 0.0, 1.0, 3.0]))
    np.testing.assert_allclose(out, [-0.15865525393145707, 0.0, 0.8413447460685429, 2.9959503059051098],
                               rtol=1e-15)
    out = polyeng.gelu(np.array([-1.0, 1.0]), approximate="tanh")
    np.testing.assert_allclose(out, [-0.15880800939172324, 0.8411919906082768], rtol=1e-15)
    with pytest.raises(ValueError, match="approximate='erf'"):
        polyeng.gelu(np.ones(2), approximate="erf")


# -- cast -----------------------------------------------------------------------------------------
def test_cast_rounds_to_nearest_even():
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -30, -(1 + 2 ** -8 + 2 ** -30),
                  np.inf, -np.inf, 3.5e38, 1e-40])
    out = polyeng.cast(x, polyeng.bfloat16)
    assert out.dtype == dt.bfloat16
    # ties go to even; just above a tie goes up even from f64 (no double rounding through f32)
    assert out.astype(np.float64).tolist()[:6] == [1.0, 1 + 2 ** -6, 1 + 2 ** -7, -(1 + 2 ** -7), np.inf, -np.inf]
    assert out.astype(np.float64)[6] == np.inf           # overflow -> inf
    assert out.astype(np.float64)[7] == pytest.approx(1e-40, rel=2 ** -7)   # subnormal kept
    assert np.isnan(polyeng.cast(np.array([np.nan]), "bf16").astype(np.float32)).all()
    assert polyeng.cast(np.array([65520.0], np.float32), "f16")[0] == np.inf
    assert polyeng.cast(np.array([1, 2], np.int8), "float32").tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="dtype=int32: cast converts to a floating-point type"):
        polyeng.cast(np.ones(2), "int32")
    with pytest.raises(TypeError, match="dtype='float8'"):
        polyeng.cast(np.ones(2), "float8")
