"""The ``batch_first_unbind`` rewrite (``polyeng/graph/batch_first.py``): an attention's q, k and
v unbound from ``qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)`` are taken with the batch
first instead, in each form the exporters write the unbind (Slice and Squeeze, Split and Squeeze,
Gather of one index). Checked against onnxruntime and against the graph without the rewrite;
forms it must leave alone are left alone."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import polyeng  # noqa: E402
import polyeng.graph  # noqa: E402
import polyeng.onnx  # noqa: E402

N, H, D = 5, 2, 4
C = H * D
FORMS = ["slice", "split", "gather"]


def _const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def attention(form: str, perm=(2, 0, 3, 1, 4), extra_output=None) -> bytes:
    """(B, N, C) -> (B, N, C): qkv = x @ W, split into q, k, v by ``form``, softmax(q k^T) v;
    ``extra_output``: a value also given as a graph output."""
    rng = np.random.default_rng(1)
    inits = [_const("w", (rng.standard_normal((C, 3 * C)) * 0.3).astype(np.float32)),
             _const("shape", np.array([-1, N, 3, H, D], np.int64)),
             _const("back", np.array([-1, N, C], np.int64)),
             _const("zero", np.array([0], np.int64)), _const("axes0", np.array([0], np.int64))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["qkv"]),
             helper.make_node("Reshape", ["qkv", "shape"], ["qkv5"]),
             helper.make_node("Transpose", ["qkv5"], ["p"], perm=list(perm))]
    if form == "slice":
        for i, name in enumerate("qkv"):
            inits += [_const(f"s{i}", np.array([i], np.int64)), _const(f"e{i}", np.array([i + 1], np.int64))]
            nodes += [helper.make_node("Slice", ["p", f"s{i}", f"e{i}", "axes0"], [f"{name}1"]),
                      helper.make_node("Squeeze", [f"{name}1", "axes0"], [f"{name}0"])]
    elif form == "split":
        inits.append(_const("ones", np.array([1, 1, 1], np.int64)))
        nodes.append(helper.make_node("Split", ["p", "ones"], ["q1", "k1", "v1"], axis=0))
        nodes += [helper.make_node("Squeeze", [f"{name}1", "axes0"], [f"{name}0"]) for name in "qkv"]
    else:
        for i, name in enumerate("qkv"):
            inits.append(_const(f"i{i}", np.array(i, np.int64)))
            nodes.append(helper.make_node("Gather", ["p", f"i{i}"], [f"{name}0"], axis=0))
    nodes += [helper.make_node("Transpose", ["k0"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q0", "kt"], ["s"]),
              helper.make_node("Softmax", ["s"], ["a"], axis=-1),
              helper.make_node("MatMul", ["a", "v0"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "back"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", N, C])]
    if extra_output:
        outputs.append(helper.make_tensor_value_info(extra_output, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                 ["batch", N, C])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _x(batch=4):
    return np.random.default_rng(2).standard_normal((batch, N, C)).astype(np.float32)


def _rewrites(graph) -> int:
    return sum("batch_first_unbind" in node.meta.get("fusions", ()) for node in graph.nodes)


def _first(result):
    return result[0] if isinstance(result, (list, tuple)) else result


@pytest.mark.parametrize("form", FORMS)
def test_each_unbind_form_takes_the_batch_first_and_gives_onnxruntime_s_result(form):
    model = attention(form)
    graph = polyeng.onnx.load(model)
    [permute] = [node for node in graph.nodes if node.op == "permute_contiguous" and len(node.shape) == 5]
    assert tuple(permute.args["dims"]) == (0, 2, 3, 1, 4)
    assert _rewrites(graph) == {"slice": 7, "split": 5, "gather": 4}[form]   # the permute and its readers
    assert "batch_first_unbind" in str(graph)
    x = _x()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = _first(graph(x))
    unchanged = _first(polyeng.onnx.load(model, disable_fusions="batch_first_unbind")(x))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, unchanged, rtol=1e-6, atol=1e-7)
    odd = _x(3)
    np.testing.assert_allclose(_first(graph(odd)), ort.InferenceSession(model, providers=["CPUExecutionProvider"])
                               .run(None, {"x": odd})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["batch not second", "permute is an output", "part is an output", "turned off"])
def test_what_is_not_an_unbind_of_a_batch_second_permute_is_left_alone(case):
    model = attention("split" if case == "turned off" else "slice", perm=(2, 3, 0, 1, 4) if case == "batch not second"
                      else (2, 0, 3, 1, 4), extra_output={"permute is an output": "p", "part is an output": "q1"}
                      .get(case))
    graph = polyeng.onnx.load(model, disable_fusions="batch_first_unbind" if case == "turned off" else None)
    assert _rewrites(graph) == 0
    x = _x()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = graph(x)
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got], want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", FORMS)
def test_a_rewritten_graph_saves_and_loads(tmp_path, form):
    graph = polyeng.onnx.load(attention(form))
    graph.save(tmp_path / "g.json")
    back = polyeng.graph.load(tmp_path / "g.json")
    x = _x()
    np.testing.assert_array_equal(polyeng.to_numpy(_first(back(x))), polyeng.to_numpy(_first(graph(x))))
    assert _rewrites(back) == _rewrites(graph)


def test_values_of_unknown_shape_are_left_alone():
    """The loader gives a value whose shape it could not infer the shape (): no rewrite, no error."""
    from polyeng.graph.batch_first import batch_first_unbind
    from polyeng.graph.fusing import _Context
    from polyeng.graph.ir import Node, Ref
    f32 = np.dtype(np.float32)
    nodes = [Node("t", "permute_contiguous", {"x": Ref("a"), "dims": (2, 0, 3, 1, 4)}, ["p"], 0, [(f32, ())]),
             Node("g", "onnx.getitem", {"x": Ref("p"), "key": slice(0, 1, 1)}, ["q1"], 0, [(f32, ())]),
             Node("s", "onnx.squeeze", {"x": Ref("q1"), "axes": (0,)}, ["q"], 0, [(f32, ())])]
    types = {"a": (f32, ()), "p": (f32, ()), "q1": (f32, ()), "q": (f32, ())}
    assert batch_first_unbind(nodes, _Context(nodes, types, {"q"}, {})) is nodes
    assert types["p"] == (f32, ())
