"""``polyeng.onnx.load`` op by op (SPEC §11): every supported op form, run on each engine and under
the default selection, matches the ONNX reference evaluator at every size of the model's named
dims; every unsupported form is refused at load in one ValueError naming each bad node.

The models and their inputs live in ``onnx_cases.py``. Tolerances: rtol 1e-5 with atol 1e-6 for
f32 (transcendental ops and LSTM included), exact for integers, bools, casts and data movement,
1e-3 for f16 (one f16 ulp: the reference rounds f16 math per step, polyeng computes in f32 and
rounds once) and 1e-12 for f64.
"""
from __future__ import annotations

import pathlib
import re
import warnings

import numpy as np
import pytest

import polyeng
import polyeng.onnx

pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_cases import (BOOL, EITHER, F32, I64, SUPPORTED, UNSUPPORTED, build, i64, mlp_model, node,  # noqa: E402
                        randn, tensor)

_references: dict = {}


def reference(case) -> list:
    """The reference evaluator's outputs for each call of ``case`` (computed once per process)."""
    if case.name not in _references:
        names = [i.name for i in case.model.graph.input]
        run = ReferenceEvaluator(case.model).run
        _references[case.name] = [run(None, dict(zip(names, arrays))) for arrays in case.calls]
    return _references[case.name]


def assert_matches(got, want, case, where):
    assert isinstance(got, np.ndarray), f"{where}: got a {type(got).__name__}, not a numpy array"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, reference {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, reference {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=where)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol,
                                   err_msg=where)


def check_runs(graph, case):
    """Calls ``graph`` on each of the case's inputs (one loaded graph, several sizes of its named
    dims) and compares every output with the reference; a kernel that falls back fails too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", polyeng.FallbackWarning)
        for k, (arrays, want) in enumerate(zip(case.calls, reference(case))):
            sizes = ", ".join(str(a.shape) for a in arrays)
            got = graph(*arrays)
            if len(want) == 1:
                assert_matches(got, want[0], case, f"{case.name} call {k} on {sizes}")
            else:
                assert isinstance(got, tuple) and len(got) == len(want), \
                    f"{case.name}: expected a tuple of {len(want)} outputs, got {type(got).__name__}"
                for i, (g, w) in enumerate(zip(got, want)):
                    assert_matches(g, w, case, f"{case.name} call {k} on {sizes}, output {i}")
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, polyeng.FallbackWarning)]
    assert not fallbacks, f"kernels fell back: {fallbacks}"


def assert_names_bad_nodes(message: str, bad) -> None:
    for op_type, name in bad:
        assert re.search(rf"\b{op_type} ['\"]{re.escape(name)}['\"]", message), \
            f"the error does not name {op_type} {name!r}: {message}"


def by_name(cases):
    return pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])


# ---------------------------------------------------------------- supported forms match the reference

@by_name(SUPPORTED)
def test_matches_reference_on_engine(case, engine):
    graph = polyeng.onnx.load(case.model)
    with polyeng.compute_eng(engine):
        check_runs(graph, case)


@by_name(SUPPORTED)
def test_matches_reference_under_default_selection(case):
    check_runs(polyeng.onnx.load(case.model), case)


@by_name(EITHER)
def test_other_forms_match_or_are_refused_naming_the_node(case, engine):
    try:
        graph = polyeng.onnx.load(case.model)
    except ValueError as exc:
        assert_names_bad_nodes(str(exc), case.bad)
        return
    with polyeng.compute_eng(engine):
        check_runs(graph, case)


# ---------------------------------------------------------------- refusals

@by_name(UNSUPPORTED)
def test_unsupported_node_is_refused_at_load(case):
    with pytest.raises(ValueError) as info:
        polyeng.onnx.load(case.model)
    assert_names_bad_nodes(str(info.value), case.bad)


@pytest.mark.parametrize("name", ["two_bad_nodes_in_parallel", "two_bad_nodes_and_a_good_one"])
def test_every_unsupported_node_is_listed_in_one_error(name):
    case = next(c for c in UNSUPPORTED if c.name == name)
    with pytest.raises(ValueError) as info:
        polyeng.onnx.load(case.model)
    message = str(info.value)
    assert_names_bad_nodes(message, [("Hardmax", "hardmax1"), ("Resize", "up1")])
    assert "relu_ok" not in message


# ---------------------------------------------------------------- loading and calling

def test_path_bytes_and_model_proto_load_the_same_graph(tmp_path):
    model = mlp_model()
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    x = randn(4, 6)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    results = []
    for source in (model, model.SerializeToString(), str(path), pathlib.Path(path)):
        graph = polyeng.onnx.load(source)
        assert isinstance(graph, polyeng.graph.Graph)
        results.append(graph(x))
    for got in results:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, results[0])


def signature_model():
    """Three inputs of three dtypes with named and fixed dims, and an initializer."""
    nodes = [node("Gather", ["table", "token_ids"], ["emb"]), node("Add", ["emb", "features_in"], ["summed"]),
             node("Unsqueeze", ["keep_mask", "last"], ["mask3"]),
             node("Where", ["mask3", "summed", "features_in"], ["y"])]
    inputs = [("token_ids", I64, ["N", "S"]), ("keep_mask", BOOL, ["N", "S"]), ("features_in", F32, ["N", "S", 4])]
    return build(nodes, inputs, [("y", F32)], inits={"table": randn(6, 4), "last": i64(-1)})


def test_inputs_keep_onnx_names_order_dtypes_and_fixed_dims():
    model = signature_model()
    graph = polyeng.onnx.load(model)
    assert all(isinstance(v, polyeng.graph.Value) for v in graph.inputs)
    assert [v.name for v in graph.inputs] == ["token_ids", "keep_mask", "features_in"]
    assert [np.dtype(v.dtype) for v in graph.inputs] == [np.int64, np.bool_, np.float32]
    assert [len(v.shape) for v in graph.inputs] == [2, 2, 3]
    assert graph.inputs[2].shape[2] == 4
    rng = np.random.default_rng(3)
    for n, s in ((2, 3), (1, 6)):
        arrays = (rng.integers(0, 6, (n, s)), rng.random((n, s)) < 0.5, randn(n, s, 4))
        want = ReferenceEvaluator(model).run(None, dict(zip(["token_ids", "keep_mask", "features_in"], arrays)))[0]
        np.testing.assert_allclose(graph(*arrays), want, rtol=1e-6, atol=0)


def test_a_fixed_dim_of_another_size_is_a_value_error_naming_the_input():
    graph = polyeng.onnx.load(signature_model())
    ids, mask = np.zeros((2, 3), np.int64), np.ones((2, 3), bool)
    with pytest.raises(ValueError, match="features_in"):
        graph(ids, mask, randn(2, 3, 5))


def test_initializer_listed_as_input_is_not_an_input():
    w, b = randn(4, 3), randn(3)
    graph_proto = helper.make_graph(
        [node("MatMul", ["x", "w"], ["h"]), node("Add", ["h", "b"], ["y"])], "old_style",
        [helper.make_tensor_value_info("x", 1, ["N", 4]), helper.make_tensor_value_info("w", 1, [4, 3]),
         helper.make_tensor_value_info("b", 1, [3])],
        [helper.make_tensor_value_info("y", 1, ["N", 3])], initializer=[tensor("w", w), tensor("b", b)])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    graph = polyeng.onnx.load(model)
    assert [v.name for v in graph.inputs] == ["x"]
    for n in (2, 5):
        x = randn(n, 4)
        np.testing.assert_allclose(graph(x), x @ w + b, rtol=1e-5, atol=1e-6)


def test_a_batch_norm_after_a_conv_is_folded_into_its_weights():
    from onnx_cases_conv import FOLDED
    case = next(c for c in SUPPORTED if c.name == FOLDED)
    graph = polyeng.onnx.load(case.model)
    assert [(n.op, n.name) for n in graph.nodes] == [("conv2d", "conv1+bn1")]
    assert "conv1+bn1" in str(graph)
    check_runs(graph, case)
    assert "conv_batch_norm_fold" in polyeng.onnx.fusions()


@pytest.mark.parametrize("engine", ["basic", "numba", "opencl"])
@pytest.mark.parametrize("index", [0, 1], ids=["batch_norm_opset13", "maxpool_same_lower"])
def test_forms_the_reference_evaluator_gets_wrong_match_onnxruntime(engine, index):
    ort = pytest.importorskip("onnxruntime")
    from onnx_cases_conv import onnxruntime_only
    case = onnxruntime_only()[index]
    session = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = polyeng.onnx.load(case.model)
    for (x,) in case.calls:
        with polyeng.compute_eng(engine, fallback=False):
            got = graph(x)
        want = session.run(None, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _ops_of(graph) -> list:
    return [n.op for n in graph.nodes]


def test_a_transpose_that_moves_only_unit_axes_is_a_view_not_a_copy():
    cases = {c.name: c for c in SUPPORTED}
    for name in ("transpose_unit_axes_named", "transpose_unit_axis_first", "transpose_of_an_unsqueeze"):
        ops = _ops_of(polyeng.onnx.load(cases[name].model, cache=False))
        assert "permute_contiguous" not in ops, (name, ops)   # host views (in a host program)
    assert _ops_of(polyeng.onnx.load(cases["transpose_unit_axes_fixed"].model, cache=False)) == ["reshape"]
    # axes of other sizes reordered: a copy, as ever
    assert "permute_contiguous" in _ops_of(polyeng.onnx.load(cases["transpose_perm_0213"].model, cache=False))


@pytest.mark.parametrize("nodes,outputs,inits", [
    ([node("Identity", ["x"], ["y"])], ["y"], None),
    ([node("Reshape", ["x", "s"], ["y"])], ["y"], {"s": np.asarray([-1], I64)}),
    ([node("Transpose", ["x"], ["y"], perm=[1, 0, 2])], ["y"], None),
    ([node("Relu", ["x"], ["r"]), node("Reshape", ["r", "s"], ["y"])], ["r", "y"], {"s": np.asarray([-1], I64)}),
], ids=["identity", "reshape", "unit-axis-transpose", "output-and-its-view"])
def test_outputs_never_share_memory_with_the_inputs_or_each_other(nodes, outputs, inits):
    model = build(nodes, [("x", F32, ["N", 1, 4])], [(o, F32) for o in outputs], inits=inits)
    graph = polyeng.onnx.load(model.SerializeToString(), cache=False)
    x = np.arange(12, dtype=np.float32).reshape(3, 1, 4)
    got = graph(x)
    got = list(got) if isinstance(got, tuple) else [got]
    want = [a.copy() for a in got]
    x[:] = -1
    for a in got:
        a[...] = 7   # writing one output changes neither the input nor another output
    assert (x == -1).all()
    for a, w in zip(got, want):
        assert not np.shares_memory(a, x)
    assert all(not np.shares_memory(a, b) for i, a in enumerate(got) for b in got[i + 1:])
