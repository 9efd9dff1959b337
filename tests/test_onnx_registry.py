"""The ONNX converter registry (SPEC §11): ``supported_ops()`` and its opset ranges, the fusions,
a model at the newest opset onnx knows, a converter's opset range refusing models outside it,
and the run-time half (``polyeng.onnx.host_ops``) running saved graphs without onnx."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyeng
import polyeng.onnx

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_cases import F16, F32, build, i64, mlp_model, node, randn  # noqa: E402

from polyeng.onnx import registry  # noqa: E402

NEWEST_OPSET = onnx.defs.onnx_opset_version()
# The newest opset whose schema changes were checked against the converters (docs/onnx.md): a
# newer onnx that changes a supported op fails test_every_supported_form_was_reviewed until the
# converter handles the change or its range stops before it.
REVIEWED_OPSET = 28
SPEC_OPS = ("MatMul Gemm Add Sub Mul Div Pow Sqrt Erf Tanh Sigmoid Relu Exp Softmax LogSoftmax "
            "LayerNormalization Gelu MaxPool AveragePool GlobalAveragePool ReduceMean Resize Concat "
            "Transpose Where Cast LSTM Gather Constant Shape Slice Squeeze Unsqueeze Reshape Flatten "
            "Expand Identity ConstantOfShape Range "
            # wave 3 (SPEC §11): the vision and text models' ops
            "Conv BatchNormalization GRU HardSwish HardSigmoid LeakyRelu Clip Abs Neg Log Reciprocal Max Min "
            "Equal Greater Less GreaterOrEqual LessOrEqual And Or Xor Not IsNaN IsInf Split ReduceSum ReduceMax "
            "ReduceMin Pad Dropout GatherND GatherElements").split()


def test_supported_ops_gives_each_op_its_first_and_last_opset():
    ops = polyeng.onnx.supported_ops()
    assert isinstance(ops, dict) and set(SPEC_OPS) <= set(ops)
    for op_type, span in ops.items():
        assert isinstance(span, tuple) and len(span) == 2 and all(type(v) is int for v in span), (op_type, span)
        assert 13 <= span[0] <= span[1] == NEWEST_OPSET, (op_type, span)
    assert ops["Softmax"] == (13, NEWEST_OPSET)
    assert ops["ReduceMean"] == (13, NEWEST_OPSET)          # two converters, end to end
    assert ops["LayerNormalization"] == (17, NEWEST_OPSET)  # the ops' own first opsets
    assert ops["Gelu"] == (20, NEWEST_OPSET)


def test_every_supported_form_was_reviewed():
    changed = {}
    for op_type, (first, last) in polyeng.onnx.supported_ops().items():
        since = onnx.defs.get_schema(op_type, max_inclusive_version=last).since_version
        if since > REVIEWED_OPSET:
            changed[op_type] = since
    assert not changed, f"ops changed in opsets newer than {REVIEWED_OPSET}, not reviewed: {changed}"


def test_fusions_are_listed_by_name_with_the_op_they_start_from():
    assert polyeng.onnx.fusions() == {"matmul_add_to_linear": "MatMul", "gelu_erf": "Erf", "gelu_tanh": "Tanh",
                                      "sigmoid_mul_to_silu": "Sigmoid", "written_out_layer_norm": "ReduceMean",
                                      "conv_batch_norm_fold": "Conv"}


def test_a_model_at_the_newest_opset_loads_and_matches_the_reference():
    model = mlp_model(NEWEST_OPSET)
    graph = polyeng.onnx.load(model)
    for n in (2, 5):
        x = randn(n, 6)
        np.testing.assert_allclose(graph(x), ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def _range_f16(**attrs):
    """Range on float16 (opset 27 on) whose limit is the batch size, known only at run time."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"]),
             node("Cast", ["n"], ["limit"], to=onnx.TensorProto.FLOAT16),
             node("Range", ["start", "limit", "delta"], ["y"], name="range_f16", **attrs)]
    inits = {"zero": i64(0), "start": np.float16(0.5), "delta": np.float16(0.25)}
    return build(nodes, [("x", F32, ["N", 3])], [("y", F16)], inits=inits, opset=NEWEST_OPSET)


@pytest.mark.skipif(NEWEST_OPSET < 27, reason="Range takes float16 from opset 27")
def test_float16_range_computes_wide_as_stash_type_1_says_and_refuses_other_stash_types():
    model = _range_f16()
    graph = polyeng.onnx.load(model)
    for n in (2, 5):
        x = np.zeros((n, 3), F32)
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
        got = graph(x)
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="Range 'range_f16': stash_type=10 is not supported"):
        polyeng.onnx.load(_range_f16(stash_type=onnx.TensorProto.FLOAT16))


def _softplus(opset):
    graph = onnx.helper.make_graph([onnx.helper.make_node("Softplus", ["x"], ["y"], name="soft")], "softplus",
                                   [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])


def test_a_converter_refuses_models_outside_its_opsets_naming_them():
    assert "Softplus" not in polyeng.onnx.supported_ops()

    @registry.converter("Softplus", opsets=(13, 17))
    def throwaway(n):   # not softplus: enough to show which opsets reach it
        n.set(0, n.need(0, "X"))
    try:
        assert polyeng.onnx.supported_ops()["Softplus"] == (13, 17)
        x = randn(2, 3)
        np.testing.assert_array_equal(polyeng.onnx.load(_softplus(17))(x), x)
        with pytest.raises(ValueError, match=r"Softplus 'soft': polyeng converts Softplus at opsets 13 to 17, "
                                             r"not at the model's opset 18"):
            polyeng.onnx.load(_softplus(18))
        with pytest.raises(ValueError, match="overlap"):
            registry.converter("Softplus", opsets=(17, None))(lambda n: None)
    finally:
        registry.unregister(throwaway)
    assert "Softplus" not in polyeng.onnx.supported_ops()
    with pytest.raises(ValueError, match="Softplus 'soft': polyeng has no op for it"):
        polyeng.onnx.load(_softplus(17))


def test_an_op_older_than_its_converter_is_refused_naming_the_range():
    graph = onnx.helper.make_graph([onnx.helper.make_node("Gelu", ["x"], ["y"], name="g")], "gelu",
                                   [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(ValueError, match=f"Gelu 'g': polyeng converts Gelu at opsets 20 to {NEWEST_OPSET}, "
                                         f"not at the model's opset 17"):
        polyeng.onnx.load(model)


def test_saved_graphs_run_without_the_onnx_package(tmp_path):
    from importlib.resources import files
    graph = polyeng.onnx.load(str(files("polyeng.models") / "encoder_opset17.onnx"))
    assert any(n.op.startswith("onnx.") for n in graph.nodes), "the encoder should keep host shape nodes"
    ids, mask = np.random.default_rng(0).integers(0, 1000, (2, 5)), np.ones((2, 5), bool)
    graph.save(tmp_path / "encoder.zip")
    np.save(tmp_path / "want.npy", graph(ids, mask))
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "mask.npy", mask)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["onnx"] = None            # importing onnx now fails
        import numpy as np
        import polyeng.onnx.host_ops
        assert "polyeng.onnx.loader" not in sys.modules, "host_ops imported the converters"
        import polyeng.graph
        graph = polyeng.graph.load({str(tmp_path / "encoder.zip")!r})
        got = graph(np.load({str(tmp_path / "ids.npy")!r}), np.load({str(tmp_path / "mask.npy")!r}))
        np.testing.assert_array_equal(got, np.load({str(tmp_path / "want.npy")!r}))
        assert "polyeng.onnx.loader" not in sys.modules
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
