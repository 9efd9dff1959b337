"""matmul and linear: BASIC against known values and numpy's rules, and the bad-shape rules;
then every engine under test (see conftest) against BASIC: numpy's matmul rules, integer and bool
products, NaN/Inf, odd sizes, and inputs left untouched.

NUMBA runs numpy's BLAS for the products, so its matmul and linear match BASIC bit for bit;
other engines' float results match within rounding (OPENCL's GEMM sums in its own order, with
fused multiply-adds), and integer and bool products bit for bit. Device-resident inputs give
device-resident results on engines that have them (lstm's too: it runs on the same products);
on OPENCL also under a down-converting fp math mode (computing f32), and with either device
kind's tiles. lstm's own tests are in test_op_lstm.py."""
import logging

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import eps
from support import assert_close_tree as assert_same_tree, both, run_on as run
from support import device_tensor_or_skip


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
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


@pytest.mark.usefixtures("on_basic")
def test_matmul_bad_shapes():
    with pytest.raises(ValueError, match=r"a \(2, 3\) and b \(2, 3\) do not chain"):
        polyeng.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="batch dimensions"):
        polyeng.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))
    with pytest.raises(ValueError, match="a is 0-D"):
        polyeng.matmul(np.float32(2), np.ones(2))


@pytest.mark.usefixtures("on_basic")
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


# -- every engine against BASIC --------------------------------------------------------------------

AVAILABLE = {e.name for e in polyeng.engines() if e.available}
BLAS_EXACT = {"numba"}   # engines whose matmul and linear are numpy's own products


def opencl_only():
    """For the tests of OPENCL's own promises (its f32 work on device tensors under a
    down-converting mode, its tile shapes), which no other engine makes."""
    if "opencl" not in AVAILABLE:
        pytest.skip("opencl is unavailable (the CI run requires it)")


def assert_product(engine, expected, actual, ulps=4):
    """Bit for bit on BLAS_EXACT engines and for integer/bool results; else within ``ulps`` of
    the result dtype's epsilon, relative to the largest |expected| (a sum's rounding scale)."""
    actual = polyeng.to_numpy(actual)
    if engine in BLAS_EXACT or expected.dtype.kind in "biu":
        assert_same_tree(expected, actual, rtol=0, atol=0)
        return
    finite = np.abs(expected[np.isfinite(expected)].astype(np.float64))
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    tol = ulps * eps(expected.dtype)
    assert_same_tree(expected, actual, rtol=tol, atol=tol * scale)


def lstm_params(rng, input_size, hidden, layers, dirs, bias, dtype):
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        w = lambda *s: rng.uniform(-0.6, 0.6, s).astype(dtype)   # noqa: E731
        params.append((w(4 * hidden, layer_in), w(4 * hidden, hidden),
                       w(4 * hidden) if bias else None, w(4 * hidden) if bias == "both" else None))
    return params


MATMUL_SHAPES = [((7,), (7,)), ((7,), (7, 3)), ((5, 7), (7,)), ((1, 1), (1, 1)), ((13, 7), (7, 9)),
                 ((2, 1, 5, 7), (3, 7, 4)), ((4, 5, 7), (7,)), ((7,), (2, 7, 3)), ((3, 0, 7), (7, 2)),
                 ((4, 0), (0, 3))]


@pytest.mark.uses_ops("matmul")
@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float64, np.float64), (np.int32, np.float32),
                                    (np.int64, np.int64), (np.bool_, np.bool_), (np.int8, np.int8), (np.uint8, np.int32),
                                    (np.float16, np.float16), (dt.bfloat16, np.int8), (np.float16, np.int32)])
def test_matmul_matches_basic(engine, a_shape, b_shape, dtypes):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(a_shape) * 3).astype(dtypes[0])
    b = (rng.standard_normal(b_shape) * 3).astype(dtypes[1])
    expected, actual = both(engine, "matmul", a, b)
    assert_product(engine, expected, actual)


@pytest.mark.uses_ops("matmul")
@pytest.mark.parametrize("a_shape,b_shape", [((67, 129), (129, 45)), ((33, 17), (17, 16)), ((9, 40), (40, 31)),
                                             ((2, 3, 4, 5, 6), (3, 1, 6, 7)), ((1, 300), (300, 1)),
                                             ((3, 1, 5, 2, 9), (4, 1, 9, 33))])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, dt.bfloat16, np.float64])
def test_matmul_odd_sizes_and_batches(engine, a_shape, b_shape, dtype):
    # sizes off every tile, batch dimensions that merge and ones that cannot
    rng = np.random.default_rng(14)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    expected, actual = both(engine, "matmul", a, b)
    assert_product(engine, expected, actual, ulps=8)


@pytest.mark.uses_ops("matmul")
@pytest.mark.parametrize("dtypes", [(np.int8, np.int8), (np.uint8, np.uint8), (np.int32, np.int32),
                                    (np.int64, np.int64), (np.int8, np.int64), (np.uint8, np.int32),
                                    (np.bool_, np.int32), (np.bool_, np.bool_)])
def test_integer_products_wrap_like_numpy(engine, dtypes):
    rng = np.random.default_rng(15)
    a_type, b_type = (np.dtype(d) for d in dtypes)
    draw = lambda t, shape: (rng.random(shape) > 0.5 if t == dt.bool_   # noqa: E731
                             else rng.integers(np.iinfo(t).min, np.iinfo(t).max, shape, dtype=t, endpoint=True))
    a, b = draw(a_type, (2, 37, 21)), draw(b_type, (21, 35))
    expected, actual = both(engine, "matmul", a, b)
    assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.uses_ops("matmul")
def test_bool_bytes_other_than_one_are_true(engine):
    rng = np.random.default_rng(21)
    raw = rng.integers(0, 3, (5, 33), dtype=np.uint8)   # 2 is a true byte too, as numpy reads it
    a, b = raw.view(np.bool_), (rng.random((33, 40)) > 0.5)
    for other in (b, b.astype(np.int32)):
        expected, actual = both(engine, "matmul", a, other)
        assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.uses_ops("matmul")
def test_matmul_nan_inf_and_large_values(engine):
    a = np.array([[np.nan, 1.0], [np.inf, 0.0], [3e38, 3e38]], np.float32)
    b = np.array([[1.0, 0.0], [2.0, -1.0]], np.float32)
    expected, actual = both(engine, "matmul", a, b)
    assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.uses_ops("linear")
@pytest.mark.parametrize("x_shape", [(7,), (5, 7), (2, 3, 7), (0, 7), (4, 1), (37, 70)])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, dt.bfloat16])
def test_linear_matches_basic(engine, x_shape, with_bias, dtype):
    rng = np.random.default_rng(12)
    x = rng.standard_normal(x_shape).astype(dtype)
    weight = rng.standard_normal((13, x_shape[-1])).astype(dtype)
    bias = rng.standard_normal(13).astype(dtype) if with_bias else None
    expected, actual = both(engine, "linear", x, weight, bias)
    assert_product(engine, expected, actual)


@pytest.mark.uses_ops("linear")
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64])
def test_linear_f32_weights_with_other_input_dtypes(engine, dtype):
    rng = np.random.default_rng(17)
    x = rng.standard_normal((6, 19)).astype(dtype)
    weight, bias = rng.standard_normal((21, 19)).astype(np.float32), rng.standard_normal(21).astype(np.float32)
    expected, actual = both(engine, "linear", x, weight, bias)
    assert_product(engine, expected, actual)


@pytest.mark.uses_ops("linear")
def test_linear_without_features_is_the_bias(engine):
    x, weight, bias = np.zeros((3, 0), np.float32), np.zeros((4, 0), np.float32), np.arange(4, dtype=np.float32)
    expected, actual = both(engine, "linear", x, weight, bias)
    assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.uses_ops("matmul", "linear", "lstm")
def test_bad_arguments_are_the_ops_errors(engine):
    with polyeng.compute_eng(engine, fallback=False):
        with pytest.raises(ValueError, match="do not chain"):
            polyeng.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
        with pytest.raises(ValueError, match="do not broadcast"):
            polyeng.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32))
        with pytest.raises(ValueError, match="weight has shape"):
            polyeng.linear(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
        with pytest.raises(ValueError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has shape"):
            polyeng.lstm(np.ones((3, 2, 4), np.float32), [(np.ones((8, 4), np.float32), np.ones((8, 3), np.float32),
                                                            None, None)])


@pytest.mark.uses_ops("matmul")
@pytest.mark.parametrize("mode", ["strict", "bf16", "f16", "tf32"])
@pytest.mark.parametrize("storage", [np.float16, "bfloat16"])
def test_16_bit_storage_under_every_fp_math_mode_matches_basic(engine, mode, storage):
    # 16-bit arrays reach the JIT engines as stored only when the compute type is f32 or that
    # very type; any other down-conversion is done by the dispatcher, as for BASIC
    dtype = polyeng.bfloat16 if storage == "bfloat16" else storage
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32).astype(dtype) for s in ((9, 13), (13, 5)))
    results = {}
    for name in ("basic", engine):
        with polyeng.compute_eng(name, fallback=False), polyeng.fp_math_mode(mode):
            results[name] = polyeng.matmul(a, b)
    assert results[engine].dtype == dtype
    assert_product(engine, results["basic"], results[engine], ulps=1)


@pytest.mark.device_tensors
@pytest.mark.uses_ops("matmul", "linear", "lstm")
def test_device_inputs_give_device_results(engine):
    rng = np.random.default_rng(18)
    a, b = rng.standard_normal((19, 23)).astype(np.float32), rng.standard_normal((23, 37)).astype(np.float32)
    w, bias = rng.standard_normal((11, 23)).astype(np.float32), rng.standard_normal(11).astype(np.float32)
    params = lstm_params(rng, 23, 17, 2, 2, "both", np.float32)
    device_type = type(device_tensor_or_skip(a, engine))
    dev = lambda v: polyeng.to_device(v, engine)   # noqa: E731
    with polyeng.compute_eng(engine, fallback=False):
        product = polyeng.matmul(dev(a), b)            # one device input is enough
        projected = polyeng.linear(dev(a), dev(w), dev(bias))
        y, (h, c) = polyeng.lstm(dev(a[:, None].repeat(3, 1)), [tuple(map(dev, p)) for p in params],
                                 bidirectional=True)
    for result in (product, projected, y, h, c):
        assert type(result) is device_type
    assert_product(engine, run("basic", "matmul", a, b), product)
    assert_product(engine, run("basic", "linear", a, w, bias), projected)
    expected = run("basic", "lstm", a[:, None].repeat(3, 1), params, bidirectional=True)
    assert_same_tree(expected, (y, (h, c)), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("op", ["matmul", "linear", "lstm"])
def test_device_inputs_under_a_down_converting_mode_compute_f32(op, caplog):
    # the dispatcher cannot round device tensors to bf16: OPENCL computes these in f32,
    # which the mode allows, and says so
    opencl_only()
    from polyeng.backends.opencl._tensor import OpenCLTensor
    rng = np.random.default_rng(19)
    a, b = rng.standard_normal((9, 16)).astype(np.float32), rng.standard_normal((16, 12)).astype(np.float32)
    args = {"matmul": (a, b), "linear": (a, b.T.copy()),
            "lstm": (a[:, None], [(rng.standard_normal((8, 16)).astype(np.float32),
                                   rng.standard_normal((8, 2)).astype(np.float32), None, None)])}[op]
    dev = lambda v: None if v is None else polyeng.to_device(v, "opencl")   # noqa: E731
    device_args = tuple(dev(v) if isinstance(v, np.ndarray) else [tuple(map(dev, v[0]))] for v in args)
    with polyeng.fp_math_mode("bf16"):
        decision = polyeng.explain(op, *device_args)
        with polyeng.verbose(1), caplog.at_level(logging.INFO, logger="polyeng"):
            out = getattr(polyeng, op)(*device_args)
    assert (decision.engine, decision.compute_type) == ("opencl", "f32")
    assert ",opencl," in caplog.messages[-1] and "fpm:bf16,f32," in caplog.messages[-1]
    first = out[0] if op == "lstm" else out
    assert isinstance(first, OpenCLTensor)
    assert_same_tree(run("basic", op, *args), out, rtol=2e-5, atol=2e-5)   # f32 work, not bf16


@pytest.mark.parametrize("kind", ["CPU_TILES", "GPU_TILES"])
def test_each_device_kinds_tiles_on_this_device(kind):
    # both tile shapes run here, whichever device kind this is: every output sums k in the
    # same order whatever the tiling, so they agree bit for bit
    opencl_only()
    from polyeng.backends.opencl import _gemm as kernels
    rng = np.random.default_rng(20)
    cases = [(rng.standard_normal((3, 41, 70)).astype(np.float32), rng.standard_normal((70, 53)).astype(np.float32)),
             (rng.integers(-128, 127, (5, 9), dtype=np.int8), rng.integers(-128, 127, (9, 3), dtype=np.int8)),
             (rng.standard_normal((17, 5)).astype(dt.bfloat16), rng.standard_normal((5, 66)).astype(dt.bfloat16)),
             (rng.standard_normal((2, 9, 31)), rng.standard_normal((31, 7))),
             (rng.random((6, 40)) > 0.5, rng.integers(0, 1 << 62, (40, 19), dtype=np.int64))]
    kernels._override.append(getattr(kernels, kind))
    try:
        results = [run("opencl", "matmul", a, b) for a, b in cases]
        lstm_args = (rng.standard_normal((4, 3, 6)).astype(np.float32), lstm_params(rng, 6, 21, 1, 2, "both",
                                                                                     np.float32))
        y = run("opencl", "lstm", *lstm_args, bidirectional=True)
    finally:
        kernels._override.pop()
    for (a, b), got in zip(cases, results):
        assert_product("opencl", run("basic", "matmul", a, b), got)
        np.testing.assert_array_equal(got, run("opencl", "matmul", a, b))
    assert_same_tree(run("basic", "lstm", *lstm_args, bidirectional=True), y, rtol=2e-5, atol=2e-6)
