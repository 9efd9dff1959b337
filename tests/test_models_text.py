"""Text models of Hugging Face ``transformers`` (BERT, DistilBERT, GPT-2, the T5 encoder, ViT) and a
GRU classifier (``polyeng.models.text_zoo``), exported with both of PyTorch's exporters: each
loads, matches onnxruntime within 1e-4 of its output's largest magnitude on every engine and
under the default selection at two (batch, sequence) sizes, with an attention mask that pads,
stays within 1% after ``to_mixed_precision`` to bf16, and runs with ``polyeng run --compare``
given its inputs by name. Exports are cached between runs (``model_exports.py``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import polyeng
import polyeng.amp
import polyeng.onnx

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")   # the dynamo exporter's
ort = pytest.importorskip("onnxruntime")

from model_exports import EXPORTERS, exported  # noqa: E402
from support import (assert_programs_between_bf16_work, computes_bf16, onednn_computes_bf16,  # noqa: E402
                     programs_taken)
from polyeng.models import text_zoo  # noqa: E402

CASES = [(name, exporter) for name in text_zoo.NAMES for exporter in EXPORTERS]
IDS = [f"{n}-{e}" for n, e in CASES]
ENGINES = ["basic", "numba", "opencl", None]   # None: the default selection
SIZES = ((2, 16), (3, 7))                       # (batch, sequence)
_loaded: dict = {}


def model(name: str, exporter: str):
    """(path, graph, {(batch, seq): (inputs by name, onnxruntime's output)}) of one export, made once
    per process."""
    key = (name, exporter)
    if key not in _loaded:
        path = exported(text_zoo, name, exporter)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        runs = {}
        for batch, seq in SIZES:
            feed = text_zoo.example_inputs(name, batch, seq)
            runs[batch, seq] = (feed, session.run(None, feed)[0])
        _loaded[key] = (path, polyeng.onnx.load(path), runs)
    return _loaded[key]


def relative_error(got, want) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


def test_the_text_masks_pad():
    mask = text_zoo.example_inputs("bert", 2, 16)["attention_mask"]
    assert mask[0].all() and not mask[1].all() and mask[1, 0]


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_inputs_and_outputs_keep_their_names(name, exporter):
    _, graph, _ = model(name, exporter)
    assert graph.input_names == text_zoo.inputs_of(name)
    assert graph.output_names == ["logits" if name == "gru" else "last_hidden_state"]


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e or "default")
def test_matches_onnxruntime(name, exporter, engine):
    _, graph, runs = model(name, exporter)
    for (batch, seq), (feed, want) in runs.items():
        if engine is None:
            got = graph(**feed)
        else:
            with polyeng.compute_eng(engine, fallback=False):
                got = graph(**feed)
        assert got.shape == want.shape and got.shape[0] == batch and got.dtype == np.float32
        assert relative_error(got, want) <= 1e-4, f"{name} ({exporter}) on {engine or 'default'} at {batch}x{seq}"


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_positional_inputs_give_the_same_result(name, exporter):
    _, graph, runs = model(name, exporter)
    feed, _ = runs[SIZES[0]]
    graph(**feed)   # planned: a first run goes node by node, later ones may hold oneDNN programs
    np.testing.assert_array_equal(graph(*feed.values()), graph(**feed))


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_bf16_mixed_precision_stays_within_one_percent(name, exporter):
    _, graph, runs = model(name, exporter)
    converted = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="error")
    for size, (feed, want) in runs.items():
        for run in ("first", "planned"):   # node by node, then in oneDNN programs where they hold it
            error = relative_error(converted(**feed), want)
            assert error <= 0.01, f"{name} ({exporter}) at {size}, {run} run: {error:.4f}"


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_polyeng_run_compare_with_inputs_by_name(name, exporter, tmp_path):
    from polyeng.cli import main
    path, _, runs = model(name, exporter)
    feed, _ = runs[SIZES[1]]
    arguments = ["run", str(path), "--compare", "--repeat", "1", "--json", str(tmp_path / "run.json")]
    for input_name, array in feed.items():
        np.save(tmp_path / f"{input_name}.npy", array)
        arguments += ["--input", f"{input_name}={tmp_path / f'{input_name}.npy'}"]
    assert main(arguments) == 0
    report = json.loads((tmp_path / "run.json").read_text())
    diffs = report["compare"]["max_abs_diff"]
    assert report["compare"]["runtime"].startswith("onnxruntime") and max(diffs.values()) < 1e-3, report["compare"]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_bert_runs_few_host_nodes_per_call(exporter):
    """The mask building and shape arithmetic of BERT's exports run as a few host programs and
    reshapes (the torchscript export ran 119 host nodes per call before they were fused)."""
    _, graph, _ = model("bert", exporter)
    host = [n for n in graph.nodes if n.op.startswith("onnx.")]
    assert len(host) <= 20, sorted(n.op for n in host)
    assert sum(n.op == "onnx.program" for n in host) >= 1


ONE_PROGRAM = [(n, e) for n, e in CASES if n in ("bert", "distilbert", "gpt2", "hf_vit")]


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available, reason="onednn is unavailable")
@pytest.mark.parametrize("name, exporter", ONE_PROGRAM, ids=[f"{n}-{e}" for n, e in ONE_PROGRAM])
@pytest.mark.parametrize("mixed", [False, True], ids=["f32", "bf16-amp"])
def test_an_encoder_runs_as_one_onednn_program_after_its_embeddings(name, exporter, mixed, scalar_casts_held):
    """Every node from the first attention on, host views and shape arithmetic included, in one
    program (``polyeng/graph/segments.py``); in the bf16 graph, its casts too (held whatever their
    size here; ``segment.SCALAR_CAST``). Where oneDNN computes no bf16, the bf16 graph's products
    and activations run as nodes between programs."""
    _, graph, runs = model(name, exporter)
    if mixed:
        graph = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="error")
    feed, want = runs[SIZES[0]]
    graph(**feed)   # plans the nodes and builds the program
    program = graph._compiled()
    split = mixed and not onednn_computes_bf16()   # the bf16 products and activations run as nodes
    if split:
        assert_programs_between_bf16_work(program)
    else:
        assert len(program.segment_spans) == 1 and program.segment_spans[0][1] == len(program.steps)
    before = {step.node.op for step in program.steps[:program.segment_spans[0][0]]
              if not (split and computes_bf16(step))}
    assert before <= {"onnx.program", "embedding", "add", "layer_norm", "cast"}, before
    with programs_taken() as taken:
        error = relative_error(graph(**feed).astype(np.float32), want)
    assert taken and all(taken)
    assert error <= (1e-2 if mixed else 1e-4)
