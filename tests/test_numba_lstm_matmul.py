"""lstm, matmul and linear on NUMBA against BASIC: every lstm option, numpy's matmul rules,
integer and bool products, NaN/Inf, odd sizes, and inputs left untouched."""
import itertools

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def both(op, *args, **kwargs):
    return run("basic", op, *args, **kwargs), run("numba", op, *args, **kwargs)


def assert_same_tree(expected, actual, **tol):
    if isinstance(expected, (tuple, list)):
        assert len(expected) == len(actual)
        for e, a in zip(expected, actual):
            assert_same_tree(e, a, **tol)
        return
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_every_option_matches_basic(dtype):
    rng = np.random.default_rng(5)
    seq, batch, input_size, hidden = 7, 3, 5, 13
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
        expected, actual = both("lstm", x, params, **kwargs)
        assert_same_tree(expected, actual, **TOL[np.dtype(dtype)])


@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16])
def test_lstm_16_bit_storage(dtype):
    rng = np.random.default_rng(6)
    params = lstm_params(rng, 7, 9, 2, 2, "both", np.float32)
    x = rng.standard_normal((5, 1, 7)).astype(dtype)
    expected, actual = both("lstm", x, [tuple(a.astype(dtype) for a in p) for p in params], bidirectional=True)
    eps = 2.0 ** -7 if dtype == dt.bfloat16 else 2.0 ** -10
    assert_same_tree(expected, actual, rtol=2 * eps, atol=2 * eps)


def test_lstm_leaves_inputs_untouched():
    rng = np.random.default_rng(7)
    params = lstm_params(rng, 4, 6, 1, 2, "both", np.float32)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    h0, c0 = rng.standard_normal((2, 2, 6)).astype(np.float32), rng.standard_normal((2, 2, 6)).astype(np.float32)
    copies = [a.copy() for a in (x, h0, c0)]
    run("numba", "lstm", x, params, h0, c0, bidirectional=True)
    for before, after in zip(copies, (x, h0, c0)):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("x_shape,batch_first", [((0, 3, 4), False), ((3, 0, 4), False), ((0, 4), False),
                                                 ((3, 0, 4), True), ((0, 3, 4), True)])
def test_lstm_zero_length_or_zero_batch(x_shape, batch_first):
    rng = np.random.default_rng(8)
    params = lstm_params(rng, 4, 5, 2, 2, "both", np.float32)
    x = np.zeros(x_shape, np.float32)
    unbatched = len(x_shape) == 2
    batch = 1 if unbatched else x_shape[0] if batch_first else x_shape[1]
    state = (4, 5) if unbatched else (4, batch, 5)
    h0, c0 = rng.standard_normal(state).astype(np.float32), rng.standard_normal(state).astype(np.float32)
    for kwargs in ({}, {"h0": h0, "c0": c0}):
        expected, actual = both("lstm", x, params, batch_first=batch_first, bidirectional=True, **kwargs)
        assert_same_tree(expected, actual, rtol=0, atol=0)


def test_lstm_nan_and_inf():
    rng = np.random.default_rng(9)
    params = lstm_params(rng, 3, 7, 1, 2, "both", np.float32)
    x = rng.standard_normal((4, 3, 3)).astype(np.float32)
    x[1, 0, 0] = np.nan          # batch row 0 turns NaN from step 1 on (both directions)
    x[2, 1, :] = 1e30            # batch row 1: saturated gates, finite states
    x[:, 2, 1] = -np.inf         # batch row 2: +-inf pre-activations from the first step
    expected, actual = both("lstm", x, params, bidirectional=True)
    for e, a in zip((expected[0],) + tuple(expected[1]), (actual[0],) + tuple(actual[1])):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)


def test_lstm_large_hidden_odd_batch():
    rng = np.random.default_rng(10)
    params = lstm_params(rng, 33, 67, 1, 1, "both", np.float32)
    x = rng.standard_normal((9, 13, 33)).astype(np.float32)
    expected, actual = both("lstm", x, params)
    assert_same_tree(expected, actual, rtol=1e-4, atol=1e-5)


MATMUL_SHAPES = [((7,), (7,)), ((7,), (7, 3)), ((5, 7), (7,)), ((1, 1), (1, 1)), ((13, 7), (7, 9)),
                 ((2, 1, 5, 7), (3, 7, 4)), ((4, 5, 7), (7,)), ((7,), (2, 7, 3)), ((3, 0, 7), (7, 2)),
                 ((4, 0), (0, 3))]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float64, np.float64), (np.int32, np.float32),
                                    (np.int64, np.int64), (np.bool_, np.bool_), (np.int8, np.int8), (np.uint8, np.int32),
                                    (np.float16, np.float16), (dt.bfloat16, np.int8), (np.float16, np.int32)])
def test_matmul_matches_basic(a_shape, b_shape, dtypes):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(a_shape) * 3).astype(dtypes[0])
    b = (rng.standard_normal(b_shape) * 3).astype(dtypes[1])
    expected, actual = both("matmul", a, b)
    assert_same_tree(expected, actual, rtol=0, atol=0)


def test_matmul_nan_inf_and_large_values():
    a = np.array([[np.nan, 1.0], [np.inf, 0.0], [3e38, 3e38]], np.float32)
    b = np.array([[1.0, 0.0], [2.0, -1.0]], np.float32)
    expected, actual = both("matmul", a, b)
    assert_same_tree(expected, actual, rtol=0, atol=0)


@pytest.mark.parametrize("x_shape", [(7,), (5, 7), (2, 3, 7), (0, 7), (4, 1)])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, dt.bfloat16])
def test_linear_matches_basic(x_shape, with_bias, dtype):
    rng = np.random.default_rng(12)
    x = rng.standard_normal(x_shape).astype(dtype)
    weight = rng.standard_normal((13, x_shape[-1])).astype(dtype)
    bias = rng.standard_normal(13).astype(dtype) if with_bias else None
    expected, actual = both("linear", x, weight, bias)
    assert_same_tree(expected, actual, rtol=0, atol=0)


def test_lstm_matches_torch():
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
    y, (h, c) = run("numba", "lstm", x, params, batch_first=True, bidirectional=True)
    for ours, theirs in ((y, y_t), (h, h_t), (c, c_t)):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["strict", "bf16", "f16", "tf32"])
@pytest.mark.parametrize("storage", [np.float16, "bfloat16"])
def test_16_bit_storage_under_every_fp_math_mode_matches_basic(mode, storage):
    # 16-bit arrays reach NUMBA as stored only when the compute type is f32 or that very
    # type; any other down-conversion is done by the dispatcher, as for BASIC
    dtype = polyeng.bfloat16 if storage == "bfloat16" else storage
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32).astype(dtype) for s in ((9, 13), (13, 5)))
    results = {}
    for engine in ("basic", "numba"):
        with polyeng.compute_eng(engine, fallback=False), polyeng.fp_math_mode(mode):
            results[engine] = polyeng.matmul(a, b)
    assert results["numba"].dtype == dtype
    np.testing.assert_array_equal(results["numba"].astype(np.float32), results["basic"].astype(np.float32))
