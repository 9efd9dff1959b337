"""Running a graph (SPEC §6): results equal calling the function, every node goes through the
selector under the caller's scopes, batch sizes may change, other input changes are errors,
failing kernels fall back, plans are reused, device tensors stay on their device."""
import logging
import warnings

import numpy as np
import pytest

import polyeng
from polyeng import model_zoo
from polyeng.graph import trace
from support import FakeEngine, assert_same_tree, bf16_fp_math_computes_bf16, device_tensor_or_skip

RNG = np.random.default_rng(1)
W = (RNG.standard_normal((6, 5)) / 3).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)
X = RNG.standard_normal((4, 5)).astype(np.float32)


def small_model(x):
    # polyeng ops only: a numpy ufunc on a plain array is numpy's, in a graph it is the polyeng op
    h = polyeng.gelu(polyeng.linear(x, W, B))
    h = polyeng.layer_norm(polyeng.add(polyeng.mul(h, 0.5), h), 6)
    h = polyeng.concat([polyeng.softmax(h), polyeng.tanh(h)], axis=1)
    return polyeng.reshape(h, (x.shape[0], 3, 4)), polyeng.mean(h, axis=0)


OPS_USED = ("linear", "gelu", "layer_norm", "mul", "add", "concat", "softmax", "tanh", "reshape", "mean")




@pytest.fixture(scope="module")
def graph():
    return trace(small_model, X)


@pytest.fixture(scope="module")
def encoder():
    fn = model_zoo.encoder_layer(hidden=16, heads=2, ffn=32, seed=2)
    return fn, trace(fn, RNG.standard_normal((2, 5, 16)).astype(np.float32))


def test_results_equal_the_function_on_basic(graph):
    with polyeng.compute_eng("basic"):
        want = small_model(X)
        assert_same_tree(graph(X), want)
        assert_same_tree(graph(X), want)   # the planned run


@pytest.mark.uses_ops(*OPS_USED)
def test_results_equal_the_function_on_each_engine(graph, encoder, engine):
    fn, enc = encoder
    x = RNG.standard_normal((3, 5, 16)).astype(np.float32)
    with polyeng.compute_eng(engine):
        for _ in range(2):
            assert_same_tree(graph(X), small_model(X))
            assert_same_tree(enc(x), fn(x))


@pytest.mark.uses_ops("embedding", "lstm", "linear")
def test_lstm_language_model_equals_the_function(engine):
    lm = model_zoo.lstm_language_model(vocab=30, embed=8, hidden=12, seed=5)
    ids = RNG.integers(0, 30, (6, 2))
    graph = trace(lm, ids)
    longer = RNG.integers(0, 30, (9, 2))   # time-major: the leading dimension is the sequence
    with polyeng.compute_eng(engine):
        assert_same_tree(graph(ids), lm(ids))
        assert_same_tree(graph(longer), lm(longer))


def test_each_node_runs_under_the_callers_scopes(graph, caplog):
    caplog.set_level(logging.INFO, logger="polyeng")
    with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"), polyeng.verbose(1):
        got = graph(X)
        want = small_model(X)
    assert_same_tree(got, want)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("polyeng,exec,")]
    assert len(lines) == 2 * len(graph.nodes)   # one line per node, then one per direct call
    graph_lines = lines[:len(graph.nodes)]
    assert [line.split(",")[2] for line in graph_lines] == [n.op for n in graph.nodes]
    assert all(line.split(",")[3] == "numba" and ",fpm:bf16," in line for line in graph_lines)
    assert graph_lines == [line.rsplit(",", 1)[0] + "," + g.rsplit(",", 1)[1]
                           for line, g in zip(lines[len(graph.nodes):], graph_lines)]   # the same but the time
    linear = graph_lines[0]
    assert linear.split(",")[6] == "f32"   # ALLOW, but NUMBA computes f32 work in f32 under every mode


def test_the_plan_does_not_outlive_a_change_of_scope(graph):
    with polyeng.compute_eng("basic"):
        strict = graph(X)
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode("bf16"):
        bf16 = graph(X)
        assert_same_tree(bf16, small_model(X))
    with polyeng.compute_eng("basic"):
        assert_same_tree(graph(X), strict)
    assert strict[0].tobytes() != bf16[0].tobytes()


def test_graph_explain_gives_one_decision_per_node(graph):
    with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"):
        decisions = graph.explain(X)
    assert len(decisions) == len(graph.nodes)
    assert [d.node.name for d in decisions] == [n.name for n in graph.nodes]
    assert all(d.decision.engine == "numba" and d.decision.step == "user" for d in decisions)
    by_op = {d.node.op: d.decision for d in decisions}
    # NUMBA computes ALLOW f32 work in f32 under every mode (docs/fp_math.md); BASIC rounds to bf16
    assert by_op["linear"].compute_type == "f32" and by_op["softmax"].compute_type == "f32"
    assert by_op["linear"].fp_math_mode == "bf16"
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode("bf16"):
        assert {d.node.op: d.decision for d in graph.explain(X)}["linear"].compute_type == "bf16"
    text = str(decisions)
    lines = text.splitlines()
    assert lines[0].split() == ["node", "op", "engine", "step", "mode", "compute", "note"]
    assert [line.split()[:3] for line in lines[1:]] == [[n.name, n.op, "numba"] for n in graph.nodes]
    assert all(d.note == "" for d in decisions)   # numba reorders nothing


def test_graph_explain_notes_onednn_weights_reordered_once(graph):
    if not {e.name: e for e in polyeng.engines()}["onednn"].available:
        pytest.skip("onednn is unavailable")
    with polyeng.compute_eng("onednn"), polyeng.fp_math_mode("bf16"):
        decisions = graph.explain(X)
    by_op = {d.node.op: d for d in decisions}
    compute = "bf16" if bf16_fp_math_computes_bf16() else "f32"   # the mode computes f32 without bf16 units
    assert by_op["linear"].decision.engine == "onednn" and by_op["linear"].decision.compute_type == compute
    assert by_op["linear"].note == "weight reordered once (constant)"
    assert "weight reordered once (constant)" in str(decisions)


def test_explain_marks_numpy_nodes():
    graph = trace(lambda x: polyeng.exp(x.T), X)
    first, second = graph.explain(X)
    assert first.decision is None and "numpy" in str(first)
    assert second.decision.engine in {e.name for e in polyeng.engines()}


def test_print_shows_op_inputs_dtype_and_shape_per_node(graph):
    text = str(graph)
    for node in graph.nodes:
        (line,) = [ln for ln in text.splitlines() if ln.split()[:2] == [node.name, node.op]]
        assert ", ".join(node.inputs) in line
        assert f"{node.outputs[0]} f32{list(node.shape)}" in line
    assert "x f32[4, 5]" in text and "shape=(batch, 3, 4)" in text
    assert repr(graph).startswith("<Graph small_model:")


def test_fallback_false_raises_engine_error(graph, backends):
    backends(FakeEngine("graphpinned", ops=("concat",)))
    with polyeng.compute_eng("graphpinned", fallback=False):
        with pytest.raises(polyeng.EngineError, match="graphpinned.*linear"):
            graph(X)
    trace_concat = trace(lambda x: polyeng.concat([x, x]), X)
    with polyeng.compute_eng("graphpinned", fallback=False):
        assert_same_tree(trace_concat(X), np.concatenate([X, X]))


@pytest.mark.parametrize("batch", [1, 4, 9])
def test_another_batch_size_runs(graph, encoder, batch):
    x = RNG.standard_normal((batch, 5)).astype(np.float32)
    out = graph(x)
    assert out[0].shape == (batch, 3, 4)   # reshape with x.shape[0] follows the batch
    assert_same_tree(out, small_model(x))
    fn, enc = encoder
    xe = RNG.standard_normal((batch, 5, 16)).astype(np.float32)
    assert_same_tree(enc(xe), fn(xe))   # reshape with -1
    assert_same_tree(graph(X), small_model(X))   # and back


@pytest.mark.parametrize("bad, message", [
    (X.astype(np.float64), "input x has dtype float64"),
    (X[None], r"input x has shape \(1, 4, 5\)"),
    (X[:, :4], r"input x has shape \(4, 4\)"),
    (X.reshape(-1), r"input x has shape \(20,\)"),
])
def test_other_input_differences_are_value_errors_naming_the_input(graph, bad, message):
    with pytest.raises(ValueError, match=message):
        graph(bad)


def test_wrong_number_of_inputs(graph):
    with pytest.raises(TypeError, match="1 positional"):
        graph(X, X)


def test_a_failing_kernel_falls_back_with_a_warning(backends):
    fake = backends(FakeEngine("graphcrash", ops=("softmax", "concat")))
    graph = trace(lambda x: polyeng.concat([polyeng.softmax(x), x]), X)
    with polyeng.compute_eng("basic"):
        want = graph(X)
    fake.fail.add("softmax")
    with polyeng.compute_eng("graphcrash"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = graph(X)
        second = graph(X)
    fallback = [w for w in caught if issubclass(w.category, polyeng.FallbackWarning)]
    assert len(fallback) == 1 and "graphcrash" in str(fallback[0].message) and "softmax" in str(fallback[0].message)
    assert fake.calls.count("softmax") >= 2 and fake.calls.count("concat") == 2
    assert_same_tree(first, want)
    assert_same_tree(second, want)


def test_a_kernel_failing_in_a_planned_run_falls_back(backends):
    fake = backends(FakeEngine("graphlate", ops=("softmax",)))
    graph = trace(polyeng.softmax, X)
    with polyeng.compute_eng("graphlate"):
        want = graph(X)
        graph(X)   # planned
        fake.fail.add("softmax")
        with pytest.warns(polyeng.FallbackWarning, match="graphlate"):
            got = graph(X)
        with polyeng.compute_eng("graphlate", fallback=False), pytest.raises(polyeng.EngineError, match="crashed"):
            graph(X)
    assert_same_tree(got, want)


def test_repeated_runs_reuse_the_plan(graph, monkeypatch):
    from polyeng.engine import dispatch
    with polyeng.compute_eng("numba"):
        want = graph(X)
        calls = []
        original = dispatch.plan_for
        monkeypatch.setattr(dispatch, "plan_for", lambda *a, **k: calls.append(a[0].name) or original(*a, **k))
        for _ in range(3):
            assert_same_tree(graph(X), want)
        assert calls == []
        other = np.ascontiguousarray(RNG.standard_normal((7, 5)).astype(np.float32))
        graph(other)
        assert len(calls) > 0   # a new signature is planned
        calls.clear()
        graph(other)
        assert calls == []


@pytest.mark.device_tensors
@pytest.mark.uses_ops(*OPS_USED)
def test_device_tensors_stay_on_the_device(engine, caplog, monkeypatch):
    from polyeng.engine import api

    def fn(x):
        h = polyeng.gelu(polyeng.linear(x, W, B))
        return polyeng.softmax(polyeng.layer_norm(h * 0.5 + h, 6)), polyeng.mean(np.tanh(h), axis=0)
    graph = trace(fn, X)
    t = device_tensor_or_skip(X, engine)
    with polyeng.compute_eng(engine):
        want = graph(X)
    uploads = []
    original = api.to_device
    monkeypatch.setattr(api, "to_device", lambda *a, **k: uploads.append(a[0].shape) or original(*a, **k))
    caplog.set_level(logging.INFO, logger="polyeng")
    with polyeng.verbose(1):
        first = graph(t)
        second = graph(t)
    assert sorted(uploads) == sorted(a.shape for a in graph.constants.values())   # once, not per run
    native = type(t)
    assert all(type(r) is native for r in first + second)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("polyeng,exec,")]
    assert len(lines) == 2 * len(graph.nodes)
    assert all(line.split(",")[3:5] == [engine, "layout"] and "transferred" not in line for line in lines)
    assert_same_tree(first, want)
    assert_same_tree(second, want)


def test_slicing_the_leading_dimension_with_fixed_bounds_refuses_another_batch():
    def half(x):
        return polyeng.relu(x[: x.shape[0] // 2])
    x = np.ones((4, 3), np.float32)
    graph = polyeng.graph.trace(half, x)
    np.testing.assert_array_equal(graph(x), half(x))
    with pytest.raises(ValueError, match=r"slices the leading dimension .* traced on 4 rows; this input has 6"):
        graph(np.ones((6, 3), np.float32))


def test_indexing_inside_each_item_follows_the_batch():
    def first_feature(x):
        return polyeng.relu(x[:, :2])
    graph = polyeng.graph.trace(first_feature, np.ones((4, 3), np.float32))
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    np.testing.assert_array_equal(graph(x), first_feature(x))


def _chain(x):
    # each value is read by the next node and by the last one, except those in the middle
    h = polyeng.relu(x)
    for _ in range(8):
        h = polyeng.tanh(polyeng.mul(h, 1.5))
    return polyeng.add(h, x), polyeng.sigmoid(h)


@pytest.mark.parametrize("planned", [False, True], ids=["first-run", "planned-run"])
@pytest.mark.parametrize("engine", ["basic", "numba"])
def test_a_run_frees_each_value_after_its_last_use(engine, planned):
    import tracemalloc
    x = RNG.standard_normal((512, 1024)).astype(np.float32)   # 2 MB per value, 19 values made
    graph = trace(_chain, x)
    with polyeng.compute_eng(engine, fallback=False):
        want = _chain(x)
        if planned:
            graph(x)
        tracemalloc.start()
        try:
            got = graph(x)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert_same_tree(got, want)
    # the two outputs and at most two values alive besides them at any time, not all 19
    assert peak < 4.5 * x.nbytes, peak / x.nbytes


def test_values_freed_are_the_dead_ones_only():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    graph = trace(_chain, x)
    program = graph._compiled()
    outputs = {program.slot[v.name] for v in graph.outputs}
    freed = [slot for dead in program.released for slot in dead]
    assert len(freed) == len(set(freed)) == len(graph.nodes) - len(outputs)
    assert not outputs & set(freed) and not set(program.input_slots) & set(freed)
    for i, dead in enumerate(program.released):   # freed where it is read last
        for slot in dead:
            later = program.steps[i + 1:]
            assert all(slot not in [s for _, s in step.simple] for step in later)


def test_a_graph_that_already_ran_prints_a_verbose_line_per_node(caplog):
    """Verbose is read at every run, not only when a run is planned: a graph run once before
    ``polyeng.verbose(1)`` still prints one exec line per node (host nodes print none)."""
    def fn(x):
        return polyeng.softmax(polyeng.relu(x) * 2.0, axis=-1)
    x = np.ascontiguousarray(X)
    graph = trace(fn, x)
    want = graph(x)   # planned, quietly
    caplog.set_level(logging.INFO, logger="polyeng")
    with polyeng.verbose(1):
        got = graph(x)
        again = graph(x)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("polyeng,exec,")]
    assert [line.split(",")[2] for line in lines] == [n.op for n in graph.nodes] * 2
    caplog.clear()
    graph(x)   # verbose off again: nothing
    assert not [r for r in caplog.records if r.getMessage().startswith("polyeng,exec,")]
    assert_same_tree(got, want)
    assert_same_tree(again, want)


def test_a_planned_run_follows_a_host_op_whose_result_shape_comes_from_input_values():
    """ConstantOfShape of an input's contents: the same input signature, other shapes downstream."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    import polyeng.onnx
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[1], keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = polyeng.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    for engine in ("basic", "numba"):
        with polyeng.compute_eng(engine):
            for size in ([4, 8], [2, 8], [4, 2], [64, 8], [4, 8]):
                np.testing.assert_array_equal(model(np.array(size, np.int64)), np.ones(size[0], np.float32))
    assert onnx is not None


def test_one_array_given_twice_is_not_planned_as_one_slot():
    graph = trace(lambda a, b: polyeng.sub(a, b), X, X + 1)
    x, y = np.ascontiguousarray(X), np.ascontiguousarray(X * 3)
    np.testing.assert_array_equal(graph(x, x), np.zeros_like(x))   # first run: one object in both slots
    np.testing.assert_array_equal(graph(x, y), x - y)
