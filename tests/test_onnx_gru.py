"""ONNX's GRU against onnxruntime: every supported form of ``onnx_cases_gru`` (both
linear_before_reset, every direction and layout) on each engine, the refused forms' reasons,
and torch.nn.GRU exported by both of PyTorch's exporters, loaded and matching PyTorch and
onnxruntime at two sizes of its dynamic dims. test_onnx_ops.py checks the same cases against
the ONNX reference evaluator."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import polyeng
import polyeng.onnx

ort = pytest.importorskip("onnxruntime")
from onnx_cases import SUPPORTED, UNSUPPORTED  # noqa: E402  (first: onnx_cases_gru reads its blocks)
from onnx_cases_gru import grus, grus_unsupported  # noqa: E402

CASES = grus()
ENGINES = ["basic", "numba", "opencl"]


def session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def layout(model) -> int:
    return next((a.i for a in model.graph.node[0].attribute if a.name == "layout"), 0)


def onnxruntime_outputs(model, arrays):
    """onnxruntime's outputs of a GRU model. onnxruntime has no GRU with layout 1, so such a
    model runs as its layout-0 twin on transposed inputs, its outputs transposed back."""
    names = [i.name for i in model.graph.input]
    if not layout(model):
        return session(model).run(None, dict(zip(names, arrays)))
    from onnx import ModelProto
    twin = ModelProto()
    twin.CopyFrom(model)
    (attribute,) = [a for a in twin.graph.node[0].attribute if a.name == "layout"]
    attribute.i = 0
    for value in list(twin.graph.input) + list(twin.graph.output):
        value.type.tensor_type.ClearField("shape")
    feed = {name: a.transpose(1, 0, 2) for name, a in zip(names, arrays)}   # x (N, S, F), h0 (N, D, H)
    outputs = session(twin).run(None, feed)
    return [o.transpose(2, 0, 1, 3) if o.ndim == 4 else o.transpose(1, 0, 2) for o in outputs]


def outputs_of(graph_result, count):
    return graph_result if count > 1 else (graph_result,)


def test_the_cases_are_in_the_lists_test_onnx_ops_checks_against_the_reference_evaluator():
    names = {c.name for c in SUPPORTED} | {c.name for c in UNSUPPORTED}
    assert {c.name for c in CASES + grus_unsupported()} <= names


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gru_matches_onnxruntime(case, engine):
    graph = polyeng.onnx.load(case.model)
    for arrays in case.calls:
        want = onnxruntime_outputs(case.model, arrays)
        with polyeng.compute_eng(engine, fallback=False):
            got = outputs_of(graph(*arrays), len(want))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (case.name, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{case.name} on {engine}")


def test_linear_before_reset_changes_the_result():
    """Both forms are computed, not one of them twice: the same model but for the flag."""
    from onnx import ModelProto
    base = next(c for c in CASES if c.name == "gru_forward_y_only_lbr0").model
    x = np.random.default_rng(0).standard_normal((4, 2, 4)).astype(np.float32)
    results = []
    for flag in (0, 1):
        model = ModelProto()
        model.CopyFrom(base)
        (attribute,) = [a for a in model.graph.node[0].attribute if a.name == "linear_before_reset"]
        attribute.i = flag
        ours, theirs = polyeng.onnx.load(model)(x), session(model).run(None, {"x": x})[0]
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        results.append(ours)
    assert np.max(np.abs(results[0] - results[1])) > 1e-3


REASONS = {"gru_clip": r"GRU 'gru_clipped': clip=1.0 is not supported",
           "gru_relu_activations": r"GRU 'gru_relu': activations=\['Sigmoid', 'Relu'\] \(polyeng computes Sigmoid, "
                                   r"Tanh\)",
           "gru_activation_alpha": r"GRU 'gru_hard': activations=\['HardSigmoid', 'Tanh'\]",
           "gru_short_sequence_lens": r"GRU 'gru_ragged': sequence_lens=\[5, 3\] are not all the full length 5",
           "gru_sequence_lens_on_a_named_length": r"GRU 'gru_named_lengths': sequence_lens on a model whose "
                                                  r"sequence length varies"}


@pytest.mark.parametrize("case", grus_unsupported(), ids=lambda c: c.name)
def test_refused_forms_name_the_node_and_the_reason(case):
    with pytest.raises(ValueError, match=REASONS[case.name]):
        polyeng.onnx.load(case.model)


# ---------------------------------------------------------------- torch.nn.GRU, both exporters

MODULES = {   # name -> (GRU arguments, whether the model takes h0)
    "bidirectional_2_layers_batch_first": (dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True,
                                                batch_first=True), True),
    "time_major_no_bias": (dict(input_size=4, hidden_size=6, bias=False), False),
}


def _module(name):
    torch = pytest.importorskip("torch")
    torch.manual_seed(7)
    kwargs, with_h0 = MODULES[name]
    return torch.nn.GRU(**kwargs).eval(), kwargs, with_h0


def _inputs(kwargs, with_h0, batch, seq, rng):
    shape = (batch, seq, kwargs["input_size"]) if kwargs.get("batch_first") else (seq, batch, kwargs["input_size"])
    arrays = [rng.standard_normal(shape).astype(np.float32)]
    if with_h0:
        layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
        arrays.append(rng.standard_normal((layers, batch, kwargs["hidden_size"])).astype(np.float32))
    return arrays


def _dynamic_seq(name, exporter) -> bool:
    """The dynamo exporter freezes a time-major GRU's sequence length into a Reshape after the
    GRU node (torch's decomposition loops over the steps to find the shapes), so that export is
    checked at its example length, 5, and batch sizes 2 and 3."""
    return exporter == "torchscript" or MODULES[name][0].get("batch_first", False)


def _export(name, exporter, path):
    torch = pytest.importorskip("torch")
    module, kwargs, with_h0 = _module(name)
    example = [torch.from_numpy(a) for a in _inputs(kwargs, with_h0, 2, 5, np.random.default_rng(0))]
    batch_axis, seq_axis = (0, 1) if kwargs.get("batch_first") else (1, 0)
    names = ["x", "h0"][:len(example)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            dynamic = {"x": {batch_axis: "batch", seq_axis: "seq"}, "y": {batch_axis: "batch", seq_axis: "seq"},
                       "h_n": {1: "batch"}}
            if with_h0:
                dynamic["h0"] = {1: "batch"}
            torch.onnx.export(module, tuple(example), str(path), dynamo=False, opset_version=17, input_names=names,
                              output_names=["y", "h_n"], dynamic_axes=dynamic)
        else:
            batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=64)
            dims = {batch_axis: batch} | ({seq_axis: seq} if _dynamic_seq(name, exporter) else {})
            shapes = {"input": dims} | ({"hx": {1: batch}} if with_h0 else {})
            program = torch.onnx.export(module, tuple(example), dynamo=True, input_names=names,
                                        output_names=["y", "h_n"], dynamic_shapes=shapes, verbose=False)
            program.save(str(path), external_data=False)
    return module, kwargs, with_h0


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gru_exports")
    found = {}

    def get(name, exporter):
        if (name, exporter) not in found:
            path = folder / f"{name}-{exporter}.onnx"
            found[name, exporter] = (path,) + _export(name, exporter, path)
        return found[name, exporter]
    return get


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("name", list(MODULES))
def test_torch_gru_export_loads_and_matches_torch_and_onnxruntime(exports, name, exporter):
    torch = pytest.importorskip("torch")
    path, module, kwargs, with_h0 = exports(name, exporter)
    graph = polyeng.onnx.load(str(path))
    assert any(n.op == "gru" for n in graph.nodes), [n.op for n in graph.nodes]
    runtime = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for batch, seq in ((2, 5), (3, 7 if _dynamic_seq(name, exporter) else 5)):
        arrays = _inputs(kwargs, with_h0, batch, seq, rng)
        with torch.no_grad():
            want = [t.numpy() for t in module(*[torch.from_numpy(a) for a in arrays])]
        feed = dict(zip([i.name for i in runtime.get_inputs()], arrays))
        from_runtime = runtime.run(None, feed)
        for engine in ENGINES:
            with polyeng.compute_eng(engine, fallback=False):
                got = graph(*arrays)
            for g, w, r in zip(got, want, from_runtime):
                where = f"{name} ({exporter}) on {engine} at batch {batch}, seq {seq}"
                assert g.shape == w.shape, where
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=where)
                np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=where)
