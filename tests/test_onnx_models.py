"""The bundled ONNX models (both PyTorch exporters) on every engine, against onnxruntime and the
ONNX reference evaluator, at two sizes of their named dims, and after the bf16 AMP pass."""
from __future__ import annotations

import json
from importlib.resources import files

import numpy as np
import pytest

import polyeng
import polyeng.onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx.reference import ReferenceEvaluator  # noqa: E402

ENTRIES = json.loads(files("polyeng.models").joinpath("models.json").read_text())
FILES = [e["file"] for e in ENTRIES]
SIZES = [{"batch": 2, "seq": 7}, {"batch": 3, "seq": 11}]
# bf16 AMP: every output within this fraction of its largest magnitude (docs/onnx.md)
AMP_RELATIVE = 0.01


def _path(file):
    return str(files("polyeng.models").joinpath(file))


def _entry(file):
    return next(e for e in ENTRIES if e["file"] == file)


def _feeds(file, sizes, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in _entry(file)["inputs"]:
        shape = [sizes[d] if isinstance(d, str) else d for d in inp["shape"]]
        if inp["dtype"].startswith("int"):
            feeds[inp["name"]] = rng.integers(inp["low"], inp["high"], shape).astype(inp["dtype"])
        elif inp["dtype"] == "bool":
            mask = rng.random(shape) > 0.3
            mask[..., 0] = True
            feeds[inp["name"]] = mask
        else:
            feeds[inp["name"]] = rng.standard_normal(shape).astype(inp["dtype"])
    return feeds


_graphs, _sessions = {}, {}


def _graph(file):
    if file not in _graphs:
        _graphs[file] = polyeng.onnx.load(_path(file))
    return _graphs[file]


def _ort(file, feeds):
    if file not in _sessions:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        _sessions[file] = ort.InferenceSession(_path(file), options, providers=["CPUExecutionProvider"])
    return _sessions[file].run(None, feeds)


def _tuple(result):
    return result if isinstance(result, tuple) else (result,)


def _assert_close(got, want, atol, what):
    got = _tuple(got)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what} output {i}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, err_msg=f"{what} output {i}")


@pytest.mark.parametrize("file", FILES)
def test_basic_matches_reference_evaluator_and_onnxruntime(file):
    graph = _graph(file)
    reference = ReferenceEvaluator(_path(file))
    for sizes in SIZES:
        feeds = _feeds(file, sizes)
        with polyeng.compute_eng("basic"):
            got = graph(*feeds.values())
        _assert_close(got, reference.run(None, feeds), 2e-5, f"{file} {sizes} vs reference evaluator")
        _assert_close(got, _ort(file, feeds), 2e-5, f"{file} {sizes} vs onnxruntime")


@pytest.mark.parametrize("file", FILES)
def test_every_engine_matches_onnxruntime(file, engine):
    graph = _graph(file)
    for sizes in SIZES:
        feeds = _feeds(file, sizes, seed=1)
        with polyeng.compute_eng(engine):
            got = graph(*feeds.values())
            again = graph(*feeds.values())   # the planned run
        want = _ort(file, feeds)
        _assert_close(got, want, 2e-5, f"{file} {sizes} on {engine}")
        _assert_close(again, want, 2e-5, f"{file} {sizes} on {engine}, second run")


@pytest.mark.parametrize("file", FILES)
def test_bf16_amp_within_stated_tolerance(file):
    graph = polyeng.amp.to_mixed_precision(_graph(file), "bfloat16")
    mixed = [n for n in graph.nodes if n.amp is not None and n.amp.mixed and n.op != "cast"]
    assert any(n.op in ("linear", "matmul", "lstm") for n in mixed), "no product runs in bf16"
    feeds = _feeds(file, SIZES[1], seed=2)
    want = _ort(file, feeds)
    for run in ("first", "planned"):   # node by node, then in oneDNN programs where they hold it
        got = _tuple(graph(*feeds.values()))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            worst = float(np.max(np.abs(g.astype(np.float64) - w))) / float(np.max(np.abs(w)))
            assert worst <= AMP_RELATIVE, f"{file}, {run} run: bf16 error {worst:.3g} of the largest magnitude"
            assert worst > 0, "bf16 gave f32's result exactly: nothing was converted"


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available, reason="onednn is unavailable")
@pytest.mark.parametrize("mixed", [False, True], ids=["f32", "bf16-amp"])
@pytest.mark.parametrize("file", [f for f in FILES if f.startswith("encoder")])
def test_the_encoder_runs_as_one_onednn_program_after_its_embeddings(file, mixed, scalar_casts_held):
    """Its attention's Div and Where (select) included (``polyeng/graph/segments.py``). Where
    oneDNN computes no bf16, the bf16 graph's products, activations and its Div run as nodes
    between programs, which hold the Where and the casts (held whatever their size here;
    ``segment.SCALAR_CAST``)."""
    from support import assert_programs_between_bf16_work, computes_bf16, onednn_computes_bf16, programs_taken
    graph = _graph(file)
    if mixed:
        graph = polyeng.amp.to_mixed_precision(graph, "bfloat16")
    feeds = _feeds(file, SIZES[1], seed=3)
    graph(*feeds.values())
    program = graph._compiled()
    split = mixed and not onednn_computes_bf16()   # the bf16 products and activations run as nodes
    if split:
        assert_programs_between_bf16_work(program)
        wanted = {"select"}
    else:
        assert len(program.segment_spans) == 1 and program.segment_spans[0][1] == len(program.steps)
        wanted = {"div", "select"}
    before = {step.node.op for step in program.steps[:program.segment_spans[0][0]]
              if not (split and computes_bf16(step))}
    assert before <= {"onnx.program", "embedding", "add", "layer_norm"}, before
    ops = {program.steps[i].node.op for first, stop in program.segment_spans for i in range(first, stop)}
    assert wanted <= ops
    with programs_taken() as taken:
        got = _tuple(graph(*feeds.values()))
    assert taken and all(taken)
    want = _ort(file, feeds)
    for g, w in zip(got, want):
        worst = float(np.max(np.abs(g.astype(np.float64) - w))) / float(np.max(np.abs(w)))
        assert worst <= (AMP_RELATIVE if mixed else 1e-5), worst


@pytest.mark.parametrize("model", sorted({e["model"] for e in ENTRIES}))
def test_both_exporters_give_the_same_results(model):
    pair = [e["file"] for e in ENTRIES if e["model"] == model]
    assert len(pair) == 2
    feeds = _feeds(pair[0], SIZES[0], seed=3)
    first, second = (_tuple(_graph(f)(*feeds.values())) for f in pair)
    for a, b in zip(first, second):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5)


def test_exporter_idioms_become_single_ops():
    ops = {f: [n.op for n in _graph(f).nodes] for f in FILES}
    assert ops["encoder_opset17.onnx"].count("gelu") == 2        # Erf form and Tanh form
    assert ops["encoder_dynamo.onnx"].count("gelu") == 2         # Gelu nodes (opset 20)
    assert "erf" not in ops["encoder_opset17.onnx"] and "tanh" not in ops["encoder_opset17.onnx"]
    for f in FILES:
        assert "matmul" not in ops[f] or f.startswith("encoder"), f   # MatMul + Add is linear
    # zero states dropped, plumbing folded; negative ids count from the end as in ONNX Gather
    assert ops["lstm_lm_opset17.onnx"] == ["onnx.wrap_indices", "embedding", "lstm", "linear"]
    assert ops["lstm_lm_dynamo.onnx"].count("lstm") == 1


def test_load_from_path_bytes_and_model_proto():
    file = "unet_opset17.onnx"
    feeds = _feeds(file, SIZES[0])
    # a fresh graph's first run, as each one below (a later run may take a oneDNN program, whose
    # products round in another order)
    want = _tuple(polyeng.onnx.load(_path(file))(*feeds.values()))
    with open(_path(file), "rb") as f:
        data = f.read()
    from pathlib import Path
    for source in (Path(_path(file)), data, onnx.load_from_string(data)):
        got = _tuple(polyeng.onnx.load(source)(*feeds.values()))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_graph_inputs_keep_onnx_names_and_named_dims():
    graph = _graph("encoder_opset17.onnx")
    assert [(v.name, v.shape) for v in graph.inputs] == [("input_ids", ("batch", "seq")),
                                                         ("attention_mask", ("batch", "seq"))]
    feeds = _feeds("encoder_opset17.onnx", SIZES[0])
    with pytest.raises(ValueError, match="attention_mask.*batch"):
        graph(feeds["input_ids"], np.ones((5, 7), bool))
    with pytest.raises(ValueError, match="image.*32"):
        _graph("unet_opset17.onnx")(np.zeros((1, 3, 32, 31), np.float32))


def test_saved_and_loaded_graph_gives_the_same_results(tmp_path):
    graph = polyeng.amp.to_mixed_precision(_graph("encoder_dynamo.onnx"), "bfloat16")
    graph.save(tmp_path / "g.zip")
    loaded = polyeng.graph.load(tmp_path / "g.zip")
    for sizes in SIZES:
        feeds = _feeds("encoder_dynamo.onnx", sizes)
        np.testing.assert_array_equal(loaded(*feeds.values()), graph(*feeds.values()))


def test_every_unsupported_node_is_listed_at_once():
    model = onnx.load(_path("unet_opset17.onnx"))
    resizes = [n for n in model.graph.node if n.op_type == "Resize"]
    for node in resizes:
        for attr in node.attribute:
            if attr.name == "mode":
                attr.s = b"cubic"
    custom = onnx.helper.make_node("FancyOp", ["image"], ["fancy"], name="fancy_node", domain="example.ops")
    model.graph.node.insert(0, custom)
    with pytest.raises(ValueError) as caught:
        polyeng.onnx.load(model)
    message = str(caught.value)
    assert f"{len(resizes) + 1} nodes" in message
    assert "FancyOp 'fancy_node'" in message
    for node in resizes:
        assert f"Resize '{node.name}'" in message and "mode='cubic'" in message


def test_not_a_model_and_missing_file_are_clear(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="not an ONNX model"):
        polyeng.onnx.load(bad)
    with pytest.raises(FileNotFoundError, match="missing.onnx"):
        polyeng.onnx.load(tmp_path / "missing.onnx")
    with pytest.raises(TypeError, match="model="):
        polyeng.onnx.load(42)


def _written_out_layer_norm(opset, weight, bias, eps=1e-5):
    from onnx import TensorProto, helper, numpy_helper
    axes_in = opset >= 18
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(eps, np.float32), "eps"),
             numpy_helper.from_array(weight, "gamma"), numpy_helper.from_array(bias, "beta")]
    if axes_in:
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))

    def mean(src, dst):
        if axes_in:
            return helper.make_node("ReduceMean", [src, "axes"], [dst])
        return helper.make_node("ReduceMean", [src], [dst], axes=[-1])
    nodes = [mean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]), mean("p", "v"),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]), helper.make_node("Mul", ["n", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["y"])]
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [13, 18])
def test_written_out_layer_norm_is_one_layer_norm(opset):
    rng = np.random.default_rng(4)
    weight, bias = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    model = _written_out_layer_norm(opset, weight, bias)
    graph = polyeng.onnx.load(model)
    assert [n.op for n in graph.nodes] == ["layer_norm"]
    x = (rng.standard_normal((3, 6, 16)) * 4 + 1).astype(np.float32)
    np.testing.assert_allclose(graph(x), ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


@pytest.mark.device_tensors
@pytest.mark.parametrize("file", ["unet_opset17.onnx", "encoder_dynamo.onnx"])
def test_device_inputs_give_device_outputs(file, engine):
    graph = _graph(file)
    feeds = _feeds(file, SIZES[0], seed=5)
    got = _tuple(graph(*(polyeng.to_device(a, engine) for a in feeds.values())))
    assert all(not isinstance(g, np.ndarray) for g in got), "the outputs left the device"
    _assert_close(tuple(polyeng.to_numpy(g) for g in got), _ort(file, feeds), 2e-5, f"{file} on {engine} tensors")


NEWEST_OPSET = onnx.defs.onnx_opset_version()


@pytest.mark.parametrize("opset", [12, NEWEST_OPSET + 1])
def test_opsets_outside_13_to_the_newest_onnx_knows_are_refused_naming_the_range(opset):
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with pytest.raises(ValueError, match=f"opset {opset}; polyeng reads opsets 13 to {NEWEST_OPSET}"):
        polyeng.onnx.load(model)
