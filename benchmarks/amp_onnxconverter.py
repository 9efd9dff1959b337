"""What onnxconverter-common's automatic mixed precision costs and yields on a transformer encoder layer.

The model is ``polyeng.model_zoo.encoder_layer`` (BERT-base sized by default) exported from its
PyTorch twin to ONNX. ``auto_convert_mixed_precision`` searches for the nodes to keep in float32 by
converting the model to float16 with a block list, building an onnxruntime session and comparing
the outputs, again and again: the cost of that search is the number of sessions it builds. It runs
on two forms of the model: ``exported`` as torch wrote it, and ``folded`` after onnxruntime's basic
optimizations, which fold away the Shape -> Cast -> Sqrt chain computing the attention scale (the
converter retypes a Cast-to-float32's output as float16 without changing the Cast, and onnxruntime
then refuses the model).

Columns: sessions (onnxruntime.InferenceSession constructions), attempts (block lists tried),
blocked_nodes (nodes the last conversion kept in float32), the float16 / float32 / other (integer)
node counts and Cast nodes of the result, clamped_values (distinct float32 constants the
conversion clamped to float16's range) and the result's largest difference from the float32 model
under onnxruntime. Another automatic mixed precision (polyeng's) can be measured on the same
model and feed by a function returning the same keys as ``onnxconverter_side``.

    python benchmarks/amp_onnxconverter.py                      # rtol 1e-3 and 1e-2, atol 1e-3
    python benchmarks/amp_onnxconverter.py --json amp.json --models folded --atol 1e-4
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import warnings

import numpy as np

from polyeng import model_zoo


def export_encoder(hidden, heads, ffn, batch, seq, seed=0):
    """The encoder layer as an ``onnx.ModelProto`` (opset 17, TorchScript exporter) and a feed for it."""
    import onnx
    import torch

    fn = model_zoo.encoder_layer(hidden=hidden, heads=heads, ffn=ffn, seed=seed)

    class Wrapped(torch.nn.Module):
        # The TorchScript exporter traces forward's defaulted arguments too, and a traced
        # is_causal=False reaches scaled_dot_product_attention as a tensor; x alone avoids it.
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return self.layer(x)

    x = np.random.default_rng(seed + 1).standard_normal((batch, seq, hidden)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "encoder_layer.onnx")
        with warnings.catch_warnings():   # the TorchScript exporter announces its deprecation
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(Wrapped(model_zoo.to_torch_encoder_layer(fn)).eval(), (torch.from_numpy(x),), path,
                              dynamo=False, opset_version=17, input_names=["x"], output_names=["y"])
        model = onnx.load(path)
    return model, {"x": x}


def fold_constants(model):
    """``model`` after onnxruntime's basic graph optimizations (constant folding, which removes the
    Shape -> Cast -> Sqrt chain the exporter writes for the attention scale, and simple fusions)."""
    import onnx
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    with tempfile.TemporaryDirectory() as tmp:
        options.optimized_model_filepath = os.path.join(tmp, "folded.onnx")
        onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(options.optimized_model_filepath)


def run_ort(model, feed):
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def node_dtypes(model) -> collections.Counter:
    """Nodes other than Cast by the type of their outputs: float16, float32 or other (shapes, ints)."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)}
    types.update({t.name: t.data_type for t in inferred.graph.initializer})
    counts = collections.Counter()
    for node in inferred.graph.node:
        if node.op_type == "Cast":
            counts["Cast"] += 1
            continue
        out_types = {types.get(name) for name in node.output}
        if node.op_type == "Constant":
            out_types = {a.t.data_type for a in node.attribute if a.name == "value"}
        if onnx.TensorProto.FLOAT16 in out_types:
            counts["float16"] += 1
        elif onnx.TensorProto.FLOAT in out_types:
            counts["float32"] += 1
        else:
            counts["other"] += 1
    return counts


@contextlib.contextmanager
def _counting(module, name, record):
    """Replace ``module.name`` by a wrapper that appends each call's keyword arguments to ``record``."""
    original = getattr(module, name)

    if isinstance(original, type):
        class Counted(original):
            def __init__(self, *args, **kwargs):
                record.append(kwargs)
                super().__init__(*args, **kwargs)
        replacement = Counted
    else:
        def replacement(*args, **kwargs):
            record.append(kwargs)
            return original(*args, **kwargs)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


def onnxconverter_side(model, feed, rtol, atol) -> dict:
    """Run ``auto_convert_mixed_precision`` once and describe its cost and its result."""
    import onnxruntime
    from onnxconverter_common import auto_mixed_precision, float16

    sessions, conversions = [], []
    log = io.StringIO()
    start = time.perf_counter()
    error = None
    result = None
    with _counting(onnxruntime, "InferenceSession", sessions), _counting(float16, "convert_float_to_float16",
                                                                          conversions):
        with contextlib.redirect_stdout(log), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = auto_mixed_precision.auto_convert_mixed_precision(model, feed, rtol=rtol, atol=atol,
                                                                           keep_io_types=True)
            except Exception as exc:    # ValueError: nothing passed validation; others: the tool broke
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    seconds = time.perf_counter() - start
    blocked = list(conversions[-1].get("node_block_list") or []) if conversions else []
    row = {"side": "onnxconverter-common", "rtol": rtol, "atol": atol, "ok": result is not None, "error": error,
           "seconds": seconds, "sessions": len(sessions), "conversions": len(conversions),
           "attempts": log.getvalue().count("Running attempt"),
           "blocked_nodes": len(blocked), "blocked": blocked,
           "clamped_values": len({str(w.message) for w in caught if "will be truncated" in str(w.message)})}
    if result is not None:
        counts = node_dtypes(result)
        want, got = run_ort(model, feed), run_ort(result, feed)
        diff = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want))
        row.update(float16=counts["float16"], float32=counts["float32"], other=counts["other"],
                   casts=counts["Cast"], max_abs_diff=diff, within=all(
                       np.allclose(g, w, rtol=rtol, atol=atol) for g, w in zip(got, want)))
    return row


def polyeng_side(hidden, heads, ffn, x, rtol, atol, seed=0, dtype="float16") -> dict:
    """Trace the same encoder layer (same weights, same input) and run ``auto_mixed_precision`` on it."""
    import polyeng
    from polyeng.amp import auto_mixed_precision

    fn = model_zoo.encoder_layer(hidden=hidden, heads=heads, ffn=ffn, seed=seed)
    start = time.perf_counter()
    graph = polyeng.graph.trace(fn, x)
    converted, report = auto_mixed_precision(graph, x, dtype=dtype, rtol=rtol, atol=atol)
    seconds = time.perf_counter() - start
    want, got = graph(x), converted(x)
    categories = collections.Counter(n.amp.category for n in converted.nodes)
    mixed = sum(1 for n in converted.nodes if n.amp.category != "cast" and n.amp.mixed)
    return {"side": f"polyeng ({polyeng.get_compute_eng()})", "rtol": rtol, "atol": atol, "ok": True, "error": None,
            "seconds": seconds, "sessions": 0, "conversions": report.attempts, "attempts": report.attempts,
            "blocked_nodes": len(report.kept), "blocked": [f"{name} ({op})" for name, op, _ in report.kept],
            "float16": mixed, "float32": len(converted.nodes) - categories["cast"] - mixed,
            "other": 0, "casts": categories["cast"], "clamped_values": 0,
            "max_abs_diff": float(np.max(np.abs(got.astype(np.float64) - want))),
            "within": bool(np.allclose(got, want, rtol=rtol, atol=atol)), "nodes_traced": len(graph.nodes)}


def _table(rows) -> str:
    cols = ["side", "model", "nodes", "rtol", "atol", "ok", "seconds", "sessions", "attempts", "blocked_nodes",
            "float16", "float32", "other", "casts", "clamped_values", "max_abs_diff"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = []
        for col in cols:
            value = row.get(col, "-")
            cells.append(f"{value:.3g}" if isinstance(value, float) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    for row in rows:
        label = f"{row['model']} rtol {row['rtol']:g}"
        kept = "kept in float32" if row["ok"] else "the last attempt kept in float32"
        lines += [f"{label}: {kept}: {', '.join(row['blocked'])}"] if row["blocked"] else []
        lines += [f"{label}: {row['error']}"] if row["error"] else []
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--ffn", type=int, default=3072)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rtol", type=float, nargs="+", default=[1e-3, 1e-2])
    parser.add_argument("--atol", type=float, default=1e-3)
    parser.add_argument("--models", nargs="+", choices=["exported", "folded"], default=["exported", "folded"],
                        help="exported: as torch wrote it; folded: after onnxruntime's constant folding")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    import onnx
    import onnxconverter_common
    import onnxruntime
    import torch

    start = time.perf_counter()
    exported, feed = export_encoder(args.hidden, args.heads, args.ffn, args.batch, args.seq)
    export_seconds = time.perf_counter() - start
    print(f"exported in {export_seconds:.2f} s", file=sys.stderr)
    models = {"exported": exported}
    fold_seconds = None
    if "folded" in args.models:
        start = time.perf_counter()
        models["folded"] = fold_constants(exported)
        fold_seconds = time.perf_counter() - start
    rows = []
    for name in args.models:
        for rtol in args.rtol:
            row = {"model": name, "nodes": len(models[name].graph.node)}
            row.update(onnxconverter_side(models[name], feed, rtol, args.atol))
            rows.append(row)
            print(f"{name} rtol {rtol:g}: {row['seconds']:.1f} s", file=sys.stderr)
    for rtol in args.rtol:
        row = {"model": "traced", "nodes": None}
        row.update(polyeng_side(args.hidden, args.heads, args.ffn, feed["x"], rtol, args.atol))
        row["nodes"] = row.pop("nodes_traced")
        rows.append(row)
        print(f"polyeng rtol {rtol:g}: {row['seconds']:.1f} s", file=sys.stderr)
    print(_table(rows))
    if args.json:
        report = {"model": {k: getattr(args, k) for k in ("hidden", "heads", "ffn", "seq", "batch")},
                  "export_seconds": export_seconds, "fold_seconds": fold_seconds,
                  "results": rows,
                  "versions": {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                               "onnxconverter_common": onnxconverter_common.__version__,
                               "torch": torch.__version__}}
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
