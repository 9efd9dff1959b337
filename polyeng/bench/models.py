"""The model benchmark (``polyeng bench --models``): the bundled ONNX models end to end, against
onnxruntime and PyTorch.

Each model file (the TorchScript and the dynamo export of each model) runs at a fixed size on
every runner, warmed up and then timed round by round in blocks (``block_rounds``): polyeng with its
default selection in f32, polyeng with numba pinned, polyeng after the bf16 mixed precision pass,
onnxruntime on the same file, and, when torch is installed, the PyTorch module the file was
exported from (``polyeng.models.torch_zoo``: the same weights) in eager inference mode. Every
runner gets the same thread count. Results are checked against onnxruntime's, so a fast wrong
runner is flagged, not ranked; the ratio onnxruntime time / runner time is above 1 when the
runner is faster.
"""
from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
import time

import numpy as np

import polyeng
from .. import models
from . import BenchError
from .inputs import model_inputs
from . import measure
from .measure import TOLERANCE, interleaved_rounds, max_relative_diff
from .runtimes import (as_list, installed_version, load_graph, load_torch, onnxruntime_session, openvino_runner,
                       thread_policy_text,
                       thread_settings)

EXPORTS = ("opset17", "dynamo")
SIZES = {"lstm_lm": {"seq": 64, "batch": 8}, "encoder": {"batch": 8, "seq": 64}, "unet": {"batch": 8},
         **{name: {"batch": 8} for name in ("resnet", "mobilenetv3", "efficientnet", "squeezenet", "vit")}}
# the vision models (polyeng.models.vision_zoo) are exported here, with torch, into the
# user's cache folder: not bundled, as their weights would add megabytes to every install
VISION_EXPORTERS = ("torchscript", "dynamo")
# the text models (polyeng.models.text_zoo, which needs transformers) likewise, each at batch 1
# and 8 with a sequence of 128 and an attention mask that pads the odd rows
TEXT_MODELS = ("bert", "distilbert", "gpt2")
TEXT_SIZES = ({"batch": 1, "sequence": 128}, {"batch": 8, "sequence": 128})
REFERENCE = "onnxruntime"
RUNNERS = ("polyeng", "polyeng numba", "polyeng onednn", "polyeng fpm:bf16", "polyeng bf16", REFERENCE, "openvino",
           "torch")
# the tolerance each runner's results are held to (else f32): "polyeng fpm:bf16" is the f32 graph
# under fp_math_mode("bf16"), "polyeng bf16" the bf16 AMP graph
PRECISION = {"polyeng bf16": "bf16", "polyeng fpm:bf16": "bf16"}


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]


def model_files(cases: str | None) -> list[dict]:
    """The entries to time: both exports of every bundled model and of every vision model, or those
    whose file name contains one of the comma-separated ``cases``."""
    from ..models import vision_zoo
    wanted = [e for e in models.entries() if any(e["file"] == f"{e['model']}_{x}.onnx" for x in EXPORTS)]
    wanted += [{"file": f"{name}_{exporter}.onnx", "model": name, "exporter": exporter,
                "opset": 17 if exporter == "torchscript" else "dynamo's", "vision": True}
               for name in vision_zoo.NAMES for exporter in VISION_EXPORTERS]
    wanted += [{"file": f"{name}_{exporter}.onnx", "model": name, "exporter": exporter,
                "opset": 17 if exporter == "torchscript" else "dynamo's", "text": dims}
               for name in TEXT_MODELS for exporter in VISION_EXPORTERS for dims in TEXT_SIZES]
    if cases:
        every = wanted
        wanted = [e for e in wanted if any(s.strip() in e["file"] for s in cases.split(",") if s.strip())]
        if not wanted:
            names = ", ".join(e["file"] for e in every)
            raise BenchError(f"--cases {cases!r} matches no model file; files: {names}")
    return wanted


def file_graph_and_inputs(entry: dict):
    """(the file's path, its loaded graph, its inputs) of one entry of ``model_files``: a vision or
    text model exported into the user's cache first."""
    if entry.get("vision"):
        from ..models import vision_zoo
        path = str(vision_zoo.cached_export(entry["model"], entry["exporter"]))
    elif entry.get("text"):
        from ..models import text_zoo
        path = str(text_zoo.cached_export(entry["model"], entry["exporter"]))
    else:
        path = str(models.path(entry["file"]))
    graph = load_graph(path)
    if entry.get("text"):
        from ..models import text_zoo
        feed = text_zoo.example_inputs(entry["model"], entry["text"]["batch"], entry["text"]["sequence"])
        inputs = model_inputs(graph, {name: (array, "text_zoo") for name, array in feed.items()}, {})
    else:
        inputs = model_inputs(graph, {}, SIZES[entry["model"]])
    return path, graph, inputs


def _runners(entry: dict, threads: int, torch, torch_models: dict):
    """(name -> no-argument callable returning a list of numpy arrays, name -> error, inputs)."""
    path, graph, inputs = file_graph_and_inputs(entry)
    arrays, runners, errors = inputs.arrays, {}, {}

    def in_scope(g, engine, mode="strict"):
        def call():
            with polyeng.compute_eng(engine), polyeng.fp_math_mode(mode):
                return as_list(g(*arrays))
        return call
    runners["polyeng"] = in_scope(graph, "recommend")
    runners["polyeng numba"] = in_scope(graph, "numba")
    if {e.name: e for e in polyeng.engines()}["onednn"].available:
        runners["polyeng onednn"] = in_scope(graph, "onednn")
    else:
        errors["polyeng onednn"] = "onednn is unavailable"
    runners["polyeng fpm:bf16"] = in_scope(graph, "recommend", "bf16")
    try:
        runners["polyeng bf16"] = in_scope(polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="ignore"),
                                           "recommend")
    except Exception as exc:
        errors["polyeng bf16"] = _error_text(exc)
    session = onnxruntime_session(path, threads)
    if session is not None:
        feed = {i["name"]: a for i, a in zip(inputs.described, arrays)}
        runners[REFERENCE] = lambda: session.run(None, feed)
    try:
        openvino = openvino_runner(path, threads, [i["name"] for i in inputs.described], arrays)
        if openvino is not None:
            runners["openvino"] = openvino
    except Exception as exc:
        errors["openvino"] = _error_text(exc)
    if torch is not None:
        try:
            if entry["model"] not in torch_models:
                if entry.get("vision"):
                    from ..models.vision_zoo import build
                elif entry.get("text"):
                    from ..models.text_zoo import build
                else:
                    from ..models.torch_zoo import build
                torch_models[entry["model"]] = build(entry["model"])
            module, tensors = torch_models[entry["model"]], [torch.from_numpy(a) for a in arrays]

            def eager():
                with torch.inference_mode():
                    out = module(*tensors)
                return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]
            runners["torch"] = eager
        except Exception as exc:
            errors["torch"] = _error_text(exc)
    return runners, errors, inputs


# Calls of each runner after its first, before the timed rounds (at most WARMUP_S seconds of
# them): a loaded graph plans on its first call, builds its oneDNN programs on the second and
# chooses threads on the next few (engine/thread_trials.py); onnxruntime and OpenVINO settle
# after a call or two. The rounds time each runner in its steady state, as a served model runs.
WARMUP_CALLS = 12
WARMUP_S = 2.0
# Each round times every runner in a block: the runner is called for SETTLE_S untimed, then
# TIMED more times, timed. Pools that spin after a run hold the cores for a while: onnxruntime's
# default session kept a core busy for about 40 ms after each run, and called right after it a
# CNN on polyeng took 2.9-3.5 ms instead of 1.6 ms. Waiting instead of calling did not serve:
# after 20 ms of sleep this virtual machine ran the next calls slower (the CNN 2.5 ms instead of
# 1.6, onnxruntime 1.3-1.8 instead of 1.2), and a busy wait on the calling thread made PyTorch's
# next calls 2x slower. Each runtime is so timed as it runs as the process's only one.
SETTLE_S = 0.05
TIMED = 3


def block_rounds(runners: dict, results: dict, repeat: int, after_call=None) -> None:
    """``repeat`` rounds, each calling every runner for ``SETTLE_S`` and then ``TIMED`` more times,
    appended to ``results[name]["times_s"]``, in an order rotated by one runner per round
    (``measure.interleaved_rounds``)."""
    interleaved_rounds(runners, results, repeat, after_call=after_call, settle_s=SETTLE_S, timed=TIMED)


def warm_up(call) -> None:
    """``call`` up to ``WARMUP_CALLS`` times, stopping after ``WARMUP_S`` seconds."""
    measure.warm_up(call, WARMUP_CALLS, WARMUP_S)


def measure_file(entry, repeat, threads, torch, torch_models, step=None) -> dict:
    """One file: each runner's first call (its result checked) and warm-up calls, then ``repeat``
    rounds of ``block_rounds``."""
    try:
        runners, errors, inputs = _runners(entry, threads, torch, torch_models)
    except ImportError as exc:   # a vision or text model without torch (or transformers) to export it
        return {"file": entry["file"], "model": entry["model"], "exporter": entry["exporter"],
                "opset": entry["opset"], "inputs": {}, "runners": {},
                "errors": {name: _error_text(exc) for name in RUNNERS}}
    results, outputs = {}, {}
    for name, call in list(runners.items()):
        start = time.perf_counter()
        try:
            outputs[name] = call()
        except Exception as exc:
            errors[name] = _error_text(exc)
            del runners[name]
            continue
        results[name] = {"first_s": time.perf_counter() - start, "times_s": []}
        try:   # a graph builds its oneDNN programs on its second call
            warm_up(call)
        except Exception as exc:
            errors[name] = _error_text(exc)
            del runners[name], results[name], outputs[name]
            continue
        if step:
            step()
    reference = outputs.get(REFERENCE)
    for name, entry_result in results.items():
        diff = None if reference is None else max_relative_diff(outputs[name], reference)
        entry_result["max_rel_diff"] = diff if diff is None or math.isfinite(diff) else None
        entry_result["ok"] = diff is not None and diff <= TOLERANCE[PRECISION.get(name, "f32")]
    outputs = reference = None   # free them before timing
    block_rounds(runners, results, repeat, after_call=step)
    ort = results.get(REFERENCE, {}).get("times_s")
    ort_s = statistics.median(ort) if ort else None
    for name, entry_result in results.items():
        entry_result["median_s"] = statistics.median(entry_result["times_s"])
        entry_result["ort_ratio"] = ort_s / entry_result["median_s"] if ort_s and entry_result["ok"] else None
    return {"file": entry["file"], "model": entry["model"], "exporter": entry["exporter"], "opset": entry["opset"],
            "inputs": {i["name"]: i["shape"] for i in inputs.described}, "runners": results, "errors": errors}


def run_models(files: list[dict], *, repeat: int = 7, threads: int = 2, with_torch: bool = True,
               progress=None) -> dict:
    """Every catalogue entry of ``files`` (``model_files``) timed on every runner, as a JSON-ready
    dict: ``header``, ``runners`` and one ``results`` entry per file. ``progress(done, total, label)``
    is called as work advances (units: a runner's first call with its warm-up, and each of its
    timed blocks)."""
    torch = load_torch(with_torch)
    runners = [r for r in RUNNERS if (r != "torch" or torch is not None)
               and (r != "openvino" or installed_version("openvino") != "not installed")]
    total, done = len(files) * len(runners) * (repeat + 1), 0
    results, torch_models = [], {}
    with thread_settings(threads, torch) as threads_set:
        for entry in files:
            def step(entry=entry):
                nonlocal done
                done += 1
                if progress:
                    progress(done, total, entry["file"])
            if progress:
                progress(done, total, entry["file"])
            results.append(measure_file(entry, repeat, threads, torch, torch_models, step))
        threads_set = dict(threads_set, onnxruntime=str(threads))
    header = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "cpu_count": os.cpu_count(), "threads": threads, "threads_set": threads_set,
              "python": platform.python_version(), "numpy": np.__version__, "numba": installed_version("numba"),
              "onnxruntime": installed_version("onnxruntime"), "openvino": installed_version("openvino"),
              "torch": installed_version("torch") if with_torch else "not run (--no-torch)",
              "polyeng": polyeng.__version__, "machine": platform.machine(), "repeat": repeat,
              "warmup": f"{WARMUP_CALLS} calls (at most {WARMUP_S:g} s) per runner",
              "block": f"{TIMED} timed calls after {SETTLE_S * 1e3:g} ms of untimed ones",
              "thread_policy": thread_policy_text(), "sizes": SIZES}
    return {"header": header, "runners": runners, "results": results}


def _cell(value, fmt) -> str:
    return "-" if value is None else format(value, fmt)


def table(report: dict) -> str:
    h = report["header"]
    lines = [f"polyeng bench --models  {h['date']}  median of {h['repeat']} rounds of "
             f"{h.get('block', 'one call')} after {h.get('warmup', 'one call per runner')}; threads {h['threads']} "
             f"({', '.join(f'{k} {v}' for k, v in h['threads_set'].items())}); {h['thread_policy']}",
             f"cores: {h['cpu_count']} ({h['machine']}); python {h['python']}, numpy {h['numpy']}, numba {h['numba']}, "
             f"onnxruntime {h['onnxruntime']}, openvino {h.get('openvino', '-')}, torch {h['torch']}, "
             f"polyeng {h['polyeng']}",
             "ort/runner = onnxruntime time / runner time: above 1, the runner is faster", ""]
    rows = [("file", "inputs", "runner", "median ms", "first ms", "ort/runner", "max rel diff", "note")]
    for entry in report["results"]:
        shapes = " ".join(f"{name}{shape}".replace(" ", "") for name, shape in entry["inputs"].items())
        for name in report["runners"]:
            if name in entry["errors"]:
                rows.append((entry["file"], shapes, name, "error", "-", "-", "-", entry["errors"][name]))
            elif name in entry["runners"]:
                r = entry["runners"][name]
                note = "MISMATCH vs onnxruntime" if REFERENCE in entry["runners"] and not r["ok"] else ""
                rows.append((entry["file"], shapes, name, f"{r['median_s'] * 1e3:.3f}", f"{r['first_s'] * 1e3:.1f}",
                             _cell(r["ort_ratio"], ".2f"), _cell(r["max_rel_diff"], ".1e"), note))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for i, row in enumerate(rows):
        cells = [c.rjust(w) if 3 <= j <= 6 else c.ljust(w) for j, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  ----")
    return "\n".join(lines + [""] + summary_lines(report))


def summary_lines(report: dict) -> list[str]:
    """Geometric mean of onnxruntime time / runner time per runner, over the files it ran right."""
    if REFERENCE not in report["runners"]:
        return ["onnxruntime is not installed (pip install 'polyeng[onnx]'): no ratios"]
    parts = []
    for name in report["runners"]:
        ratios = [e["runners"][name]["ort_ratio"] for e in report["results"]
                  if e["runners"].get(name, {}).get("ort_ratio")]
        if name != REFERENCE and ratios:
            mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            parts.append(f"{name} {mean:.2f}x ({len(ratios)} files)")
    return ["geometric mean of onnxruntime/runner: " + (", ".join(parts) or "no comparable file")]


def chart(report: dict):
    """A matplotlib Figure: bars of onnxruntime time / runner time per file and runner, from 1x, log scale."""
    from .report import _ENGINE_COLOURS, ratio_axis, require_matplotlib
    Figure = require_matplotlib()
    files = [e["file"] for e in report["results"]]
    series = [r for r in report["runners"] if r != REFERENCE]
    values = {(e["file"], r): e["runners"][r]["ort_ratio"] for e in report["results"] for r in series
              if e["runners"].get(r, {}).get("ort_ratio")}
    if not values:
        raise BenchError("--plot: no onnxruntime/runner ratio to draw (onnxruntime missing, or every result wrong)")
    width = 0.8 / len(series)
    fig = Figure(figsize=(max(7.5, 2 + 1.3 * len(files)), 5.0), layout="constrained")
    ax = fig.add_subplot()
    for i, name in enumerate(series):
        shown = [(j, values[(f, name)]) for j, f in enumerate(files) if (f, name) in values]
        ax.bar([j + (i - (len(series) - 1) / 2) * width for j, _ in shown], [v - 1 for _, v in shown], width,
               bottom=1.0, color=_ENGINE_COLOURS[i % len(_ENGINE_COLOURS)], label=name)
    ax.axhline(1.0, color="black", linewidth=1, label="onnxruntime (1x)")
    ratio_axis(ax, values.values())
    ax.set_xticks(range(len(files)), files, rotation=20, ha="right")
    ax.set_ylabel("onnxruntime time / runner time (above 1x: runner faster)")
    h = report["header"]
    ax.set_title(f"bundled ONNX models end to end vs onnxruntime\n{h['threads']} threads, median of {h['repeat']}, "
                 f"{h['date'][:10]}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
    return fig
