"""Rebuild the ONNX models shipped in polyeng/models/ from fixed-seed PyTorch modules.

Each model is exported twice, once by the TorchScript exporter (opset 17) and once by the
dynamo exporter (opset 18, or 20 for the encoder so Gelu can appear), because the two emit
different op idioms for the same layers and the ONNX loader must read both. Every file is then
run in onnxruntime at two sizes of each dynamic dim and compared against PyTorch.

Needs torch and onnxscript (and onnx and onnxruntime for its checks). It is not needed to run
the tests: they read the files it wrote. The modules and their seeds live in
polyeng/models/torch_zoo.py, so ``polyeng bench --models`` can run the same weights in PyTorch.
Run from the repository root:

    .venv/bin/python scripts/export_models.py [--out FOLDER]

It deletes and rewrites polyeng/models/*.onnx and polyeng/models/models.json (or those in FOLDER).
"""

import argparse
import contextlib
import json
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime
import torch
import torch._decomp.decompositions as torch_decompositions

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # this checkout's polyeng, whatever is installed
from polyeng.models.torch_zoo import MAX_POSITIONS, SEEDS, VOCAB, build  # noqa: E402

MODELS_DIR = ROOT / "polyeng" / "models"
TOLERANCE = 1e-4
SIZE_LIMIT_BYTES = 8 * 1024 * 1024


def make_inputs(name, sizes, rng):
    """Random valid inputs for one model at the given dynamic sizes (a dict of dim name -> int)."""
    if name == "lstm_lm":
        return (torch.from_numpy(rng.integers(0, VOCAB, (sizes["seq"], sizes["batch"]))),)
    if name == "encoder":
        batch, seq = sizes["batch"], sizes["seq"]
        ids = torch.from_numpy(rng.integers(0, VOCAB, (batch, seq)))
        mask = rng.random((batch, seq)) < 0.7
        mask[:, 0] = True  # never a whole row masked out
        return ids, torch.from_numpy(mask)
    return (torch.from_numpy(rng.standard_normal((sizes["batch"], 3, 32, 32)).astype(np.float32)),)


# name -> (input names, {input or output: {axis: dim name}}, output names, description); the
# modules and their seeds are polyeng.models.torch_zoo's.
SPECS = {
    "lstm_lm": (["ids"],
                {"ids": {0: "seq", 1: "batch"}, "logits": {0: "seq", 1: "batch"}}, ["logits"],
                "Embedding(1000, 64) -> one-layer time-major LSTM(64, 128) with zero initial "
                "states -> Linear(128, 1000)."),
    "encoder": (["input_ids", "attention_mask"],
                {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                 "hidden_states": {0: "batch", 1: "seq"}},
                ["hidden_states"],
                "BERT-style encoder: word + learned position embeddings, 2 layers of 4-head "
                "attention (mask True = attend) and a GELU MLP (exact in layer 1, tanh in layer 2), "
                "hidden 128; seq at most 64."),
    "unet": (["image"], {"image": {0: "batch"}, "mask": {0: "batch"}, "logits": {0: "batch"}},
             ["mask", "logits"],
             "UNet on 3x32x32 images with pointwise (Linear) channel mixing, max/avg pooling, "
             "bilinear/nearest upsampling and skip concatenation; outputs a sigmoid mask and "
             "10 class logits from an average-pooled head."),
}
CHECK_SIZES = [{"batch": 2, "seq": 7}, {"batch": 3, "seq": 11}]
EXPORT_SIZES = {"batch": 2, "seq": 5}


def export_torchscript(model, args, path, inputs, dynamic, outputs):
    torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17, input_names=inputs,
                      output_names=outputs, dynamic_axes=dynamic)


@contextlib.contextmanager
def lstm_keeps_sequence_dynamic():
    """Let torch.export trace nn.LSTM without freezing the time axis to the example length.

    torch.export turns mkldnn off, so aten.lstm's shape propagation falls back to a Python loop
    over time steps, which specializes seq. The mkldnn layer's meta kernel gives the same shapes
    symbolically. Only shapes come from it: the graph keeps aten.lstm, exported as ONNX LSTM.
    """
    original = torch_decompositions.select_one_layer_lstm_function
    torch_decompositions.select_one_layer_lstm_function = (
        lambda *args: torch_decompositions.mkldnn_one_layer_lstm)
    try:
        yield
    finally:
        torch_decompositions.select_one_layer_lstm_function = original


def export_dynamo(model, args, path, inputs, dynamic, outputs, opset):
    dims = {name: torch.export.Dim(name, min=1, max=MAX_POSITIONS if name == "seq" else 1024)
            for name in ("batch", "seq")}
    shapes = {name: {axis: dims[dim] for axis, dim in dynamic[name].items()} for name in inputs}
    with lstm_keeps_sequence_dynamic():
        program = torch.onnx.export(model, args, dynamo=True, opset_version=opset,
                                    input_names=inputs, output_names=outputs, dynamic_shapes=shapes)
    program.save(str(path), external_data=False)
    proto = onnx.load(str(path))
    strip_debug_metadata(proto.graph)
    onnx.save(proto, str(path))


def strip_debug_metadata(graph):
    """Drop the exporter's per-node debug records: they hold absolute source paths and line numbers,
    so keeping them would tie the shipped bytes to this checkout and this script's layout."""
    for item in [*graph.node, *graph.input, *graph.output, *graph.value_info, *graph.initializer]:
        del item.metadata_props[:]


def describe(path):
    """Print what the loader must handle in one file; return its declared inputs and outputs."""
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    ops = sorted({node.op_type for node in proto.graph.node})
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))

    def dims(value):
        return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]

    declared = {
        "inputs": [(v.name, onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name,
                    dims(v)) for v in proto.graph.input],
        "outputs": [(v.name, dims(v)) for v in proto.graph.output],
    }
    print(f"{path.name}: {path.stat().st_size} bytes, opset {opset}, {len(proto.graph.node)} nodes")
    print(f"  ops: {', '.join(ops)}")
    for name, dtype, shape in declared["inputs"]:
        print(f"  input  {name}: {dtype} {shape}")
    for name, shape in declared["outputs"]:
        print(f"  output {name}: {shape}")
    return opset, declared


def misnamed_dims(file, declared, dynamic):
    """An exporter can silently fix a dim it was asked to keep dynamic; that file is unusable."""
    shapes = {n: shape for n, _, shape in declared["inputs"]} | dict(declared["outputs"])
    return [f"{file}: {value} axis {axis} declared {shapes[value][axis]!r}, expected {dim!r}"
            for value, axes in dynamic.items() for axis, dim in axes.items()
            if shapes[value][axis] != dim]


def verify(path, model, name, dynamic):
    """Largest |onnxruntime - torch| over the check sizes."""
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1234)
    used = {dim for axes in dynamic.values() for dim in axes.values()}
    worst = 0.0
    for sizes in CHECK_SIZES:
        sizes = {dim: size for dim, size in sizes.items() if dim in used}
        args = make_inputs(name, sizes, rng)
        with torch.no_grad():
            expected = model(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
        got = session.run(None, feed)
        for want, have in zip(expected, got):
            assert want.shape == have.shape, (path.name, want.shape, have.shape)
            diff = float(np.max(np.abs(want.numpy() - have)))
            worst = max(worst, diff)
            print(f"  check {sizes}: output {tuple(have.shape)} max abs diff {diff:.3g}")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=MODELS_DIR,
                        help=f"folder for the .onnx files and models.json (default {MODELS_DIR})")
    out = parser.parse_args().out
    out.mkdir(exist_ok=True)
    for old in [*out.glob("*.onnx"), *out.glob("*.onnx.data"), out / "models.json"]:
        old.unlink(missing_ok=True)
    entries, failures = [], []
    for name, (inputs, dynamic, outputs, description) in SPECS.items():
        model = build(name)
        args = make_inputs(name, EXPORT_SIZES, np.random.default_rng(SEEDS[name]))
        for exporter in ("torchscript", "dynamo"):
            suffix = "opset17" if exporter == "torchscript" else "dynamo"
            path = out / f"{name}_{suffix}.onnx"
            if exporter == "torchscript":
                export_torchscript(model, args, path, inputs, dynamic, outputs)
            else:
                export_dynamo(model, args, path, inputs, dynamic, outputs, 20 if name == "encoder" else 18)
            opset, declared = describe(path)
            failures += misnamed_dims(path.name, declared, dynamic)
            worst = verify(path, model, name, dynamic)
            if not worst < TOLERANCE:
                failures.append(f"{path.name}: max abs diff {worst:.3g}")
            entries.append({
                "file": path.name, "model": name, "exporter": exporter, "opset": opset,
                "inputs": [{"name": n, "dtype": dtype, "shape": shape,
                            "low": 0 if dtype == "int64" else None,
                            "high": VOCAB if dtype == "int64" else None}
                           for n, dtype, shape in declared["inputs"]],
                "outputs": [n for n, _ in declared["outputs"]],
                "description": description,
            })
    (out / "models.json").write_text(json.dumps(entries, indent=2) + "\n")
    total = sum(p.stat().st_size for p in out.glob("*.onnx"))
    print(f"total {total} bytes in {len(entries)} files")
    assert total < SIZE_LIMIT_BYTES, f"models total {total} bytes, limit {SIZE_LIMIT_BYTES}"
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
