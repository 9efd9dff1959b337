"""Graph fusions (polyeng.graph.fuse): which nodes become fused_conv, that the fused graph gives the
unfused graph's results on every engine (special values included), and turning fusions off."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import polyeng
from polyeng.graph import fuse, fusions, trace
from polyeng.ops.fused import fused_conv

ENGINES = [e.name for e in polyeng.engines() if e.available]
RNG = np.random.default_rng(7)


def _weights(cout, cin, k):
    w = RNG.standard_normal((cout, cin, k, k)).astype(np.float32) * 0.3
    b = RNG.standard_normal(cout).astype(np.float32)
    return w, b


W1, B1 = _weights(6, 6, 3)
W2, B2 = _weights(6, 6, 1)


def block(x):
    """A ResNet basic block: conv, relu, conv, add the input, relu; then a pointwise conv and hardswish."""
    y = polyeng.relu(polyeng.conv2d(x, W1, B1, padding=1))
    y = polyeng.relu(polyeng.add(polyeng.conv2d(y, W1, B1, padding=1), x))
    return polyeng.hardswish(polyeng.conv2d(y, W2, B2))


def _traced():
    return trace(block, RNG.standard_normal((2, 6, 7, 5)).astype(np.float32))


def test_fusions_are_listed_in_order():
    assert list(fusions()) == ["common_subexpressions", "conv_residual", "conv_activation", "masked_softmax",
                              "batch_first_unbind", "onednn_programs"]
    assert all(isinstance(text, str) for text in fusions().values())
    assert all("fused_conv" in fusions()[name] for name in ("conv_residual", "conv_activation"))


def test_block_becomes_three_fused_convolutions():
    g = _traced()
    f = fuse(g)
    assert [n.op for n in g.nodes].count("conv2d") == 3 and len(g.nodes) == 7
    # the pointwise convolution stays as it is: its BLAS product has nothing to fuse into
    assert [n.op for n in f.nodes] == ["fused_conv", "fused_conv", "conv2d", "hardswish"]
    first, second = f.nodes[:2]
    assert first.args["activation"] == "relu" and first.args["residual"] is None
    assert second.args["activation"] == "relu" and second.args["residual"] is not None
    assert second.meta["fusions"] == ["conv_residual", "conv_activation"]
    assert len(second.meta["fused"]) == 3
    assert "fused: conv_activation x1, conv_residual x1, conv_activation x1" not in str(f)
    assert "fused: conv_activation x2, conv_residual x1" in str(f) or \
        "fused: conv_residual x1, conv_activation x2" in str(f)
    assert fuse(f) is f   # nothing left to fuse


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("special", [False, True])
def test_fused_graph_gives_the_unfused_results(engine, special):
    g = _traced()
    f = fuse(g)
    x = RNG.standard_normal((3, 6, 7, 5)).astype(np.float32)
    if special:
        x[0, 1, 2, 3], x[1, 0, 0, 0], x[2, 5, 6, 4] = np.nan, np.inf, -np.inf
    with polyeng.compute_eng(engine, fallback=False), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error")   # each engine runs its own fused_conv
        want = polyeng.to_numpy(g(x))
        got = polyeng.to_numpy(f(x))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


def test_a_value_read_twice_or_returned_is_not_swallowed():
    def twice(x):
        y = polyeng.conv2d(x, W1, B1, padding=1)
        return polyeng.add(polyeng.relu(y), y)

    def returned(x):
        y = polyeng.conv2d(x, W1, B1, padding=1)
        return y, polyeng.relu(y)
    x = RNG.standard_normal((1, 6, 4, 4)).astype(np.float32)
    for fn in (twice, returned):
        g = trace(fn, x)
        assert fuse(g, disable="onednn_programs") is g


def test_a_broadcast_add_is_not_a_residual():
    bias = RNG.standard_normal((1, 6, 1, 1)).astype(np.float32)

    def broadcast(x, b):
        return polyeng.add(polyeng.conv2d(x, W1, B1, padding=1), b)
    g = trace(broadcast, RNG.standard_normal((1, 6, 4, 4)).astype(np.float32), bias)
    assert fuse(g, disable="onednn_programs") is g


def test_a_pointwise_convolution_is_left_unfused():
    def pointwise(x):
        return polyeng.relu(polyeng.conv2d(x, W2, B2))

    def strided(x):
        return polyeng.relu(polyeng.conv2d(x, W2, B2, stride=2))
    x = RNG.standard_normal((1, 6, 4, 4)).astype(np.float32)
    assert fuse(trace(pointwise, x)).nodes[0].op == "conv2d"
    assert fuse(trace(strided, x)).nodes[0].op == "fused_conv"   # not a plain matrix product


def test_fusions_turn_off_by_name(monkeypatch):
    g = _traced()
    only_residual = fuse(g, disable=("conv_activation",))
    assert [n.op for n in only_residual.nodes] == ["conv2d", "relu", "fused_conv", "relu", "conv2d", "hardswish"]
    assert fuse(g, disable="all") is g
    monkeypatch.setenv("POLYENG_DISABLE_FUSIONS", "conv_residual, conv_activation, onednn_programs")
    assert fuse(g) is g
    monkeypatch.setenv("POLYENG_DISABLE_FUSIONS", "")
    with pytest.raises(ValueError, match="unknown fusion name.*'conv_relu'"):
        fuse(g, disable=["conv_relu"])
    with pytest.raises(TypeError, match="fusion names"):
        fuse(g, disable=[3])


def test_fused_graph_saves_and_loads(tmp_path):
    f = fuse(_traced())
    path = tmp_path / "fused.json"
    f.save(path)
    back = polyeng.graph.load(path)
    x = RNG.standard_normal((2, 6, 7, 5)).astype(np.float32)
    np.testing.assert_array_equal(polyeng.to_numpy(back(x)), polyeng.to_numpy(f(x)))
    assert [n.meta.get("fusions") for n in back.nodes] == [n.meta.get("fusions") for n in f.nodes]


def test_onnx_loader_fuses_and_turns_off(tmp_path):
    onnx = pytest.importorskip("onnx")
    import polyeng.onnx   # noqa: F401 (polyeng.onnx.load below; another test may not have imported it)
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(W1, "w")
    b = numpy_helper.from_array(B1, "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6, 5, 5])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "block.onnx"
    onnx.save(model, path)
    fused = polyeng.onnx.load(str(path))
    plain = polyeng.onnx.load(str(path), disable_fusions="conv_residual,conv_activation")
    assert [n.op for n in fused.nodes] == ["fused_conv"]
    assert [n.op for n in plain.nodes] == ["conv2d", "add", "relu"]
    x = RNG.standard_normal((3, 6, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(fused(x), plain(x), rtol=1e-5, atol=1e-5)


def test_fused_conv_checks_its_arguments():
    x = np.zeros((1, 2, 4, 4), np.float32)
    w = np.zeros((3, 2, 1, 1), np.float32)
    with pytest.raises(ValueError, match="activation='swish'"):
        fused_conv(x, w, activation="swish")
    with pytest.raises(ValueError, match="residual has shape \\(1, 3, 4, 5\\)"):
        fused_conv(x, w, residual=np.zeros((1, 3, 4, 5), np.float32))
    with pytest.raises(TypeError, match="residual has dtype float64"):
        fused_conv(x, w, residual=np.zeros((1, 3, 4, 4)))
    with pytest.raises(ValueError, match="alpha <= beta"):
        fused_conv(x, w, activation="clip", alpha=1.0, beta=0.0)
    with pytest.raises(TypeError, match="alpha='a'"):
        fused_conv(x, w, activation="leaky_relu", alpha="a")
    with pytest.raises(ValueError, match="weight has shape"):
        fused_conv(x, np.zeros((3, 3, 1, 1), np.float32))


def test_profile_times_every_node():
    f = fuse(_traced())
    x = RNG.standard_normal((2, 6, 7, 5)).astype(np.float32)
    found = f.profile(x, repeat=3)
    assert [n["name"] for n in found.nodes] == [n.name for n in f.nodes]
    assert sorted(o["op"] for o in found.ops) == ["conv2d", "fused_conv", "hardswish"]
    assert {o["op"]: o["count"] for o in found.ops}["fused_conv"] == 2
    assert found.repeat == 3 and found.run_ms > 0
    assert "per op type:" in str(found) and "fused_conv" in str(found)
    with pytest.raises(ValueError, match="repeat=0"):
        f.profile(x, repeat=0)


def test_fused_conv_takes_dask_arrays():
    da = pytest.importorskip("dask.array")
    x = RNG.standard_normal((6, 6, 7, 5)).astype(np.float32)
    r = RNG.standard_normal((6, 6, 7, 5)).astype(np.float32)
    lazy = fused_conv(da.from_array(x, chunks=(2, 3, 4, 5)), W1, B1, padding=1, residual=da.from_array(r, chunks=3),
                      activation="relu")
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), fused_conv(x, W1, B1, padding=1, residual=r, activation="relu"),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "basic"])
@pytest.mark.parametrize("activation,alpha,beta", [
    ("none", 0.0, 0.0), ("relu", 0.0, 0.0), ("sigmoid", 0.0, 0.0), ("tanh", 0.0, 0.0), ("hardswish", 0.0, 0.0),
    ("hardsigmoid", 0.0, 0.0), ("silu", 0.0, 0.0), ("gelu", 0.0, 0.0), ("gelu_tanh", 0.0, 0.0),
    ("leaky_relu", 0.1, 0.0), ("leaky_relu", 0.0, 0.0), ("clip", -1.0, 1.0)])
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("with_residual", [False, True])
def test_every_activation_matches_basic_special_values_included(engine, activation, alpha, beta, special,
                                                               with_residual):
    """ONEDNN's post-ops lose special values (measured: relu and clip gave numbers for NaN), so it
    fuses only finite operands; the result must not tell."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 8, 9, 11)).astype(np.float32) * 3
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    w.flags.writeable = False   # a graph's constant
    r = rng.standard_normal((2, 16, 9, 11)).astype(np.float32) if with_residual else None
    if special:
        x[0, 0, 0, 0], x[1, 2, 3, 4], x[0, 5, 8, 10] = np.nan, np.inf, -np.inf
    kwargs = dict(padding=1, residual=r, activation=activation, alpha=alpha, beta=beta)
    with np.errstate(all="ignore"):
        with polyeng.compute_eng("basic"):
            want = fused_conv(x, w, **kwargs)
        with polyeng.compute_eng(engine, fallback=False):
            got = polyeng.to_numpy(fused_conv(x, w, **kwargs))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)


def test_onnx_sigmoid_times_its_input_is_silu(tmp_path):
    onnx = pytest.importorskip("onnx")
    import polyeng.onnx   # noqa: F401 (polyeng.onnx.load below; another test may not have imported it)
    from onnx import TensorProto, helper

    def model(second):
        nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", [second, "s"], ["y"])]
        inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", 5]) for n in ("x", "z")]
        graph = helper.make_graph(nodes, "silu", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])])
        path = tmp_path / f"{second}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        return str(path)
    assert "sigmoid_mul_to_silu" in polyeng.onnx.fusions()
    x, z = RNG.standard_normal((3, 5)).astype(np.float32), RNG.standard_normal((3, 5)).astype(np.float32)
    silu = polyeng.onnx.load(model("x"))
    assert [n.op for n in silu.nodes] == ["silu"]
    np.testing.assert_allclose(silu(x, z), x / (1 + np.exp(-x)), rtol=1e-6, atol=1e-7)
    other = polyeng.onnx.load(model("z"))   # z * sigmoid(x) is no SiLU
    assert [n.op for n in other.nodes] == ["sigmoid", "mul"]
    assert [n.op for n in polyeng.onnx.load(model("x"), disable_fusions="sigmoid_mul_to_silu").nodes] == ["sigmoid", "mul"]


@pytest.mark.skipif("onednn" not in ENGINES, reason="onednn is unavailable")
def test_onednn_keeps_special_values_the_post_ops_would_lose():
    """Found in review: a slope that is 0 in f32 (oneDNN's max(x, 0) gives 0 for -inf and NaN),
    hardswish past 5.7e37 (polyeng's x * relu6(x + 3) overflows, oneDNN's form does not), and a
    kept finiteness answer of a constant that was freed."""
    from polyeng.backends.onednn import fused as onednn_fused
    w = np.ones((1, 2, 1, 1), np.float32)
    w.flags.writeable = False
    x = np.full((1, 2, 3, 3), -3e38, np.float32)   # the convolution overflows to -inf
    big = np.full((1, 2, 3, 3), 1e38, np.float32) / 2
    with np.errstate(all="ignore"):
        for kwargs, a in ((dict(activation="leaky_relu", alpha=0.0), x), (dict(activation="leaky_relu", alpha=1e-50), x),
                          (dict(activation="hardswish"), big)):
            with polyeng.compute_eng("basic"):
                want = fused_conv(a, w, **kwargs)
            with polyeng.compute_eng("onednn", fallback=False):
                got = fused_conv(a, w, **kwargs)
            np.testing.assert_array_equal(got, want)
        with polyeng.compute_eng("onednn"):
            assert polyeng.explain("leaky_relu", np.ones(1 << 18, np.float32), negative_slope=1e-50).engine != "onednn"
        with polyeng.compute_eng("onednn", fallback=False):
            np.testing.assert_array_equal(polyeng.hardswish(np.array([3e38, -3e38, 1.0], np.float32)),
                                          np.array([np.inf, -0.0, 1.0 * 4 / 6], np.float32))
    c = np.ones(3, np.float32)
    c.flags.writeable = False
    assert onednn_fused._finite(c)
    assert next(v for k, v in onednn_fused._finite_constants.items() if k[0] == c.ctypes.data)[0] is c


@pytest.mark.skipif("onednn" not in ENGINES, reason="onednn is unavailable")
def test_a_weight_made_writeable_again_is_read_as_it_is():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    w.flags.writeable = False
    with polyeng.compute_eng("onednn", fallback=False):
        first = polyeng.conv2d(x, w, padding=1)
        w.flags.writeable = True
        w *= 2
        again = polyeng.conv2d(x, w, padding=1)
    np.testing.assert_allclose(again, 2 * first, rtol=1e-5, atol=1e-4)


def _twice(x):
    """The same products and activations twice over (the second on a copy of the weight), and one
    on a weight that differs only in sign of zero."""
    a = polyeng.relu(polyeng.linear(x, LW))
    b = polyeng.relu(polyeng.linear(x, LW.copy()))
    c = polyeng.linear(x, LW_NEGZERO)
    return polyeng.add(a, b), c


LW = np.zeros((4, 3), np.float32)
LW[0, 0] = 1.5
LW_NEGZERO = LW.copy()
LW_NEGZERO[1, 1] = -0.0


def test_common_subexpressions_are_computed_once():
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    g = trace(_twice, x)
    f = fuse(g)
    assert [n.op for n in g.nodes].count("linear") == 3
    assert [n.op for n in f.nodes].count("linear") == 2 and [n.op for n in f.nodes].count("relu") == 1
    assert len(f.constants) == 2   # the copy of LW is read no more; -0.0 keeps its own
    for got, want in zip(f(x), g(x)):
        np.testing.assert_array_equal(got, want)
    assert fuse(g, disable=("common_subexpressions",)).nodes == fuse(g, disable=("common_subexpressions",)).nodes
    assert [n.op for n in fuse(g, disable="common_subexpressions").nodes].count("linear") == 3


def test_a_repeated_node_that_is_a_graph_output_keeps_its_name():
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    g = trace(lambda x: (polyeng.relu(x), polyeng.relu(x)), x)
    f = fuse(g)
    assert len(f.nodes) == 2 and [o.name for o in f.outputs] == [o.name for o in g.outputs]
    for got, want in zip(f(x), g(x)):
        np.testing.assert_array_equal(got, want)


MASK = np.where(RNG.random((3, 1, 1, 16)) < 0.3, np.float32(np.finfo(np.float32).min), np.float32(0))


def _attention(scores, mask):
    """An exported attention's softmax: the mask added, softmax, NaNs (a row masked whole) to 0."""
    p = polyeng.softmax(polyeng.add(scores, mask), axis=-1)
    return polyeng.select(polyeng.isnan(p), np.float32(0.0), p)


def _scores():
    s = RNG.standard_normal((3, 2, 5, 16)).astype(np.float32)
    s[0, 1, 2] = -np.inf   # a row of -inf: NaN from softmax, 0 after the guard
    return s


def test_attention_softmax_becomes_one_fused_softmax():
    s = _scores()
    g = trace(_attention, s, MASK)
    f = fuse(g)
    assert [n.op for n in f.nodes] == ["fused_softmax"], [n.op for n in f.nodes]
    node = f.nodes[0]
    assert node.args["nan_fill"] == 0.0 and node.meta["fusions"] == ["masked_softmax"] and len(node.meta["fused"]) == 4
    assert "fused: masked_softmax x1" in str(f)
    for engine in ENGINES:
        with polyeng.compute_eng(engine):
            got, want = f(s, MASK), g(s, MASK)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        assert got[0, 1, 2].tolist() == [0.0] * 16
    assert [n.op for n in fuse(g, disable="masked_softmax").nodes] == ["add", "softmax", "isnan", "select"]


def test_masked_softmax_takes_what_only_it_reads():
    s = _scores()

    def add_read_twice(scores, mask):
        y = polyeng.add(scores, mask)
        p = polyeng.softmax(y)
        return polyeng.select(polyeng.isnan(p), np.float32(0.0), p), y

    def fill_from_an_input(scores, mask, fill):
        p = polyeng.softmax(polyeng.add(scores, mask))
        return polyeng.select(polyeng.isnan(p), fill, p)

    def softmax_read_again(scores, mask):
        p = polyeng.softmax(polyeng.add(scores, mask))
        return polyeng.select(polyeng.isnan(p), np.float32(0.0), p), polyeng.relu(p)

    ops = [n.op for n in fuse(trace(add_read_twice, s, MASK)).nodes]
    assert ops == ["add", "fused_softmax"]            # the add is an output too: only the guard is taken
    fill = np.full((1,), 0.5, np.float32)
    g = trace(fill_from_an_input, s, MASK, fill)
    assert [n.op for n in fuse(g).nodes] == ["fused_softmax", "isnan", "select"]   # the mask only
    np.testing.assert_allclose(fuse(g)(s, MASK, fill), g(s, MASK, fill), rtol=1e-6)
    assert [n.op for n in fuse(trace(softmax_read_again, s, MASK)).nodes] == ["fused_softmax", "isnan", "select",
                                                                                 "relu"]


def test_nans_of_other_signs_are_not_merged():
    x = RNG.standard_normal(3).astype(np.float32)
    g = trace(lambda x: polyeng.concat([polyeng.add(x, float("nan")), polyeng.add(x, -float("nan"))]), x)
    assert [n.op for n in fuse(g).nodes].count("add") == 2
    np.testing.assert_array_equal(np.signbit(fuse(g)(x)), np.signbit(g(x)))
