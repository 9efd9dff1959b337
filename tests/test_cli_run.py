"""``polyeng run MODEL.onnx``: a bundled model run, compared and written as JSON; inputs from .npy
files and dims set on the command line; random inputs that respect an embedding's rows; and every
mistake a user can make as one error line with exit status 2, never a traceback."""
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from polyeng import models
from polyeng.cli import main

pytest.importorskip("onnx")
ENCODER = str(models.path("encoder_opset17.onnx"))
LSTM = str(models.path("lstm_lm_opset17.onnx"))
UNET = str(models.path("unet_opset17.onnx"))


def run_json(tmp_path, *argv) -> dict:
    path = tmp_path / "run.json"
    assert main(["run", *argv, "--repeat", "2", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def test_a_bundled_model_runs_compares_and_writes_json(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    report = run_json(tmp_path, ENCODER, "--compare", "--dim", "batch=3", "--dim", "seq=16")
    assert report["dims"] == {"batch": 3, "seq": 16}
    assert [(i["name"], i["shape"]) for i in report["inputs"]] == [("input_ids", [3, 16]), ("attention_mask", [3, 16])]
    [out] = report["outputs"]
    assert out["name"] == "hidden_states" and out["shape"] == [3, 16, 128] and out["dtype"] == "float32"
    assert out["min"] < out["mean"] < out["max"]
    assert report["compare"]["runtime"].startswith("onnxruntime ")
    assert 0 <= report["compare"]["max_abs_diff"]["hidden_states"] < 1e-4
    assert len(report["time"]["times_s"]) == 2 and report["time"]["median_s"] > 0
    assert len(report["decisions"]) == report["graph"]["nodes"]
    assert sum(report["engines_by_op"]["linear"].values()) == 12
    printed = capsys.readouterr().out
    for text in ("hidden_states", "float32[3, 16, 128]", "linear", "on the host (numpy)", "time: median",
                 "compare with onnxruntime", "max |diff|"):
        assert text in printed


def test_inputs_from_npy_files_are_used_as_given(tmp_path):
    rng = np.random.default_rng(5)
    ids, mask = rng.integers(0, 1000, (2, 5)), np.ones((2, 5), bool)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "mask.npy", mask)
    report = run_json(tmp_path, ENCODER, "--input", f"input_ids={tmp_path / 'ids.npy'}",
                      "--input", f"attention_mask={tmp_path / 'mask.npy'}")
    assert [i["source"] for i in report["inputs"]] == [f"from {tmp_path / 'ids.npy'}", f"from {tmp_path / 'mask.npy'}"]
    import polyeng.onnx
    expected = polyeng.onnx.load(ENCODER)(ids, mask)
    assert report["outputs"][0]["shape"] == [2, 5, 128]
    assert report["outputs"][0]["max"] == pytest.approx(float(expected.max()), rel=1e-5)


def test_one_input_from_a_file_fixes_its_dims_for_the_random_ones(tmp_path):
    np.save(tmp_path / "ids.npy", np.zeros((3, 7), np.int64))
    report = run_json(tmp_path, ENCODER, "--input", f"input_ids={tmp_path / 'ids.npy'}")
    assert report["inputs"][1]["shape"] == [3, 7] and report["dims"] == {"batch": 3, "seq": 7}


def test_dim_sets_a_named_dim_and_the_others_take_8(tmp_path):
    report = run_json(tmp_path, LSTM, "--dim", "seq=5")   # ids are (seq, batch)
    assert report["inputs"][0]["shape"] == [5, 8] and report["outputs"][0]["shape"] == [5, 8, 1000]


def test_random_ids_stay_within_the_embedding_and_masks_keep_a_true_place():
    import polyeng.onnx
    from polyeng.bench.inputs import model_inputs
    graph = polyeng.onnx.load(ENCODER)
    ids, mask = model_inputs(graph, {}, {"batch": 64, "seq": 32}).arrays
    assert ids.dtype == np.int64 and 10 <= ids.max() < 1000 and ids.min() >= 0   # the rows, not [0, 10)
    assert mask.dtype == np.bool_ and mask[:, 0].all() and not mask.all()


def test_amp_bf16_and_engine_are_applied(tmp_path):
    pytest.importorskip("onnxruntime")
    report = run_json(tmp_path, UNET, "--amp", "bf16", "--engine", "basic", "--compare")
    amp = report["amp"]
    assert amp["mode"] == "bf16" and amp["dtype"] == "bfloat16" and 0 < amp["mixed"] <= amp["nodes"]
    assert amp["casts"] > 0
    assert {d["engine"] for d in report["decisions"]} <= {"basic", "host"}
    assert "bf16" in {d["compute"] for d in report["decisions"]}
    assert all(0 < d < 5e-2 for d in report["compare"]["max_abs_diff"].values())


def test_amp_auto_reports_its_search(tmp_path, capsys):
    report = run_json(tmp_path, UNET, "--amp", "auto")
    assert report["amp"]["mode"] == "auto" and report["amp"]["attempts"] >= 1 and "kept" in report["amp"]
    assert "auto_mixed_precision" in capsys.readouterr().out


def test_compare_falls_back_to_the_reference_evaluator(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    report = run_json(tmp_path, UNET, "--compare", "--dim", "batch=1")
    assert "reference evaluator" in report["compare"]["runtime"]
    assert all(d < 1e-4 for d in report["compare"]["max_abs_diff"].values())


def _unsupported_model(path):
    import onnx
    from onnx import helper
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, "h", "w"])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    w = onnx.numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", auto_pad="SAME_UPPER"),   # needs fixed sizes
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Hardmax", ["r"], ["y"], name="hardmax1")]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "text.onnx").write_text("not a model")
    np.save(tmp_path / "ids32.npy", np.zeros((2, 5), np.int32))
    np.save(tmp_path / "ids3d.npy", np.zeros((2, 5, 1), np.int64))
    np.save(tmp_path / "ids.npy", np.zeros((2, 5), np.int64))
    np.save(tmp_path / "mask6.npy", np.ones((2, 6), bool))
    return tmp_path


@pytest.mark.parametrize("argv,message", [
    (["{tmp}/missing.onnx"], "missing.onnx: no such file"),
    (["{tmp}/text.onnx"], "text.onnx: not an ONNX model"),
    ([ENCODER, "--input", "ids={tmp}/ids.npy"], "the model has no input named 'ids'; its inputs: input_ids, "
                                                 "attention_mask"),
    ([ENCODER, "--input", "input_ids={tmp}/nothing.npy"], "--input input_ids={tmp}/nothing.npy: no such file"),
    ([ENCODER, "--input", "input_ids={tmp}/text.onnx"], "not a .npy file"),
    ([ENCODER, "--input", "input_ids={tmp}/ids32.npy"], "input input_ids has dtype int32; the model takes int64"),
    ([ENCODER, "--input", "input_ids={tmp}/ids3d.npy"], "input input_ids has shape [2, 5, 1]; the model takes "
                                                        "[batch, seq]"),
    ([ENCODER, "--input", "input_ids={tmp}/ids.npy", "--input", "attention_mask={tmp}/mask6.npy"],
     "input attention_mask has seq=6, but input input_ids has seq=5"),
    ([ENCODER, "--input", "input_ids"], "expected NAME=FILE.npy"),
    ([ENCODER, "--dim", "length=4"], "no dim named 'length'; named dims: batch, seq"),
    ([ENCODER, "--dim", "seq=0"], "expected NAME=N with N a positive integer"),
    ([ENCODER, "--input", "input_ids={tmp}/ids.npy", "--dim", "seq=9"], "input input_ids from its file has seq=5"),
    ([ENCODER, "--dim", "seq=65"], "cannot run on these inputs (batch=8, seq=65): ids[64]=64 is out of range"),
    ([ENCODER, "--engine", "cuda"], "'cuda' is not a registered engine"),
    ([ENCODER, "--repeat", "0"], "--repeat 0: expected a positive number"),
    ([ENCODER, "--json", "{tmp}/no/such/folder/out.json"], "does not exist"),
    ([ENCODER, "--disable-fusions", "conv_relu"], "unknown fusion name(s) 'conv_relu'"),
    ([ENCODER, "--profile", "--dask", "local:1"], "--profile times the nodes in this process"),
])
def test_mistakes_are_one_line_errors_with_status_2(argv, message, files, capsys):
    argv = [a.replace("{tmp}", str(files)) for a in argv]
    assert main(["run", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("polyeng run: error: ") and message.replace("{tmp}", str(files)) in err, err
    assert err.count("\n") == 1 and "Traceback" not in err and out == ""


def test_unsupported_ops_are_listed_together_without_a_traceback(tmp_path):
    path = _unsupported_model(tmp_path / "conv.onnx")
    done = subprocess.run([sys.executable, "-m", "polyeng", "run", path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"polyeng run: error: {path}: the model has 2 nodes polyeng cannot run:"
    assert lines[1].strip().startswith("Conv 'conv1': ") and lines[2].strip().startswith("Hardmax 'hardmax1': ")


def test_without_onnx_the_error_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setenv("POLYENG_ONNX_CACHE", "0")   # a model converted before loads without onnx
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert main(["run", UNET]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng run: error: ") and "pip install 'polyeng[onnx]'" in err
    assert err.count("\n") == 1 and "Traceback" not in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("long_run_s,drawn", [(0.0, True), (3600.0, False)])
def test_a_progress_bar_on_a_terminal_only_when_the_runs_are_long(monkeypatch, long_run_s, drawn):
    from polyeng.cli import run as run_module
    from polyeng.bench.progress import Progress
    monkeypatch.setattr(run_module, "LONG_RUN_S", long_run_s)
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        timing = run_module.time_runs(lambda: 7, 3, Progress(stream), "model.onnx")
        assert timing["result"] == 7 and len(timing["times_s"]) == 3
    assert pipe.getvalue() == ""
    assert ("2/3 model.onnx" in terminal.getvalue()) is drawn
    assert terminal.getvalue().endswith("\r\x1b[K") is drawn   # the bar is cleared before the results


def test_profile_prints_the_time_per_op_type_and_the_slowest_nodes(tmp_path, capsys):
    # on BASIC: every node on its own (under default selection oneDNN programs hold runs of them)
    report = run_json(tmp_path, ENCODER, "--profile", "--dim", "batch=2", "--dim", "seq=8", "--engine", "basic")
    found = report["profile"]
    assert len(found["nodes"]) == report["graph"]["nodes"]
    assert all(n["ms"] >= 0 and n["engine"] for n in found["nodes"])
    ops = {o["op"]: o for o in found["ops"]}
    assert ops["linear"]["count"] == 12
    assert abs(sum(o["share"] for o in found["ops"]) - 1) < 1e-9
    assert [o["ms"] for o in found["ops"]] == sorted((o["ms"] for o in found["ops"]), reverse=True)
    assert found["run_ms"] > 0 and found["outside_ms"] >= 0
    printed = capsys.readouterr().out
    for text in ("profile: median run", "per op type:", "slowest 15 of", "linear"):
        assert text in printed


def test_disable_fusions_loads_the_model_without_them(tmp_path):
    fused = run_json(tmp_path, ENCODER, "--dim", "batch=2", "--dim", "seq=8")
    plain = run_json(tmp_path, ENCODER, "--dim", "batch=2", "--dim", "seq=8", "--disable-fusions", "all")
    assert plain["graph"]["nodes"] > fused["graph"]["nodes"]   # linear and gelu written out again
