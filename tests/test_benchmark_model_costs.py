"""benchmarks/model_costs.py on the bundled encoder with two timed calls: every figure is there for
polyeng and onnxruntime, each from a process of its own, and the outputs agree."""
import json
import os
import sys

import pytest

pytest.importorskip("polyeng.onnx")
pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import model_costs  # noqa: E402


def test_each_runtime_s_start_and_memory_are_measured(tmp_path, capsys):
    path = tmp_path / "costs.json"
    assert model_costs.main(["--cases", "encoder_opset17", "--calls", "2", "--json", str(path)]) == 0
    rows = json.loads(path.read_text())
    assert [row["file"] for row in rows] == ["encoder_opset17.onnx"]
    row = rows[0]
    for runtime in ("polyeng", "onnxruntime"):
        figures = row[runtime]
        assert set(figures) == {"import_s", "load_s", "first_s", "second_s", "median_s", "peak_mb"}, figures
        assert all(value > 0 for value in figures.values()), (runtime, figures)
    assert row["max_rel_diff"] <= 1e-4
    assert "encoder_opset17.onnx" in capsys.readouterr().out


@pytest.mark.parametrize("ours, theirs, want", [
    ([[1.0, float("nan")]], [[1.0, 2.0]], float("inf")),   # a NaN onnxruntime does not give
    ([[1.0, 2.0]], [[[1.0], [2.0]]], float("inf")),         # another shape
    ([[1.0]], [[1.0], [2.0]], float("inf")),                # another count
    ([[float("nan"), 1.0]], [[float("nan"), 1.5]], 1 / 3),  # NaN in the same places
    ([[1.0, 2.5]], [[1.0, 2.0]], 0.25),
])
def test_the_difference_sees_nan_and_other_shapes(tmp_path, ours, theirs, want):
    import numpy as np
    np.savez(tmp_path / "a.npz", *[np.array(a) for a in ours])
    np.savez(tmp_path / "b.npz", *[np.array(b) for b in theirs])
    assert model_costs._largest_difference(str(tmp_path / "a.npz"), str(tmp_path / "b.npz")) == pytest.approx(want)


def test_the_plain_children_keep_their_conversions_where_the_caller_says(tmp_path, monkeypatch):
    # the suite's POLYENG_ONNX_CACHE_DIR reaches the children, so they leave the user's cache alone
    seen = {}

    def run(args, env=None, **kwargs):
        seen.update(env)
        raise model_costs.subprocess.TimeoutExpired(args, 1)
    monkeypatch.setattr(model_costs.subprocess, "run", run)
    monkeypatch.setenv("POLYENG_ONNX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("POLYENG_COMPUTE_ENG", "basic")   # anything else stays out
    assert "error" in model_costs._child("polyeng", "m.onnx", "in.npz", 1, "out.npz")
    assert sorted(seen) == ["HOME", "PATH", "POLYENG_ONNX_CACHE_DIR"]
    assert seen["POLYENG_ONNX_CACHE_DIR"] == str(tmp_path)
