"""benchmarks/vit_lanes.py at a tiny width: every runner is timed, and each gives onnxruntime's result."""
import json
import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import vit_lanes  # noqa: E402


def test_every_runner_is_timed_and_matches_onnxruntime(tmp_path):
    path = tmp_path / "vit.json"
    vit_lanes.main(["--width", "24", "--heads", "2", "--depth", "1", "--repeat", "1", "--calls", "2",
                    "--json", str(path)])
    report = json.loads(path.read_text())
    assert list(report["median_ms"]) == ["polyeng", "polyeng, rewrite off", "onnxruntime"]
    assert all(ms > 0 for ms in report["median_ms"].values())
    assert report["ort_over_runner"]["onnxruntime"] == 1.0
    assert all(diff < 1e-4 for diff in report["max_abs_diff"].values()), report["max_abs_diff"]
