"""gru on the BASIC engine against values computed by hand and against torch.nn.GRU, plus every
argument check.

Then every engine under test (see conftest) against BASIC: every option (reset_after=False too,
ONNX's linear_before_reset=0), 16-bit storage on each route NUMBA takes for it, f32 weights and
states with other input dtypes, non-contiguous arrays, NaN/Inf, zero sizes, device tensors,
inputs left untouched; float results within rounding."""
import itertools
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import eps
from support import assert_close_tree as assert_same_tree, both, run_on

F64_TOL = dict(rtol=0, atol=1e-12)
F32_TOL = dict(rtol=0, atol=2e-6)
TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}


def run(*args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return polyeng.gru(*args, **kwargs)


def gru_params(rng, input_size, hidden, layers, dirs, bias="both", dtype=np.float32):
    """``bias``: "both", "ih_only" (b_hh None), "hh_only" (b_ih None) or None."""
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        w = lambda *s: rng.uniform(-0.6, 0.6, s).astype(dtype)   # noqa: E731
        params.append((w(3 * hidden, layer_in), w(3 * hidden, hidden),
                       w(3 * hidden) if bias in ("both", "ih_only") else None,
                       w(3 * hidden) if bias in ("both", "hh_only") else None))
    return params


def cast_params(params, dtype):
    return [tuple(None if a is None else a.astype(dtype) for a in entry) for entry in params]


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


# --- one layer, hidden size 1, computed by hand -----------------------------------------------
# stacked r, z, n: w_ih [0.5, -0.5, 1], w_hh [-2, 2, 0.5], b_ih [0, 0, 0.25], b_hh [0, 0, -0.5]
HAND_PARAMS = [(np.array([[0.5], [-0.5], [1.0]]), np.array([[-2.0], [2.0], [0.5]]),
                np.array([0.0, 0.0, 0.25]), np.array([0.0, 0.0, -0.5]))]
HAND_X = np.array([[[2.0]], [[-1.0]]])          # (L=2, N=1, in=1)
HAND_H0 = np.array([[[0.5]]])
# step 1 (x=2, h0=0.5): r = sigmoid(1 - 1) = 0.5, z = sigmoid(-1 + 1) = 0.5
#   reset after:  n = tanh(2 + 0.25 + 0.5 * (0.25 - 0.5)) = tanh(2.125)
#   reset before: n = tanh(2 + 0.25 + 0.5 * (0.5 * 0.5) - 0.5) = tanh(1.875)
#   h1 = 0.5 * n + 0.5 * 0.5
H1 = 0.5 * math.tanh(2.125) + 0.25
H1_BEFORE = 0.5 * math.tanh(1.875) + 0.25


def hand_step(x, h, reset_after):
    r, z = sigmoid(0.5 * x - 2 * h), sigmoid(-0.5 * x + 2 * h)
    n = math.tanh(x + 0.25 + r * (0.5 * h - 0.5)) if reset_after else math.tanh(x + 0.25 + 0.5 * (r * h) - 0.5)
    return (1 - z) * n + z * h


@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_steps_hidden_one(dtype, reset_after):
    params = cast_params(HAND_PARAMS, dtype)
    y, h = run(HAND_X.astype(dtype), params, HAND_H0.astype(dtype), reset_after=reset_after)
    h1 = hand_step(2.0, 0.5, reset_after)
    assert h1 == pytest.approx(H1 if reset_after else H1_BEFORE, abs=1e-15)
    h2 = hand_step(-1.0, h1, reset_after)
    tol = F64_TOL if dtype == np.float64 else F32_TOL
    assert y.dtype == h.dtype == dtype and y.shape == (2, 1, 1) and h.shape == (1, 1, 1)
    np.testing.assert_allclose(y[:, 0, 0], [h1, h2], **tol)
    np.testing.assert_allclose(h.ravel(), [h2], **tol)


# --- against torch.nn.GRU ------------------------------------------------------------------------
def torch_gru(torch, params, input_size, hidden, layers, bidirectional, batch_first, dtype):
    dirs = 2 if bidirectional else 1
    bias = params[0][2] is not None or params[0][3] is not None
    module = torch.nn.GRU(input_size, hidden, num_layers=layers, bidirectional=bidirectional,
                          batch_first=batch_first, bias=bias, dtype=dtype)
    with torch.no_grad():
        for k, entry in enumerate(params):
            suffix = f"_l{k // dirs}" + ("_reverse" if k % dirs else "")
            for name, value in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), entry):
                if bias or name.startswith("weight"):
                    target = getattr(module, name + suffix)
                    target.copy_(torch.zeros_like(target) if value is None else torch.from_numpy(value))
    return module


TORCH_CASES = [(1, False, False, "both", False, False), (2, True, False, None, True, False),
               (3, True, True, "both", True, False), (2, False, True, "ih_only", False, False),
               (2, True, False, "hh_only", True, True), (1, False, True, "both", True, True)]


@pytest.mark.parametrize("layers, bidirectional, batch_first, bias, with_h0, unbatched", TORCH_CASES)
def test_basic_matches_torch(layers, bidirectional, batch_first, bias, with_h0, unbatched):
    torch = pytest.importorskip("torch")
    dirs = 2 if bidirectional else 1
    rng = np.random.default_rng(layers * 8 + dirs)
    params = gru_params(rng, 4, 3, layers, dirs, bias, np.float64)
    module = torch_gru(torch, params, 4, 3, layers, bidirectional, batch_first, torch.float64)
    x_shape = (5, 4) if unbatched else (2, 5, 4) if batch_first else (5, 2, 4)
    x = rng.standard_normal(x_shape)
    h0 = rng.standard_normal((layers * dirs,) + ((3,) if unbatched else (2, 3))) if with_h0 else None
    y, h = run(x, params, h0, batch_first=batch_first, bidirectional=bidirectional)
    with torch.no_grad():
        ty, th = module(torch.from_numpy(x), None if h0 is None else torch.from_numpy(h0))
    assert y.shape == tuple(ty.shape) and h.shape == tuple(th.shape)
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, th.numpy(), rtol=1e-10, atol=1e-12)


def test_reverse_direction_and_final_states():
    rng = np.random.default_rng(3)
    params = gru_params(rng, 3, 4, 2, 2)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    y, h = run(x, params, batch_first=True, bidirectional=True)
    # the last layer's forward direction ends at t=L-1, its reverse one at t=0
    np.testing.assert_array_equal(h[2], y[:, -1, :4])
    np.testing.assert_array_equal(h[3], y[:, 0, 4:])
    # the reverse direction alone is the forward one over the reversed sequence
    y1, h1 = run(x, params[:2], batch_first=True, bidirectional=True)
    yf, hf = run(x[:, ::-1], [params[1]], batch_first=True)
    np.testing.assert_allclose(y1[:, :, 4:], yf[:, ::-1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h1[1], hf[0], rtol=1e-6, atol=1e-7)


def test_zero_h0_equals_default_and_unbatched_is_one_batch_row():
    rng = np.random.default_rng(4)
    params = gru_params(rng, 3, 2, 2, 2, dtype=np.float64)
    x = rng.standard_normal((4, 3, 3))
    y, h = run(x, params, bidirectional=True)
    y0, h0 = run(x, params, np.zeros((4, 3, 2)), bidirectional=True)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(h, h0)
    yu, hu = run(x[:, 1], params, bidirectional=True)
    assert yu.shape == (4, 4) and hu.shape == (4, 2)
    np.testing.assert_allclose(yu, y[:, 1], **F64_TOL)
    np.testing.assert_allclose(hu, h[:, 1], **F64_TOL)
    # batch_first has no say for unbatched input, as in torch
    np.testing.assert_array_equal(run(x[:, 1], params, batch_first=True, bidirectional=True)[0], yu)


def test_one_bias_of_two():
    rng = np.random.default_rng(5)
    w_ih, w_hh, b_ih, b_hh = gru_params(rng, 3, 4, 1, 1, dtype=np.float64)[0]
    x = rng.standard_normal((5, 2, 3))
    # the r and z parts of the two biases add up; b_hn sits inside r * (w_hn h + b_hn)
    moved = b_ih.copy()
    moved[:8] += b_hh[:8]
    y, h = run(x, [(w_ih, w_hh, moved, np.concatenate([np.zeros(8), b_hh[8:]]))])
    expected, _ = run(x, [(w_ih, w_hh, b_ih, b_hh)])
    np.testing.assert_allclose(y, expected, **F64_TOL)
    # without reset_after both biases of n are outside the product: all of b_hh moves to b_ih
    y, _ = run(x, [(w_ih, w_hh, b_ih + b_hh, None)], reset_after=False)
    expected, _ = run(x, [(w_ih, w_hh, b_ih, b_hh)], reset_after=False)
    np.testing.assert_allclose(y, expected, **F64_TOL)


def test_sequence_of_one_step():
    rng = np.random.default_rng(6)
    params = gru_params(rng, 3, 4, 2, 2, dtype=np.float64)
    x = rng.standard_normal((1, 2, 3))
    y, h = run(x, params, bidirectional=True)
    assert y.shape == (1, 2, 8)
    np.testing.assert_array_equal(h[2:], y[0].reshape(2, 2, 4).transpose(1, 0, 2))


@pytest.mark.parametrize("dtype, tol", [(polyeng.float16, dict(rtol=0, atol=3e-3)),
                                        (polyeng.bfloat16, dict(rtol=0, atol=2.5e-2))])
def test_sixteen_bit_storage_on_basic(dtype, tol):
    rng = np.random.default_rng(7)
    params = gru_params(rng, 3, 4, 2, 2)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    expected = run(x.astype(dtype).astype(np.float32), cast_params(cast_params(params, dtype), np.float32),
                   batch_first=True, bidirectional=True)
    for weights in (cast_params(params, dtype), cast_params(cast_params(params, dtype), np.float32)):
        y, h = run(x.astype(dtype), weights, batch_first=True, bidirectional=True)
        assert y.dtype == h.dtype == dtype
        np.testing.assert_allclose(y.astype(np.float32), expected[0], **tol)
        np.testing.assert_allclose(h.astype(np.float32), expected[1], **tol)


def test_empty_batch_and_sequence():
    rng = np.random.default_rng(8)
    params = gru_params(rng, 3, 2, 2, 2)
    y, h = run(np.zeros((5, 0, 3), np.float32), params, bidirectional=True)
    assert y.shape == (5, 0, 4) and h.shape == (4, 0, 2) and y.dtype == h.dtype == np.float32
    y, h = run(np.zeros((0, 5, 3), np.float32), params, batch_first=True, bidirectional=True)
    assert y.shape == (0, 5, 4) and h.shape == (4, 0, 2)
    h0 = rng.standard_normal((4, 2, 2)).astype(np.float32)
    y, h = run(np.zeros((0, 2, 3), np.float32), params, h0, bidirectional=True)
    assert y.shape == (0, 2, 4)
    np.testing.assert_array_equal(h, h0)
    assert h is not h0


# --- argument checks ----------------------------------------------------------------------------
X3 = np.zeros((3, 2, 3))
P1 = gru_params(np.random.default_rng(0), 3, 2, 1, 1, dtype=np.float64)    # w_ih (6, 3), w_hh (6, 2)
P2 = gru_params(np.random.default_rng(0), 3, 2, 2, 2, dtype=np.float64)


def test_x_must_be_float_and_2d_or_3d():
    with pytest.raises(TypeError, match=r"x has dtype int32.*floating-point"):
        run(np.zeros((3, 2, 3), np.int32), P1)
    with pytest.raises(ValueError, match=r"x has shape \(3, 2, 3, 1\) \(4-D\); gru expects \(L, N, in\)"):
        run(np.zeros((3, 2, 3, 1)), P1)
    with pytest.raises(ValueError, match=r"x has shape \(3,\) \(1-D\)"):
        run(np.zeros(3), P1)


@pytest.mark.parametrize("name", ["batch_first", "bidirectional", "reset_after"])
def test_flags_must_be_bool(name):
    with pytest.raises(TypeError, match=rf"{name}=1: expected True or False"):
        run(X3, P1, **{name: 1})
    with pytest.raises(TypeError, match=rf"{name}='yes': expected True or False"):
        run(X3, P1, **{name: "yes"})


def test_params_container_count_and_entries():
    with pytest.raises(TypeError, match=r"params=ndarray: expected a list or tuple"):
        run(X3, np.zeros((6, 3)))
    with pytest.raises(ValueError, match=r"params has 0 entries; expected a positive multiple of 1"):
        run(X3, [])
    with pytest.raises(ValueError, match=r"params has 3 entries; expected a positive multiple of 2"):
        run(X3, P2[:3], bidirectional=True)
    with pytest.raises(TypeError, match=r"params\[0\] is a 3-element tuple; expected a \(w_ih, w_hh, b_ih, b_hh\)"):
        run(X3, [P1[0][:3]])
    with pytest.raises(TypeError, match=r"params\[0\] is ndarray.*a single layer's is written \[\(w_ih"):
        run(X3, P1[0])
    with pytest.raises(TypeError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) is None"):
        run(X3, [(None,) + P1[0][1:]])
    with pytest.raises(TypeError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) is None"):
        run(X3, [(P1[0][0], None) + P1[0][2:]])


def test_weight_shapes_name_layer_direction_and_gate_count():
    bad = list(P2)
    bad[2] = (np.zeros((6, 3)),) + bad[2][1:]          # layer 1 reads 2 * H = 4 features
    with pytest.raises(ValueError, match=r"params\[2\]\[0\] \(w_ih of layer 1, forward\) has shape \(6, 3\); "
                                         r"expected \(6, 4\)"):
        run(X3, bad, bidirectional=True)
    bad = list(P2)
    bad[3] = bad[3][:3] + (np.zeros(8),)
    with pytest.raises(ValueError, match=r"params\[3\]\[3\] \(b_hh of layer 1, reverse\) has shape \(8,\); "
                                         r"expected \(6,\)"):
        run(X3, bad, bidirectional=True)
    with pytest.raises(ValueError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has shape \(6, 3\); "
                                         r"expected \(6, 5\).*input size 5 from x"):
        run(np.zeros((3, 2, 5)), P1)
    with pytest.raises(ValueError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has shape \(6,\); "
                                         r"expected \(3\*hidden_size, hidden_size\)"):
        run(X3, [(P1[0][0], np.zeros(6)) + P1[0][2:]])
    # an LSTM's weights (four gates) are not a GRU's (three)
    lstm_like = [(np.zeros((8, 3)), np.zeros((8, 2)), None, None)]
    with pytest.raises(ValueError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has shape \(8, 3\); "
                                         r"expected \(6, 3\)"):
        run(X3, lstm_like)


def test_params_of_the_other_direction_count():
    with pytest.raises(ValueError, match=r"with bidirectional=False that is 4 layers.*bidirectional model.*"
                                         r"need bidirectional=True"):
        run(X3, P2)


def test_weight_and_state_dtypes():
    with pytest.raises(TypeError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has dtype int64.*floating-point"):
        run(X3, [(P1[0][0], np.zeros((6, 2), np.int64)) + P1[0][2:]])
    with pytest.raises(TypeError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has dtype float64 but the input "
                                        r"is float32.*match the input's dtype or be float32"):
        run(X3.astype(np.float32), P1)
    with pytest.raises(TypeError, match=r"h0 has dtype float16 but the input is float64"):
        run(X3, P1, np.zeros((1, 2, 2), np.float16))
    with pytest.raises(TypeError, match=r"h0 has dtype int32"):
        run(X3, P1, np.zeros((1, 2, 2), np.int32))


def test_h0_shape():
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 3, 2\); expected \(1, 2, 2\) = "
                                         r"\(layers \* directions, batch, hidden_size\)"):
        run(X3, P1, np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 2, 2\); expected \(1, 2\).*unbatched"):
        run(X3[:, 0], P1, np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match=r"h0 has shape \(2, 3, 2\); expected \(4, 3, 2\)"):
        run(np.zeros((3, 3, 3)), P2, np.zeros((2, 3, 2)), bidirectional=True)


def test_gru_has_no_cell_state():
    with pytest.raises(TypeError):
        run(X3, P1, None, None)   # an lstm call's (h0, c0)


# --- every engine against BASIC -------------------------------------------------------------------
OPTIONS = list(itertools.product([1, 2], [False, True], [False, True], [False, True], [False, True],
                                 ["both", "ih_only", None]))


@pytest.mark.uses_ops("gru")
@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("hidden", [13, 35])   # 35: whole vectors of 16 hidden units and a remainder
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_every_option_matches_basic(engine, dtype, hidden, reset_after):
    rng = np.random.default_rng(5)
    seq, batch, input_size = 6, 3, 5
    for layers, bidirectional, batch_first, unbatched, with_h0, bias in OPTIONS:
        dirs = 2 if bidirectional else 1
        params = gru_params(rng, input_size, hidden, layers, dirs, bias, dtype)
        x_shape = (seq, input_size) if unbatched else (batch, seq, input_size) if batch_first \
            else (seq, batch, input_size)
        x = rng.standard_normal(x_shape).astype(dtype)
        kwargs = {"batch_first": batch_first, "bidirectional": bidirectional, "reset_after": reset_after}
        if with_h0:
            kwargs["h0"] = rng.standard_normal((layers * dirs,) + ((hidden,) if unbatched else (batch, hidden)))
            kwargs["h0"] = kwargs["h0"].astype(dtype)
        expected, actual = both(engine, "gru", x, params, **kwargs)
        assert_same_tree(expected, actual, **TOL[np.dtype(dtype)])


# NUMBA's routes for 16-bit weights: batch <= 4 reads w_hh as stored (JIT matrix-vector kernel),
# larger batches widen it for BLAS; a w_ih of 65536 elements or more is read as stored too.
@pytest.mark.uses_ops("gru")
@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("batch, input_size, hidden", [(1, 7, 19), (3, 7, 19), (6, 7, 19), (2, 192, 128)])
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16])
def test_gru_16_bit_storage(engine, dtype, batch, input_size, hidden, reset_after):
    rng = np.random.default_rng(6)
    params = cast_params(gru_params(rng, input_size, hidden, 2, 2), dtype)
    x = rng.standard_normal((4, batch, input_size)).astype(dtype)
    h0 = rng.standard_normal((4, batch, hidden)).astype(dtype)
    expected, actual = both(engine, "gru", x, params, h0, bidirectional=True, reset_after=reset_after)
    assert_same_tree(expected, actual, rtol=2 * eps(dtype), atol=2 * eps(dtype))


@pytest.mark.uses_ops("gru")
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64])
def test_gru_f32_weights_and_states_with_other_input_dtypes(engine, dtype):
    # weights and h0 may be f32 whatever x is; the result keeps x's dtype
    rng = np.random.default_rng(16)
    params = gru_params(rng, 6, 18, 2, 2)
    params[1] = tuple(a.astype(dtype) for a in params[1])   # one direction in x's dtype
    x = rng.standard_normal((4, 3, 6)).astype(dtype)
    h0 = rng.standard_normal((4, 3, 18)).astype(np.float32)
    expected, actual = both(engine, "gru", x, params, h0, bidirectional=True)
    assert actual[0].dtype == actual[1].dtype == dtype
    tol = 2 * eps(dtype) if dtype != np.float64 else 1e-6
    assert_same_tree(expected, actual, rtol=tol, atol=tol)


@pytest.mark.uses_ops("gru")
def test_gru_non_contiguous_arrays(engine):
    rng = np.random.default_rng(11)
    params = gru_params(rng, 5, 9, 2, 2)
    x = rng.standard_normal((7, 3, 10)).astype(np.float32)[:, :, ::2]          # strided features
    h0_view = rng.standard_normal((4, 9, 3)).astype(np.float32).transpose(0, 2, 1)   # (4, 3, 9), not C-order
    views = [tuple(None if a is None else (np.asfortranarray(a) if a.ndim == 2 else a[::-1][::-1]) for a in p)
             for p in params]
    assert not x.flags.c_contiguous and not h0_view.flags.c_contiguous and not views[0][0].flags.c_contiguous
    for reset_after in (True, False):
        for batch_first in (False, True):
            xs = x.transpose(1, 0, 2) if batch_first else x
            expected = run(np.ascontiguousarray(xs), params, np.ascontiguousarray(h0_view), batch_first=batch_first,
                           bidirectional=True, reset_after=reset_after)
            actual = run_on(engine, "gru", xs, views, h0_view, batch_first=batch_first, bidirectional=True,
                            reset_after=reset_after)
            assert_same_tree(expected, actual, **TOL[np.dtype(np.float32)])


@pytest.mark.uses_ops("gru")
def test_gru_leaves_inputs_untouched(engine):
    rng = np.random.default_rng(7)
    params = gru_params(rng, 4, 6, 1, 2)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    h0 = rng.standard_normal((2, 2, 6)).astype(np.float32)
    copies = [a.copy() for a in (x, h0)] + [a.copy() for p in params for a in p]
    for reset_after in (True, False):
        run_on(engine, "gru", x, params, h0, bidirectional=True, reset_after=reset_after)
    for before, after in zip(copies, [x, h0] + [a for p in params for a in p]):
        np.testing.assert_array_equal(before, after)


@pytest.mark.uses_ops("gru")
@pytest.mark.parametrize("x_shape,batch_first", [((0, 3, 4), False), ((3, 0, 4), False), ((0, 4), False),
                                                 ((3, 0, 4), True), ((0, 3, 4), True), ((1, 3, 4), False),
                                                 ((3, 1, 4), True)])
def test_gru_zero_or_one_step_or_zero_batch(engine, x_shape, batch_first):
    rng = np.random.default_rng(8)
    params = gru_params(rng, 4, 5, 2, 2)
    x = rng.standard_normal(x_shape).astype(np.float32)
    unbatched = len(x_shape) == 2
    batch = 1 if unbatched else x_shape[0] if batch_first else x_shape[1]
    h0 = rng.standard_normal((4, 5) if unbatched else (4, batch, 5)).astype(np.float32)
    for kwargs in ({}, {"h0": h0}, {"h0": h0, "reset_after": False}):
        expected, actual = both(engine, "gru", x, params, batch_first=batch_first, bidirectional=True, **kwargs)
        exact = 0 in x_shape
        assert_same_tree(expected, actual, **(dict(rtol=0, atol=0) if exact else TOL[np.dtype(np.float32)]))


@pytest.mark.uses_ops("gru")
def test_gru_nan_and_inf(engine):
    rng = np.random.default_rng(9)
    params = gru_params(rng, 3, 7, 1, 2)
    x = rng.standard_normal((4, 3, 3)).astype(np.float32)
    x[1, 0, 0] = np.nan          # batch row 0 turns NaN from step 1 on (both directions)
    x[2, 1, :] = 1e30            # batch row 1: saturated gates, finite states
    x[:, 2, 1] = -np.inf         # batch row 2: +-inf pre-activations from the first step
    for reset_after in (True, False):
        expected, actual = both(engine, "gru", x, params, bidirectional=True, reset_after=reset_after)
        for e, a in zip(expected, actual):
            np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
            np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)


@pytest.mark.uses_ops("gru")
def test_gru_large_hidden_odd_batch(engine):
    rng = np.random.default_rng(10)
    params = gru_params(rng, 33, 67, 1, 1)
    x = rng.standard_normal((9, 13, 33)).astype(np.float32)
    for reset_after in (True, False):
        expected, actual = both(engine, "gru", x, params, reset_after=reset_after)
        assert_same_tree(expected, actual, rtol=1e-4, atol=1e-5)


@pytest.mark.uses_ops("gru")
def test_gru_matches_torch(engine):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    params = gru_params(rng, 6, 8, 2, 2)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    h0 = rng.standard_normal((4, 4, 8)).astype(np.float32)
    module = torch_gru(torch, params, 6, 8, 2, True, True, torch.float32)
    with torch.no_grad():
        y_t, h_t = module(torch.from_numpy(x), torch.from_numpy(h0))
    y, h = run_on(engine, "gru", x, params, h0, batch_first=True, bidirectional=True)
    np.testing.assert_allclose(y, y_t.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.uses_ops("gru")
@pytest.mark.device_tensors
def test_gru_device_tensors_stay_on_the_device(engine):
    rng = np.random.default_rng(14)
    params = gru_params(rng, 5, 17, 2, 2)
    x = rng.standard_normal((6, 3, 5)).astype(np.float32)
    h0 = rng.standard_normal((4, 3, 17)).astype(np.float32)
    dev = lambda a: None if a is None else polyeng.to_device(a, engine)   # noqa: E731
    with polyeng.compute_eng(engine, fallback=False):
        y, h = polyeng.gru(dev(x), [tuple(map(dev, p)) for p in params], dev(h0), bidirectional=True)
    assert not isinstance(y, np.ndarray) and not isinstance(h, np.ndarray)
    assert_same_tree(run(x, params, h0, bidirectional=True), (y, h), **TOL[np.dtype(np.float32)])


@pytest.mark.parametrize("chunks", [(6, 2, 5), (3, 1, 2)])
def test_gru_on_dask_arrays_is_lazy_and_equals_the_eager_call(chunks):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(15)
    params = gru_params(rng, 5, 4, 2, 2)
    x = rng.standard_normal((6, 4, 5)).astype(np.float32)
    h0 = rng.standard_normal((4, 4, 4)).astype(np.float32)
    with polyeng.compute_eng("basic"):
        want = polyeng.gru(x, params, h0, bidirectional=True)
        y, h = polyeng.gru(da.from_array(x, chunks=chunks), params, da.from_array(h0, chunks=(4, chunks[1], 2)),
                           bidirectional=True)
    assert isinstance(y, da.Array) and isinstance(h, da.Array)
    assert (y.shape, h.shape) == (want[0].shape, want[1].shape)
    got = da.compute(y, h, scheduler="sync")
    for g, w in zip(got, want):   # a block of one sequence takes BLAS's vector product: not bit for bit
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_gru_in_a_graph_saves_loads_and_runs_mixed_precision(tmp_path):
    from polyeng import amp
    from polyeng.graph import load, trace
    rng = np.random.default_rng(17)
    params = gru_params(rng, 5, 8, 2, 1, "ih_only")

    def fn(x, h0):
        y, h = polyeng.gru(x, params, h0, reset_after=False)
        return polyeng.linear(y, params[1][1][:4]), h
    x, h0 = rng.standard_normal((6, 2, 5)).astype(np.float32), rng.standard_normal((2, 2, 8)).astype(np.float32)
    graph = trace(fn, x, h0)
    assert [n.op for n in graph.nodes] == ["gru", "linear"] and graph.nodes[0].attrs["reset_after"] is False
    want = fn(x, h0)
    graph.save(tmp_path / "gru.polyeng")
    assert_same_tree(want, load(tmp_path / "gru.polyeng")(x, h0), rtol=0, atol=0)
    mixed = amp.to_mixed_precision(graph, "bfloat16")
    assert [n.amp.mixed for n in mixed.nodes if n.op in ("gru", "linear")] == [True, True]
    for got, expected in zip(mixed(x, h0), want):
        assert got.dtype == np.float32
        assert np.max(np.abs(got - expected)) < 2e-2 * max(1.0, np.max(np.abs(expected)))
