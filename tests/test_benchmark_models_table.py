"""benchmarks/models_table.py: the docs' model table from two ``bench --models --json`` runs."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import models_table  # noqa: E402


def _run(path, polyeng_s, ort_s, bf16_s=None):
    runners = {"polyeng": {"ok": True, "median_s": polyeng_s, "ort_ratio": ort_s / polyeng_s, "max_rel_diff": 2e-7},
               "onnxruntime": {"ok": True, "median_s": ort_s, "ort_ratio": 1.0, "max_rel_diff": 0.0}}
    if bf16_s is not None:
        runners["polyeng bf16"] = {"ok": True, "median_s": bf16_s, "ort_ratio": ort_s / bf16_s, "max_rel_diff": 4e-3}
    else:
        runners["polyeng bf16"] = {"ok": False, "error": "failed"}
    results = [{"file": "a.onnx", "inputs": {"x": [8, 3]}, "runners": runners},
               {"file": "b.onnx", "inputs": {"ids": [1, 128], "mask": [1, 128]},
                "runners": {k: dict(v) for k, v in runners.items()}}]
    path.write_text(json.dumps({"header": {}, "runners": [], "results": results}))
    return str(path)


def test_cells_ratios_of_both_runs_and_geometric_means(tmp_path, capsys):
    first = _run(tmp_path / "1.json", 0.002, 0.004, 0.008)
    second = _run(tmp_path / "2.json", 0.004, 0.004)
    models_table.main([first, second])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("| file | input | polyeng f32 |")
    row = next(line for line in lines if line.startswith("| a |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["a", "(8, 3)", "2.00 (2.00/1.00)"]
    assert cells[6] == "8.00 (0.50/0.00)"   # the second run's AMP graph failed
    assert cells[7] == "4.00" and cells[3] == "-"   # onnxruntime's time; a runner that did not run
    assert cells[-1] == "2.0e-07 / 4.0e-03"
    assert any(line.startswith("| b | (1, 128) |") for line in lines)
    assert "polyeng f32 2.00x/1.00x" in out and "bf16 AMP 0.50x/0.00x" in out
    assert math.isclose(models_table.geometric_means(models_table.rows(first))["polyeng"], 2.0)
