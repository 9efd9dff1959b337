"""lstm on the BASIC engine against known values, plus every argument check.

Then every engine under test (see conftest) against BASIC: every option, 16-bit storage, f32
weights and states with other input dtypes, NaN/Inf, odd sizes, inputs left untouched; float
results within rounding. matmul and linear are in test_op_matmul.py, with the tests of
device-resident inputs of all three."""
import itertools
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import eps
from support import assert_close_tree as assert_same_tree, both, run_on


F64_TOL = dict(rtol=0, atol=1e-8)   # literals below carry 9 decimals
F32_TOL = dict(rtol=0, atol=2e-6)


def run(*args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return polyeng.lstm(*args, **kwargs)


def wave(shape, phase):
    """Deterministic weights in [-0.5, 0.5]."""
    n = int(np.prod(shape))
    return (0.5 * np.sin(0.7 * np.arange(n) + phase)).reshape(shape)


def make_params(input_size, hidden, layers, dirs, bias=True, dtype=np.float64):
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        entry = (wave((4 * hidden, layer_in), 4 * k), wave((4 * hidden, hidden), 4 * k + 1),
                 wave((4 * hidden,), 4 * k + 2) if bias else None,
                 wave((4 * hidden,), 4 * k + 3) if bias else None)
        params.append(tuple(None if a is None else a.astype(dtype) for a in entry))
    return params


def cast_params(params, dtype):
    return [tuple(None if a is None else a.astype(dtype) for a in entry) for entry in params]


# --- one layer, hidden size 1, computed by hand -----------------------------------------------
# gates = w_ih * x_t + w_hh * h_{t-1} + b_ih + b_hh, stacked i, f, g, o
HAND_PARAMS = [(np.array([[0.5], [-0.5], [0.25], [1.0]]), np.array([[-2.0], [2.0], [1.0], [0.0]]),
                np.array([0.0, 0.0, 0.0, -0.5]), np.array([0.0, 0.0, 0.0, -0.5]))]
HAND_X = np.array([[[2.0]], [[-1.0]]])          # (L=2, N=1, in=1)
HAND_H0, HAND_C0 = np.array([[[0.5]]]), np.array([[[1.0]]])
# step 1 (x=2, h0=0.5, c0=1):
#   i: 0.5*2 - 2*0.5        = 0 -> sigmoid 0.5
#   f: -0.5*2 + 2*0.5       = 0 -> sigmoid 0.5
#   g: 0.25*2 + 1*0.5       = 1 -> tanh(1) = 0.7615941559557649
#   o: 1*2 + 0 - 0.5 - 0.5  = 1 -> sigmoid(1) = 0.7310585786300049
#   c1 = 0.5*1 + 0.5*0.7615941559557649 = 0.8807970779778824
#   h1 = 0.7310585786300049 * tanh(0.8807970779778824) = 0.7310585786300049 * 0.7068235612... = 0.5167256615367296
C1, H1 = 0.8807970779778824, 0.5167256615367296
# step 2 (x=-1, h1, c1):
#   i: -0.5 - 2*h1 = -1.5334513230734592,  f: 0.5 + 2*h1 = 1.5334513230734592
#   g: -0.25 + h1  =  0.2667256615367296,  o: -1 + 0 - 1  = -2
#   c2 = sigmoid(1.53345...)*c1 + sigmoid(-1.53345...)*tanh(0.26672...) = 0.770714387065446
#   h2 = sigmoid(-2) * tanh(c2) = 0.11920292202211755 * 0.6473... = 0.07716537525411832
C2, H2 = 0.770714387065446, 0.07716537525411832


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_step_hidden_one(dtype):
    params = cast_params(HAND_PARAMS, dtype)
    y, (h, c) = run(HAND_X[:1].astype(dtype), params, HAND_H0.astype(dtype), HAND_C0.astype(dtype))
    tol = F64_TOL if dtype == np.float64 else F32_TOL
    assert y.dtype == h.dtype == c.dtype == dtype
    assert y.shape == h.shape == c.shape == (1, 1, 1)
    np.testing.assert_allclose(y[0, 0, 0], H1, **tol)
    np.testing.assert_allclose(h[0, 0, 0], H1, **tol)
    np.testing.assert_allclose(c[0, 0, 0], C1, **tol)
    # the hand arithmetic itself
    sig = 1 / (1 + math.exp(-1))
    assert math.isclose(C1, 0.5 + 0.5 * math.tanh(1)) and math.isclose(H1, sig * math.tanh(C1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_steps_hidden_one(dtype):
    params = cast_params(HAND_PARAMS, dtype)
    y, (h, c) = run(HAND_X.astype(dtype), params, HAND_H0.astype(dtype), HAND_C0.astype(dtype))
    tol = F64_TOL if dtype == np.float64 else F32_TOL
    np.testing.assert_allclose(y[:, 0, 0], [H1, H2], **tol)
    np.testing.assert_allclose(h.ravel(), [H2], **tol)
    np.testing.assert_allclose(c.ravel(), [C2], **tol)


# --- two layers, bidirectional, batch_first (values confirmed against torch.nn.LSTM) ----------
BI_X = 0.4 * (np.arange(18).reshape(2, 3, 3) % 5 - 2)   # (N=2, L=3, in=3)
BI_PARAMS = make_params(3, 2, layers=2, dirs=2)           # H=2; params[2][0] is (8, 4)
BI_Y = np.array([
    [[0.101604093, 0.122898025, -0.298315104, -0.371984827],
     [0.118840769, 0.191060426, -0.272573704, -0.322324695],
     [0.121265445, 0.226356734, -0.196172457, -0.225004533]],
    [[0.099439582, 0.125318302, -0.296594379, -0.373146479],
     [0.105924455, 0.201076019, -0.275986996, -0.317578612],
     [0.125690746, 0.225432292, -0.201009793, -0.222198472]]])
BI_H = np.array([
    [[-0.362453136, -0.164914655], [-0.362992392, -0.049764344]],
    [[0.053742355, -0.182831399], [0.014270824, -0.115125951]],
    [[0.121265445, 0.226356734], [0.125690746, 0.225432292]],
    [[-0.298315104, -0.371984827], [-0.296594379, -0.373146479]]])
BI_C = np.array([
    [[-0.629830884, -0.249756103], [-0.759380615, -0.075722401]],
    [[0.131222549, -0.709229798], [0.04283, -0.581901861]],
    [[0.190133661, 0.423740906], [0.196193303, 0.420321277]],
    [[-0.75978925, -0.633617015], [-0.747232911, -0.642026247]]])


def check_bi(result, tol, y=BI_Y, h=BI_H, c=BI_C, dtype=None):
    out_y, (out_h, out_c) = result
    assert out_y.shape == y.shape and out_h.shape == h.shape and out_c.shape == c.shape
    if dtype is not None:
        assert out_y.dtype == out_h.dtype == out_c.dtype == dtype
    np.testing.assert_allclose(out_y.astype(np.float64), y, **tol)
    np.testing.assert_allclose(out_h.astype(np.float64), h, **tol)
    np.testing.assert_allclose(out_c.astype(np.float64), c, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_layers_bidirectional_batch_first(dtype):
    result = run(BI_X.astype(dtype), cast_params(BI_PARAMS, dtype), batch_first=True, bidirectional=True)
    check_bi(result, F64_TOL if dtype == np.float64 else F32_TOL, dtype=dtype)
    # the reverse direction of the last layer ends at t=0; the forward one at t=L-1
    np.testing.assert_array_equal(result[1][0][3], result[0][:, 0, 2:])
    np.testing.assert_array_equal(result[1][0][2], result[0][:, -1, :2])


def test_time_major_matches_batch_first():
    y, (h, c) = run(BI_X.transpose(1, 0, 2), BI_PARAMS, bidirectional=True)
    check_bi((y.transpose(1, 0, 2), (h, c)), F64_TOL)


def test_zero_states_equal_default():
    zeros = np.zeros((4, 2, 2))
    check_bi(run(BI_X, BI_PARAMS, zeros, zeros, batch_first=True, bidirectional=True), F64_TOL)
    check_bi(run(BI_X, BI_PARAMS, zeros, None, batch_first=True, bidirectional=True), F64_TOL)


def test_unbatched_is_one_batch_row():
    y, (h, c) = run(BI_X[1], BI_PARAMS, bidirectional=True)
    assert y.shape == (3, 4) and h.shape == c.shape == (4, 2)
    np.testing.assert_allclose(y, BI_Y[1], **F64_TOL)
    np.testing.assert_allclose(h, BI_H[:, 1], **F64_TOL)
    np.testing.assert_allclose(c, BI_C[:, 1], **F64_TOL)
    # batch_first has no say for unbatched input, as in torch
    y_bf, _ = run(BI_X[1], BI_PARAMS, batch_first=True, bidirectional=True)
    np.testing.assert_array_equal(y_bf, y)
    # unbatched initial states are (layers * dirs, H)
    y2, (h2, _) = run(BI_X[1], BI_PARAMS, np.zeros((4, 2)), np.zeros((4, 2)), bidirectional=True)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(h2, h)


@pytest.mark.parametrize("layout", ["transposed", "negative-stride", "strided"])
def test_non_contiguous_x(layout):
    if layout == "transposed":
        x = np.ascontiguousarray(BI_X.transpose(2, 0, 1)).transpose(1, 2, 0)
    elif layout == "negative-stride":
        x = np.ascontiguousarray(BI_X[::-1, :, ::-1])[::-1, :, ::-1]
    else:
        x = np.repeat(BI_X, 2, axis=2)[:, :, ::2]
    assert not x.flags.c_contiguous
    check_bi(run(x, BI_PARAMS, batch_first=True, bidirectional=True), F64_TOL)


@pytest.mark.parametrize("dtype, tol", [(polyeng.float16, dict(rtol=0, atol=3e-3)),
                                        (polyeng.bfloat16, dict(rtol=0, atol=2.5e-2))])
def test_sixteen_bit_storage(dtype, tol):
    x = BI_X.astype(dtype)
    for params in (cast_params(BI_PARAMS, dtype), cast_params(BI_PARAMS, np.float32)):  # same or f32 weights
        check_bi(run(x, params, batch_first=True, bidirectional=True), tol, dtype=dtype)


def test_f64_input_with_f32_weights():
    params = cast_params(BI_PARAMS, np.float32)
    check_bi(run(BI_X, params, batch_first=True, bidirectional=True), F32_TOL, dtype=np.float64)


# --- one layer, no biases, given initial states (values confirmed against torch.nn.LSTM) -------
NB_X = 0.3 * (np.arange(18).reshape(3, 2, 3) % 7 - 3)    # (L=3, N=2, in=3)
NB_H0, NB_C0 = wave((1, 2, 2), 30.0), wave((1, 2, 2), 31.0)
NB_Y = np.array([[[-0.141025371, 0.101999738], [0.115087579, 0.079717291]],
                 [[-0.021623191, 0.110112774], [0.014152363, 0.064221368]],
                 [[0.104794119, -0.097172546], [-0.053174944, 0.100530417]]])
NB_C = np.array([[[0.233018458, -0.155937998], [-0.114251976, 0.245792831]]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_biases_with_initial_states(dtype):
    params = make_params(3, 2, layers=1, dirs=1, bias=False, dtype=dtype)
    y, (h, c) = run(NB_X.astype(dtype), params, NB_H0.astype(dtype), NB_C0.astype(dtype))
    tol = F64_TOL if dtype == np.float64 else F32_TOL
    np.testing.assert_allclose(y, NB_Y, **tol)
    np.testing.assert_allclose(h, NB_Y[-1:], **tol)
    np.testing.assert_allclose(c, NB_C, **tol)


def test_one_bias_of_two():
    w_ih, w_hh, b_ih, b_hh = BI_PARAMS[0]
    total = b_ih + b_hh
    results = [run(BI_X[0], [(w_ih, w_hh, a, b)]) for a, b in ((total, None), (None, total), (b_ih, b_hh))]
    for y, (h, c) in results[:2]:
        np.testing.assert_allclose(y, results[2][0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c, results[2][1][1], rtol=0, atol=1e-12)


# --- zero-size ----------------------------------------------------------------------------------
def test_empty_batch():
    y, (h, c) = run(np.zeros((5, 0, 3)), BI_PARAMS, bidirectional=True)
    assert y.shape == (5, 0, 4) and h.shape == c.shape == (4, 0, 2)
    y, (h, c) = run(np.zeros((0, 5, 3), np.float32), cast_params(BI_PARAMS, np.float32), batch_first=True,
                    bidirectional=True)
    assert y.shape == (0, 5, 4) and h.shape == c.shape == (4, 0, 2) and y.dtype == np.float32


def test_empty_sequence_returns_initial_states():
    y, (h, c) = run(np.zeros((0, 2, 3)), BI_PARAMS, bidirectional=True)
    assert y.shape == (0, 2, 4)
    np.testing.assert_array_equal(h, np.zeros((4, 2, 2)))
    np.testing.assert_array_equal(c, np.zeros((4, 2, 2)))
    h0, c0 = wave((4, 2, 2), 1.0), wave((4, 2, 2), 2.0)
    y, (h, c) = run(np.zeros((2, 0, 3)), BI_PARAMS, h0, c0, batch_first=True, bidirectional=True)
    assert y.shape == (2, 0, 4)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(c, c0)
    assert h is not h0 and c is not c0
    y, (h, c) = run(np.zeros((0, 3), polyeng.float16), cast_params(BI_PARAMS, np.float32), bidirectional=True)
    assert y.shape == (0, 4) and h.shape == (4, 2) and h.dtype == polyeng.float16


# --- argument checks ----------------------------------------------------------------------------
X3 = np.zeros((3, 2, 3))
P1 = make_params(3, 2, layers=1, dirs=1)


def test_x_must_be_float_and_2d_or_3d():
    with pytest.raises(TypeError, match=r"x has dtype int32.*floating-point"):
        run(np.zeros((3, 2, 3), np.int32), P1)
    with pytest.raises(ValueError, match=r"x has shape \(3, 2, 3, 1\) \(4-D\).*\(L, N, in\)"):
        run(np.zeros((3, 2, 3, 1)), P1)
    with pytest.raises(ValueError, match=r"x has shape \(3,\) \(1-D\)"):
        run(np.zeros(3), P1)


def test_flags_must_be_bool():
    with pytest.raises(TypeError, match=r"batch_first=1: expected True or False"):
        run(X3, P1, batch_first=1)
    with pytest.raises(TypeError, match=r"bidirectional='yes': expected True or False"):
        run(X3, P1, bidirectional="yes")


def test_params_container_and_count():
    with pytest.raises(TypeError, match=r"params=ndarray: expected a list or tuple"):
        run(X3, np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"params has 0 entries; expected a positive multiple of 1"):
        run(X3, [])
    with pytest.raises(ValueError, match=r"params has 3 entries; expected a positive multiple of 2"):
        run(X3, BI_PARAMS[:3], bidirectional=True)


def test_params_entries_are_four_tuples():
    with pytest.raises(TypeError, match=r"params\[0\] is a 3-element tuple; expected a \(w_ih, w_hh, b_ih, b_hh\)"):
        run(X3, [P1[0][:3]])
    with pytest.raises(TypeError, match=r"params\[1\] is ndarray; expected a \(w_ih, w_hh, b_ih, b_hh\)"):
        run(X3, [P1[0], np.zeros(4)], bidirectional=True)
    with pytest.raises(TypeError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) is None"):
        run(X3, [(None,) + P1[0][1:]])
    with pytest.raises(TypeError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) is None"):
        run(X3, [(P1[0][0], None) + P1[0][2:]])


def test_weight_shapes_name_layer_and_direction():
    bad = list(BI_PARAMS)
    bad[2] = (np.zeros((8, 3)),) + bad[2][1:]          # layer 1 reads 2 * H = 4 features
    with pytest.raises(ValueError, match=r"params\[2\]\[0\] \(w_ih of layer 1, forward\) has shape \(8, 3\); "
                                         r"expected \(8, 4\)"):
        run(X3, bad, bidirectional=True)
    bad = list(BI_PARAMS)
    bad[3] = bad[3][:3] + (np.zeros(6),)
    with pytest.raises(ValueError, match=r"params\[3\]\[3\] \(b_hh of layer 1, reverse\) has shape \(6,\); "
                                         r"expected \(8,\)"):
        run(X3, bad, bidirectional=True)
    with pytest.raises(ValueError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has shape \(8, 3\); "
                                         r"expected \(8, 5\).*input size 5 from x"):
        run(np.zeros((3, 2, 5)), P1)
    with pytest.raises(ValueError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has shape \(6, 2\); "
                                         r"expected \(8, 2\)"):
        run(X3, [(P1[0][0], np.zeros((6, 2))) + P1[0][2:]])
    with pytest.raises(ValueError, match=r"params\[0\]\[2\] \(b_ih of layer 0\) has shape \(8, 1\)"):
        run(X3, [P1[0][:2] + (np.zeros((8, 1)), None)])
    with pytest.raises(ValueError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has shape \(8,\); "
                                         r"expected \(4\*hidden_size, hidden_size\)"):
        run(X3, [(P1[0][0], np.zeros(8)) + P1[0][2:]])
    with pytest.raises(ValueError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has shape \(0, 0\).*>= 1"):
        run(X3, [(np.zeros((0, 3)), np.zeros((0, 0)), None, None)])


def test_hidden_size_consistent_across_layers():
    two_layers = make_params(3, 2, layers=2, dirs=1)
    other = make_params(2, 3, layers=1, dirs=1)[0]         # H=3 weights for a layer reading 2 features
    with pytest.raises(ValueError, match=r"params\[1\]\[0\] \(w_ih of layer 1\) has shape \(12, 2\); "
                                         r"expected \(8, 2\) \(hidden size 2 from params\[0\]\[1\]"):
        run(X3, [two_layers[0], other])


def test_weight_dtypes():
    with pytest.raises(TypeError, match=r"params\[0\]\[1\] \(w_hh of layer 0\) has dtype int64.*floating-point"):
        run(X3, [(P1[0][0], np.zeros((8, 2), np.int64)) + P1[0][2:]])
    with pytest.raises(TypeError, match=r"params\[0\]\[0\] \(w_ih of layer 0\) has dtype float64 but the input "
                                        r"is float32.*match the input's dtype or be float32"):
        run(X3.astype(np.float32), P1)
    with pytest.raises(TypeError, match=r"params\[0\]\[2\] \(b_ih of layer 0\) has dtype float16"):
        run(X3, [P1[0][:2] + (P1[0][2].astype(np.float16), None)])


def test_state_shapes_and_dtypes():
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 3, 2\); expected \(1, 2, 2\) = "
                                         r"\(layers \* directions, batch, hidden_size\)"):
        run(X3, P1, np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match=r"c0 has shape \(2, 2, 2\); expected \(1, 2, 2\)"):
        run(X3, P1, None, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 3, 2\); expected \(1, 2\).*unbatched"):
        run(X3[:, 0], P1, np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match=r"h0 has shape \(2, 3, 2\); expected \(2, 2, 2\)"):
        run(np.zeros((2, 3, 3)), make_params(3, 2, 1, 2), np.zeros((2, 3, 2)), batch_first=True,
            bidirectional=True)  # batch_first: N is x.shape[0]
    with pytest.raises(TypeError, match=r"c0 has dtype int32"):
        run(X3, P1, None, np.zeros((1, 2, 2), np.int32))
    with pytest.raises(TypeError, match=r"h0 has dtype float16 but the input is float64"):
        run(X3, P1, np.zeros((1, 2, 2), np.float16))


# --- extra cross-check against torch, when it is installed --------------------------------------
@pytest.mark.parametrize("layers, bidirectional, batch_first, bias", [
    (1, False, False, True), (2, True, False, False), (3, True, True, True), (2, False, True, True)])
def test_matches_torch(layers, bidirectional, batch_first, bias):
    torch = pytest.importorskip("torch")
    dirs = 2 if bidirectional else 1
    rng = np.random.default_rng(layers * 8 + dirs)
    module = torch.nn.LSTM(4, 3, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                           bias=bias).double()
    params = []
    for k in range(layers * dirs):
        suffix = f"_l{k // dirs}" + ("_reverse" if k % dirs else "")
        params.append(tuple(getattr(module, f"{name}{suffix}").detach().numpy() if bias or name.startswith("w")
                            else None for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
    x = rng.standard_normal((2, 5, 4) if batch_first else (5, 2, 4))
    h0, c0 = rng.standard_normal((2, layers * dirs, 2, 3))
    y, (h, c) = run(x, params, h0, c0, batch_first=batch_first, bidirectional=bidirectional)
    ty, (th, tc) = module(torch.from_numpy(x), (torch.from_numpy(h0), torch.from_numpy(c0)))
    for ours, theirs in ((y, ty), (h, th), (c, tc)):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


# --- every engine against BASIC -------------------------------------------------------------------

TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}


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
    run_on(engine, "lstm", x, params, h0, c0, bidirectional=True)
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
    y, (h, c) = run_on(engine, "lstm", x, params, batch_first=True, bidirectional=True)
    for ours, theirs in ((y, y_t), (h, h_t), (c, c_t)):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)
