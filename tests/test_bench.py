"""``polyeng bench``: JSON and table, the correctness guard, the chart and its missing-matplotlib error,
output paths refused before the run."""
import io
import json
import re
import os
import sys

import numpy as np
import pytest

import polyeng
from polyeng.cli import main
from polyeng.bench import models
from polyeng.bench.progress import Progress

SMALL = ["bench", "--scale", "0.01", "--repeat", "2", "--quiet"]


class NumpyConcat:
    """A correct second engine, so ratios against BASIC exist without torch."""

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine("npconcat", available=True)
        registry.add_kernel("concat", "npconcat", self.concat)

    def concat(self, tensors, axis):
        return np.concatenate(tensors, axis=axis)


class ZeroSoftmax:
    """A fast, wrong engine: the bench must flag it instead of reporting its speed."""

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine("zerosoftmax", available=True)
        registry.add_kernel("softmax", "zerosoftmax", self.softmax)

    def softmax(self, x, axis):
        return np.zeros_like(x)


class BrokenSoftmax:
    """An engine whose kernel raises: its row says so and the others still run."""

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine("brokensoftmax", available=True)
        registry.add_kernel("softmax", "brokensoftmax", self.softmax)

    def softmax(self, x, axis):
        raise RuntimeError("kernel crashed")


def test_json_has_every_case_engine_and_median(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(SMALL + ["--cases", "concat,softmax axis=-1", "--engines", "basic", "--no-torch",
                         "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert {"date", "cpu_count", "threads", "python", "numpy", "numba", "torch", "polyeng"} <= set(report["header"])
    assert [e["case"] for e in report["results"]] == ["concat", "softmax axis=-1"]
    for entry in report["results"]:
        assert entry["dtype"] == "f32" and entry["bytes"] > 0
        assert entry["copy"]["median_s"] > 0 and len(entry["copy"]["times_s"]) == 2
        basic = entry["engines"]["basic"]
        assert basic["ok"] and basic["median_s"] > 0 and len(basic["times_s"]) == 2
        assert basic["gbps"] > 0 and basic["basic_ratio"] == 1.0
    out, err = capsys.readouterr()
    assert err == ""                                   # --quiet
    for text in ("cores:", "threads:", "numpy", "median ms", "GB/s", "% copy", "torch/eng", "basic/eng",
                 "softmax axis=-1", "(copy)"):
        assert text in out
    assert "torch not run" in out and report["engines"] == ["basic"]


def test_torch_row_and_ratios_when_torch_is_installed(tmp_path, capsys):
    pytest.importorskip("torch")
    path = tmp_path / "bench.json"
    assert main(SMALL + ["--cases", "permute", "--engines", "basic", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert report["engines"] == ["basic", "torch"]
    engines = report["results"][0]["engines"]
    assert engines["torch"]["ok"] and engines["torch"]["median_s"] > 0 and engines["basic"]["torch_ratio"] > 0
    assert "geometric mean of torch/engine, f32: basic" in capsys.readouterr().out


def test_a_wrong_result_is_marked_not_ranked(backends, tmp_path, capsys):
    backends(ZeroSoftmax())
    backends(BrokenSoftmax())
    path = tmp_path / "bench.json"
    assert main(SMALL + ["--cases", "softmax axis=1", "--engines", "basic,zerosoftmax,brokensoftmax", "--no-torch",
                         "--dtype", "f32,bf16", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert [e["dtype"] for e in report["results"]] == ["f32", "bf16"]
    for entry in report["results"]:
        wrong = entry["engines"]["zerosoftmax"]
        assert not wrong["ok"] and wrong["basic_ratio"] is None and wrong["copy_pct"] is None
        assert "brokensoftmax" not in entry["engines"] and "kernel crashed" in entry["errors"]["brokensoftmax"]
    out = capsys.readouterr().out
    assert out.count("MISMATCH vs basic") == 2 and out.count("kernel crashed") == 2 and "torch not run" in out


def test_plot_without_matplotlib_is_a_one_line_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    path = tmp_path / "bench.png"
    assert main(SMALL + ["--cases", "concat", "--engines", "basic", "--plot", str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("polyeng bench: error: --plot needs matplotlib") and "pip install" in err
    assert len(err.strip().splitlines()) == 1 and out == "" and not path.exists()   # refused before running


def test_plot_is_written(backends, tmp_path):
    pytest.importorskip("matplotlib")
    backends(NumpyConcat())
    path = tmp_path / "bench.png"
    assert main(SMALL + ["--cases", "concat", "--engines", "basic,npconcat", "--no-torch", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,message", [
    (["--cases", "conv3d"], "matches no case"),
    (["--engines", "cuda"], "not a registered engine"),
    (["--dtype", "s8"], "needs a float dtype"),
    (["--dtype", "f8"], "'f8' is not a supported dtype"),
    (["--repeat", "0"], "expected positive numbers"),
])
def test_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(SMALL + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng bench: ") and message in err and "Traceback" not in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_only():
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = Progress(stream)
        bar(3, 10, "softmax axis=1 f32")
        bar.finish("done")
    assert "\r[" in terminal.getvalue() and "3/10 softmax axis=1 f32" in terminal.getvalue()
    assert pipe.getvalue() == "done\n"
    quiet = io.StringIO()
    Progress(quiet, quiet=True).finish("done")
    assert quiet.getvalue() == ""


def test_engines_with_device_tensors_are_also_timed_on_device_inputs(tmp_path, capsys):
    if not {e.name: e for e in polyeng.engines()}["opencl"].available:
        pytest.skip("opencl is unavailable (the CI run requires it)")
    path = tmp_path / "bench.json"
    assert main(SMALL + ["--cases", "softmax axis=-1", "--engines", "basic,opencl", "--no-torch",
                         "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert report["engines"] == ["basic", "opencl", "opencl:device"]
    runs = report["results"][0]["engines"]
    assert runs["opencl"]["ok"] and runs["opencl:device"]["ok"]   # the device result checked on the host
    assert runs["opencl:device"]["median_s"] > 0 and len(runs["opencl:device"]["times_s"]) == 2
    assert "opencl:device" in capsys.readouterr().out


@pytest.mark.parametrize("option,name,message", [
    ("--json", "no/such/dir/bench.json", "does not exist"),
    ("--plot", "no/such/dir/bench.png", "does not exist"),
    ("--json", ".", "is a directory"),
    ("--plot", "bench.txt", "cannot write a .txt chart; expected a file name ending in .png, .svg or .pdf"),
])
def test_unwritable_outputs_are_refused_before_the_run(option, name, message, tmp_path, capsys):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    path = tmp_path / name
    assert main(SMALL + ["--cases", "concat", "--engines", "basic", "--no-torch", option, str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"polyeng bench: error: {option} ") and message in err and err.count("\n") == 1
    assert out == ""   # refused before running: no table


def test_a_read_only_folder_is_refused_before_the_run(monkeypatch, tmp_path, capsys):
    # as the folder's permissions would say for a user (a test run as root may write anywhere)
    monkeypatch.setattr(os, "access", lambda path, mode: not (mode & os.W_OK and str(path) == str(tmp_path)))
    assert main(SMALL + ["--cases", "concat", "--engines", "basic", "--json", str(tmp_path / "x.json")]) == 2
    out, err = capsys.readouterr()
    assert f"--json {tmp_path / 'x.json'}: not writable" in err and out == ""


def test_quick_is_a_short_run(tmp_path):
    path = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--quiet", "--cases", "concat", "--engines", "basic", "--no-torch",
                 "--json", str(path)]) == 0
    header = json.loads(path.read_text())["header"]
    assert header["scale"] == 0.1 and header["repeat"] == 3 and header["torch"] == "not run (--no-torch)"


def _report(cases, engines=("basic", "numba", "opencl", "opencl:device"), torch=False):
    """A bench report as ``run_bench`` returns it, with made-up ratios."""
    results = []
    for i, case in enumerate(cases):
        entries = {name: {"basic_ratio": 2.0 ** (j - 1 + i), "torch_ratio": 0.5 * (j + 1) if torch else None}
                   for j, name in enumerate(engines)}
        results.append({"case": case, "dtype": "f32", "engines": entries})
    header = {"dtypes": ["f32"], "scale": 1.0, "threads": 2, "repeat": 7, "date": "2026-01-02T03:04:05+00:00"}
    return {"header": header, "engines": list(engines) + (["torch"] if torch else []), "results": results}


def _drawn(report):
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from polyeng.bench.report import chart
    fig = chart(report)
    FigureCanvasAgg(fig).draw()
    return fig, fig.axes[0]


def test_chart_ratio_ticks_read_as_multiples():
    fig, ax = _drawn(_report(["concat", "softmax", "lstm"]))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert {"0.5x", "1x", "2x"} <= set(labels) and not any("10^" in t or "e" in t for t in labels)


def test_chart_gives_each_engine_one_colour_and_its_device_runner_a_shade_of_it():
    from matplotlib.colors import to_hex, to_rgb
    fig, ax = _drawn(_report(["concat", "softmax"]))
    colours = {c.get_label(): to_rgb(c.patches[0].get_facecolor()) for c in ax.containers}
    assert len({to_hex(colours[n]) for n in ("numba", "opencl", "opencl:device")}) == 3
    host, device = colours["opencl"], colours["opencl:device"]
    # the same hue, lighter: each channel moved towards white by the same fraction
    fractions = {round((d - h) / (1 - h), 3) for h, d in zip(host, device) if h < 1}
    assert len(fractions) == 1 and fractions.pop() > 0


def test_chart_legend_beside_the_bars_and_title_whole_for_a_single_case():
    fig, ax = _drawn(_report(["upsample_bilinear2d align_corners"]))
    renderer = fig.canvas.get_renderer()
    legend, title = ax.get_legend().get_window_extent(renderer), ax.title.get_window_extent(renderer)
    assert legend.x0 >= ax.get_window_extent(renderer).x1   # outside the plotting area
    assert 0 <= title.x0 and title.x1 <= fig.bbox.width and title.y1 <= fig.bbox.height
    assert 0 <= legend.x0 and legend.x1 <= fig.bbox.width


@pytest.mark.parametrize("torch,reference", [(False, "BASIC"), (True, "PyTorch")])
def test_chart_names_what_the_ratios_are_against(torch, reference):
    fig, ax = _drawn(_report(["concat"], torch=torch))
    assert f"vs {reference}" in ax.get_title()
    assert ax.get_ylabel().startswith("torch time / engine time" if torch else "basic time / engine time")
    assert ("torch (1x)" if torch else "basic (1x)") in [t.get_text() for t in ax.get_legend().get_texts()]


MODELS = ["bench", "--models", "--repeat", "1", "--quiet"]


def test_models_are_timed_on_every_runner_with_ratios_against_onnxruntime(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    pytest.importorskip("openvino")
    path = tmp_path / "models.json"
    assert main(MODELS + ["--cases", "unet_opset17", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert report["runners"] == ["polyeng", "polyeng numba", "polyeng onednn", "polyeng fpm:bf16", "polyeng bf16",
                                 "onnxruntime", "openvino", "torch"]
    assert report["header"]["repeat"] == 1 and report["header"]["threads_set"]["onnxruntime"] == "2"
    [entry] = report["results"]
    assert entry["file"] == "unet_opset17.onnx" and entry["inputs"] == {"image": [8, 3, 32, 32]}
    assert entry["errors"] == {} and set(entry["runners"]) == set(report["runners"])
    ort = entry["runners"]["onnxruntime"]["median_s"]
    for name, result in entry["runners"].items():
        # torch runs torch_zoo's module: the weights the file was exported with, so its result matches too
        assert result["ok"], (name, result["max_rel_diff"])
        # one round: TIMED timed calls after SETTLE_S of untimed ones
        assert len(result["times_s"]) == models.TIMED
        assert result["ort_ratio"] == pytest.approx(ort / result["median_s"])
    assert entry["runners"]["polyeng bf16"]["max_rel_diff"] > entry["runners"]["polyeng"]["max_rel_diff"]
    out = capsys.readouterr().out
    assert re.search(r"onnxruntime \S+, openvino \S+, torch", out)   # the versions in the header
    for text in ("ort/runner", "unet_opset17.onnx", "image[8,3,32,32]", "polyeng numba",
                 "geometric mean of onnxruntime/runner: polyeng "):
        assert text in out


def test_models_chart_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("onnxruntime")
    path = tmp_path / "models.png"
    assert main(MODELS + ["--cases", "unet_dynamo", "--no-torch", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,message", [
    (["--cases", "densenet"], "matches no model file"),
    (["--scale", "0.5"], "--scale, --engines and --dtype choose the op workload"),
    (["--repeat", "0"], "expected positive numbers"),
])
def test_models_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(MODELS + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng bench: error: ") and message in err and err.count("\n") == 1


def test_torch_loaded_by_the_bench_leaves_numba_its_omp_layer():
    """The bench imports torch with OMP_WAIT_POLICY=PASSIVE, so numba's pool may share that libgomp
    (the workqueue layer it would otherwise take wakes a worker on every launch: 8x a small op)."""
    pytest.importorskip("torch")
    import subprocess
    code = ("from polyeng.bench.runtimes import load_torch\n"
            "import sys; assert load_torch(True) is not None\n"
            "import numpy as np, polyeng, numba\n"
            "with polyeng.compute_eng('numba', fallback=False):\n"
            "    polyeng.layer_norm(np.ones((4, 8), np.float32), (8,))\n"
            "print(numba.threading_layer(), polyeng.engine.threads.policy()['pools']['numba']['wait'])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    layer, wait = done.stdout.strip().split(" ", 1)
    assert layer == "omp" and "PASSIVE" in wait, done.stdout


def test_model_rounds_time_each_runner_after_calling_it_untimed_for_a_while(monkeypatch):
    clock, calls = [0.0], []
    monkeypatch.setattr(models.time, "perf_counter", lambda: clock[0])

    def runner(name):
        def call():
            calls.append(name)
            clock[0] += 0.02   # 20 ms a call: SETTLE_S (50 ms) is 3 untimed calls
        return call
    runners = {name: runner(name) for name in ("a", "b", "c")}
    results = {name: {"times_s": []} for name in runners}
    models.block_rounds(runners, results, 2)
    per_block = 3 + models.TIMED
    assert calls == [n for n in "abcbca" for _ in range(per_block)]
    assert all(r["times_s"] == pytest.approx([0.02] * (2 * models.TIMED)) for r in results.values())
