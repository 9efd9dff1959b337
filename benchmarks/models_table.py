"""The model table of docs/performance.md from two runs of ``polyeng bench --models --json``.

    python benchmarks/models_table.py FIRST.json SECOND.json

One row per file and input: each runner's median in ms from the first run, and in brackets its
ratio against onnxruntime in both runs (first/second); then the largest difference from
onnxruntime of polyeng f32 and of the bf16 AMP graph (first run). Below the table, the geometric
mean of each runner's ratios, first/second. Rows are those of the first run, in its order.
"""
from __future__ import annotations

import argparse
import json
import math

RUNNERS = [("polyeng", "polyeng f32"), ("polyeng numba", "numba pinned"), ("polyeng onednn", "onednn pinned"),
           ("polyeng fpm:bf16", "bf16 hint"), ("polyeng bf16", "bf16 AMP"), ("onnxruntime", "onnxruntime"),
           ("openvino", "OpenVINO f32"), ("torch", "PyTorch eager")]


def rows(path: str) -> dict:
    """(file, first input's shape) -> that result's runners, in the file's order."""
    with open(path) as f:
        found = json.load(f)
    return {(r["file"], tuple(next(iter(r["inputs"].values()), ()))): r["runners"] for r in found["results"]}


def _cell(first: dict, second: dict | None, name: str) -> str:
    a = first.get(name) or {}
    if not a.get("ok", "median_s" in a):
        return "-"
    b = (second or {}).get(name) or {}
    ms = f"{a['median_s'] * 1e3:.2f}"
    if name == "onnxruntime":
        return ms
    return f"{ms} ({a.get('ort_ratio', 0):.2f}/{b.get('ort_ratio', 0) or 0:.2f})"


def _diff(runner: dict) -> str:
    value = (runner or {}).get("max_rel_diff")
    return "-" if value is None else f"{value:.1e}"


def geometric_means(table: dict) -> dict:
    means = {}
    for name, _ in RUNNERS:
        ratios = [r[name]["ort_ratio"] for r in table.values() if (r.get(name) or {}).get("ort_ratio")]
        if ratios and name != "onnxruntime":
            means[name] = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    return means


def table(first: dict, second: dict) -> str:
    head = ["file", "input"] + [label for _, label in RUNNERS] + ["largest diff (f32 / bf16)"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for key, runners in first.items():
        other = second.get(key)
        cells = [key[0].removesuffix(".onnx"), str(key[1]).replace(",)", ")")]
        cells += [_cell(runners, other, name) for name, _ in RUNNERS]
        cells.append(f"{_diff(runners.get('polyeng'))} / {_diff(runners.get('polyeng bf16'))}")
        lines.append("| " + " | ".join(cells) + " |")
    a, b = geometric_means(first), geometric_means(second)
    means = ", ".join(f"{label} {a[name]:.2f}x/{b.get(name, 0):.2f}x" for name, label in RUNNERS if name in a)
    return "\n".join(lines) + f"\n\nGeometric means of onnxruntime / runner, first/second run: {means}.\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args(argv)
    print(table(rows(args.first), rows(args.second)), end="")


if __name__ == "__main__":
    main()
