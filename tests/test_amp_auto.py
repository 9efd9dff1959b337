"""polyeng.amp.auto_mixed_precision (SPEC §6): as many nodes in 16 bits as keep the outputs within
tolerance on the caller's inputs, with a report of the nodes kept and why."""
import numpy as np
import pytest

import polyeng
from polyeng import amp, model_zoo
from polyeng.graph import Graph, trace

RNG = np.random.default_rng(4)


@pytest.fixture(scope="module")
def encoder():
    enc = model_zoo.encoder_layer(hidden=16, heads=2, ffn=32, seed=9)
    x = RNG.standard_normal((2, 6, 16)).astype(np.float32)
    return trace(enc, x), x


def candidates(graph, dtype="bfloat16"):
    full = amp.to_mixed_precision(graph, dtype, missing_op_mode="ignore")
    return {n.name for n in full.nodes if n.amp and n.amp.mixed}


def mixed_nodes(graph):
    return {n.name for n in graph.nodes if n.amp and n.amp.mixed}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("rtol, atol", [(1e-2, 1e-3), (1e-3, 1e-4), (0.05, 0.01)])
def test_outputs_within_tolerance_and_report_lists_kept_nodes(encoder, dtype, rtol, atol):
    graph, x = encoder
    converted, report = amp.auto_mixed_precision(graph, x, dtype=dtype, rtol=rtol, atol=atol)
    assert isinstance(converted, Graph)
    want, got = graph(x), converted(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    every = candidates(graph, dtype)
    kept = {name for name, _, _ in report.kept}
    assert kept <= every and report.candidates == len(every)
    # a FOLLOW node downstream of a kept node follows it back to the original dtype
    assert mixed_nodes(converted) <= every - kept
    ops = {n.name: n.op for n in graph.nodes}
    for name, op, error in report.kept:
        assert ops[name] == op and isinstance(error, float)
        node = {n.name: n for n in converted.nodes}[name]
        assert not node.amp.mixed and "keep=" in node.amp.why
        assert name in str(report) and op in str(report)
    assert report.error <= 0 and report.max_abs_diff == float(np.max(np.abs(got - want)))


def test_tight_tolerance_keeps_nodes_and_loose_keeps_none(encoder):
    graph, x = encoder
    _, tight = amp.auto_mixed_precision(graph, x, rtol=1e-4, atol=1e-5)
    assert tight.kept and all(error > 0 for _, _, error in tight.kept[:1])
    converted, loose = amp.auto_mixed_precision(graph, x, rtol=1.0, atol=1.0)
    assert loose.kept == [] and loose.converted == loose.candidates > 0
    assert mixed_nodes(converted) == candidates(graph)


def test_zero_tolerance_keeps_every_candidate_and_is_bit_identical(encoder):
    graph, x = encoder
    converted, report = amp.auto_mixed_precision(graph, x, rtol=0, atol=0)
    assert mixed_nodes(converted) == set()
    assert not any(n.op == "cast" for n in converted.nodes)
    assert converted(x).tobytes() == graph(x).tobytes()
    assert report.kept and report.error <= 0 and report.max_abs_diff == 0


def test_report_counts_the_nodes_that_run_mixed(encoder):
    # a kept node takes the FOLLOW nodes after it back to the original dtype: they are not counted
    graph, x = encoder
    converted, report = amp.auto_mixed_precision(graph, x, rtol=1e-2, atol=1e-3)
    assert report.kept
    assert report.converted == len(mixed_nodes(converted))


def test_lstm_language_model_with_integer_inputs():
    lm = model_zoo.lstm_language_model(vocab=30, embed=8, hidden=12, seed=10)
    ids = RNG.integers(0, 30, (5, 2))
    graph = trace(lm, ids)
    converted, report = amp.auto_mixed_precision(graph, ids, dtype="float16", rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(converted(ids), graph(ids), rtol=1e-3, atol=1e-4)
    assert report.dtype == "float16"


def test_keyword_inputs_and_nested_outputs():
    w = (RNG.standard_normal((8, 8)) / 3).astype(np.float32)

    def fn(x, *, y):
        h = polyeng.matmul(x, w)
        return {"h": h, "s": (polyeng.softmax(polyeng.add(h, y)),)}
    x, y = RNG.standard_normal((3, 8)).astype(np.float32), RNG.standard_normal((3, 8)).astype(np.float32)
    graph = trace(fn, x, y=y)
    converted, _ = amp.auto_mixed_precision(graph, x, y=y, rtol=1e-2, atol=1e-3)
    got, want = converted(x, y=y), graph(x, y=y)
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(got["s"][0], want["s"][0], rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(rtol=-1), "rtol=-1"), (dict(atol=-1e-3), "atol=-0.001"), (dict(rtol="0.1"), "rtol='0.1'"),
    (dict(rtol=True), "rtol=True"), (dict(atol=float("nan")), "atol=nan"),
    (dict(dtype="float32"), "bfloat16 or float16"), (dict(dtype="int8"), "dtype='int8'"),
])
def test_bad_arguments_are_value_errors(encoder, kwargs, message):
    graph, x = encoder
    with pytest.raises(ValueError, match=message):
        amp.auto_mixed_precision(graph, x, **kwargs)
