"""Vision models of the common architectures (``polyeng.models.vision_zoo``: a ResNet, MobileNetV3,
EfficientNet's MBConv, SqueezeNet, a ViT), exported with both of PyTorch's exporters: each loads,
matches onnxruntime within 1e-4 of its output's largest magnitude on every engine and under the
default selection at two batch sizes, stays within 1% after ``to_mixed_precision`` to bf16, and
runs with ``polyeng run --compare``. Exports are cached between runs (``model_exports.py``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import polyeng
import polyeng.amp
import polyeng.onnx

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")   # the dynamo exporter's
ort = pytest.importorskip("onnxruntime")

from model_exports import EXPORTERS, exported  # noqa: E402
from polyeng.models import vision_zoo  # noqa: E402

CASES = [(name, exporter) for name in vision_zoo.NAMES for exporter in EXPORTERS]
IDS = [f"{n}-{e}" for n, e in CASES]
ENGINES = ["basic", "numba", "opencl", None]   # None: the default selection
BATCHES = (1, 3)
_loaded: dict = {}


def model(name: str, exporter: str):
    """(path, graph, {batch: (input, onnxruntime's output)}) of one export, made once per process."""
    key = (name, exporter)
    if key not in _loaded:
        path = exported(vision_zoo, name, exporter)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        runs = {}
        for batch in BATCHES:
            x = vision_zoo.example_input(name, batch).numpy()
            runs[batch] = (x, session.run(None, {"x": x})[0])
        _loaded[key] = (path, polyeng.onnx.load(path), runs)
    return _loaded[key]


def relative_error(got, want) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e or "default")
def test_matches_onnxruntime(name, exporter, engine):
    _, graph, runs = model(name, exporter)
    for batch, (x, want) in runs.items():
        if engine is None:
            got = graph(x)
        else:
            with polyeng.compute_eng(engine, fallback=False):
                got = graph(x)
        assert got.shape == want.shape == (batch, vision_zoo.CLASSES) and got.dtype == np.float32
        assert relative_error(got, want) <= 1e-4, f"{name} ({exporter}) on {engine or 'default'} at batch {batch}"


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available, reason="onednn is unavailable")
@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_planned_runs_take_onednn_programs_and_match_onnxruntime(name, exporter, monkeypatch):
    """A second run of a signature executes the convolution nodes as oneDNN programs
    (``polyeng/graph/segments.py``); the CNNs are held by them nearly whole."""
    from polyeng.backends.onednn import lanes
    taken = []
    real = lanes.Lanes.run
    monkeypatch.setattr(lanes.Lanes, "run",
                        lambda self, arrays: (lambda out: taken.append(out is not None) or out)(real(self, arrays)))
    _, graph, runs = model(name, exporter)
    for batch, (x, want) in runs.items():
        graph(x)
        got = graph(x)
        assert relative_error(got, want) <= 1e-4, f"{name} ({exporter}) as oneDNN programs at batch {batch}"
    program = graph._compiled()
    held = sum(stop - first for first, stop in program.segment_spans)
    if name != "vit":   # the ViT's convolution is its patch embedding alone
        assert any(taken) and held >= len(program.steps) - 4, (name, program.segment_spans, len(program.steps))


def torch_bf16_error(name: str) -> float:
    """PyTorch's own bf16 autocast error on the model, relative to its f32 output's largest magnitude."""
    module, x = vision_zoo.build(name), vision_zoo.example_input(name, 3)
    with torch.no_grad():
        want = module(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = module(x).float()
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_bf16_mixed_precision_stays_within_one_percent(name, exporter):
    """Within 1% of the output's largest magnitude; MobileNetV3's random weights amplify bf16
    rounding past that (PyTorch's own autocast: 3.1%), so there the bound is PyTorch's error."""
    _, graph, runs = model(name, exporter)
    converted = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="error")
    bound = 0.01 if name != "mobilenetv3" else max(0.01, torch_bf16_error(name))
    for x, want in runs.values():
        error = relative_error(converted(x), want)
        assert error <= bound, f"{name} ({exporter}): {error:.4f} > {bound:.4f}"


@pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available, reason="onednn is unavailable")
@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_bf16_mixed_precision_as_onednn_programs_stays_within_one_percent(name, exporter, scalar_casts_held):
    """The bf16 graph's convolutions, activations and casts run as oneDNN programs on later runs
    (its casts held whatever their size, also where oneDNN converts them in its scalar code, which
    a program holds only for small values: ``segment.SCALAR_CAST``)."""
    _, graph, runs = model(name, exporter)
    converted = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="error")
    bound = 0.01 if name != "mobilenetv3" else max(0.01, torch_bf16_error(name))
    for x, want in runs.values():
        converted(x)
        error = relative_error(converted(x), want)
        assert error <= bound, f"{name} ({exporter}) as oneDNN programs: {error:.4f} > {bound:.4f}"
    if name != "vit":
        assert converted._compiled().segment_spans


@pytest.mark.parametrize("name, exporter", CASES, ids=IDS)
def test_polyeng_run_compare(name, exporter, tmp_path):
    from polyeng.cli import main
    path, _, _ = model(name, exporter)
    report_path = tmp_path / "run.json"
    assert main(["run", str(path), "--dim", "batch=2", "--compare", "--repeat", "1", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    diffs = report["compare"]["max_abs_diff"]
    assert report["compare"]["runtime"].startswith("onnxruntime") and max(diffs.values()) < 1e-3, report["compare"]
