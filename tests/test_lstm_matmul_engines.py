"""lstm, matmul and linear on every engine under test (see conftest) against BASIC: every lstm
option, numpy's matmul rules, integer and bool products, NaN/Inf, odd sizes, and inputs left
untouched.

NUMBA runs numpy's BLAS for the products, so its matmul and linear match BASIC bit for bit;
other engines' float results match within rounding (OPENCL's GEMM sums in its own order, with
fused multiply-adds), and integer and bool products bit for bit. Device-resident inputs give
device-resident results on engines that have them; on OPENCL also under a down-converting fp
math mode (computing f32), and with either device kind's tiles."""
import itertools
import logging

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip

AVAILABLE = {e.name for e in polyeng.engines() if e.available}
TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}
BLAS_EXACT = {"numba"}   # engines whose matmul and linear are numpy's own products


def opencl_only():
    """For the tests of OPENCL's own promises (its f32 work on device tensors under a
    down-converting mode, its tile shapes), which no other engine makes."""
    if "opencl" not in AVAILABLE:
        pytest.skip("opencl is unavailable (the CI run requires it)")


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def both(engine, op, *args, **kwargs):
    return run("basic", op, *args, **kwargs), run(engine, op, *args, **kwargs)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_same_tree(expected, actual, **tol):
    if isinstance(expected, (tuple, list)):
        assert len(expected) == len(actual)
        for e, a in zip(expected, actual):
            assert_same_tree(e, a, **tol)
        return
    actual = polyeng.to_numpy(actual)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


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


OPTIONS = list(itertools.product([1, 2], [False, True], [False, True], [False, True], [False, True],
                                 ["both", "ih_only", None]))


@pytest.mark.uses_ops("lstm")
@pytest.mark.parametrize("hidden", [13, 35])   # 35: whole vectors of 16 hidden units and a remainder
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_every_option_matches_basic(engine, dtype, hidden):
    rng = np.random.default_rng(5)
    seq, batch, input_size = 7, 3, 5
    for layers, bidirectional, batch_first, unbatched, with_state, bias in OPTIONS:
        dirs = 2 if bidirectional else 1
        params = lstm_params(rng, input_size, hidden, layers, dirs, bias, dtype)
        x_shape = (seq, input_size) if unbatched else (batch, seq, input_size) if batch_first \
            else (seq, batch, input_size)
        x = rng.standard_normal(x_shape).astype(dtype)
        kwargs = {"batch_first": batch_first, "bidirectional": bidirectional}
        if with_state:
            state = (layers * dirs,) + ((hidden,) if unbatched else (batch, hidden))
            kwargs["h0"] = rng.standard_normal(state).astype(dtype)
            kwargs["c0"] = rng.standard_normal(state).astype(dtype)
        expected, actual = both(engine, "lstm", x, params, **kwargs)
        assert_same_tree(expected, actual, **TOL[np.dtype(dtype)])


@pytest.mark.uses_ops("lstm")
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16])
def test_lstm_16_bit_storage(engine, dtype):
    rng = np.random.default_rng(6)
    params = lstm_params(rng, 7, 19, 2, 2, "both", np.float32)
    x = rng.standard_normal((5, 2, 7)).astype(dtype)
    expected, actual = both(engine, "lstm", x, [tuple(a.astype(dtype) for a in p) for p in params],
                            bidirectional=True)
    assert_same_tree(expected, actual, rtol=2 * eps(dtype), atol=2 * eps(dtype))


@pytest.mark.uses_ops("lstm")
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64])
def test_lstm_f32_weights_and_states_with_other_input_dtypes(engine, dtype):
    # weights and states may be f32 whatever x is; the result keeps x's dtype
    rng = np.random.default_rng(16)
    params = lstm_params(rng, 6, 18, 2, 2, "both", np.float32)
    params[1] = tuple(a.astype(dtype) for a in params[1])   # one direction in x's dtype
    x = rng.standard_normal((4, 3, 6)).astype(dtype)
    h0, c0 = (rng.standard_normal((4, 3, 18)).astype(np.float32) for _ in range(2))
    expected, actual = both(engine, "lstm", x, params, h0, c0, bidirectional=True)
    tol = 2 * eps(dtype) if dtype != np.float64 else 1e-6
    assert_same_tree(expected, actual, rtol=tol, atol=tol)


@pytest.mark.uses_ops("lstm")
def test_lstm_leaves_inputs_untouched(engine):
    rng = np.random.default_rng(7)
    params = lstm_params(rng, 4, 6, 1, 2, "both", np.float32)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    h0, c0 = rng.standard_normal((2, 2, 6)).astype(np.float32), rng.standard_normal((2, 2, 6)).astype(np.float32)
    copies = [a.copy() for a in (x, h0, c0)]
    run(engine, "lstm", x, params, h0, c0, bidirectional=True)
    for before, after in zip(copies, (x, h0, c0)):
        np.testing.assert_array_equal(before, after)


@pytest.mark.uses_ops("lstm")
@pytest.mark.parametrize("x_shape,batch_first", [((0, 3, 4), False), ((3, 0, 4), False), ((0, 4), False),
                                                 ((3, 0, 4), True), ((0, 3, 4), True)])
def test_lstm_zero_length_or_zero_batch(engine, x_shape, batch_first):
    rng = np.random.default_rng(8)
    params = lstm_params(rng, 4, 5, 2, 2, "both", np.float32)
    x = np.zeros(x_shape, np.float32)
    unbatched = len(x_shape) == 2
    batch = 1 if unbatched else x_shape[0] if batch_first else x_shape[1]
    state = (4, 5) if unbatched else (4, batch, 5)
    h0, c0 = rng.standard_normal(state).astype(np.float32), rng.standard_normal(state).astype(np.float32)
    for kwargs in ({}, {"h0": h0, "c0": c0}):
        expected, actual = both(engine, "lstm", x, params, batch_first=batch_first, bidirectional=True, **kwargs)
        assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.uses_ops("lstm")
def test_lstm_nan_and_inf(engine):
    rng = np.random.default_rng(9)
    params = lstm_params(rng, 3, 7, 1, 2, "both", np.float32)
    x = rng.standard_normal((4, 3, 3)).astype(np.float32)
    x[1, 0, 0] = np.nan          # batch row 0 turns NaN from step 1 on (both directions)
    x[2, 1, :] = 1e30            # batch row 1: saturated gates, finite states
    x[:, 2, 1] = -np.inf         # batch row 2: +-inf pre-activations from the first step
    expected, actual = both(engine, "lstm", x, params, bidirectional=True)
    for e, a in zip((expected[0],) + tuple(expected[1]), (actual[0],) + tuple(actual[1])):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)


@pytest.mark.uses_ops("lstm")
def test_lstm_large_hidden_odd_batch(engine):
    rng = np.random.default_rng(10)
    params = lstm_params(rng, 33, 67, 1, 1, "both", np.float32)
    x = rng.standard_normal((9, 13, 33)).astype(np.float32)
    expected, actual = both(engine, "lstm", x, params)
    assert_same_tree(expected, actual, rtol=1e-4, atol=1e-5)


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


@pytest.mark.uses_ops("lstm")
def test_lstm_matches_torch(engine):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    params = lstm_params(rng, 6, 8, 2, 2, "both", np.float32)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    module = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True)
    with torch.no_grad():
        for k, p in enumerate(params):
            suffix = f"l{k // 2}" + ("_reverse" if k % 2 else "")
            for role, value in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), p):
                getattr(module, f"{role}_{suffix}").copy_(torch.from_numpy(value))
        y_t, (h_t, c_t) = module(torch.from_numpy(x))
    y, (h, c) = run(engine, "lstm", x, params, batch_first=True, bidirectional=True)
    for ours, theirs in ((y, y_t), (h, h_t), (c, c_t)):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)


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


# --- device tensors; OPENCL's own f32 work on them and tiles ------------------------------------

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
