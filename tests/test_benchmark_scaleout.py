"""benchmarks/scaleout.py at a tiny size on one local worker: every figure it reports is there,
and the cluster's result equals the eager one."""
import json
import os
import sys

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")
pytest.importorskip("polyeng.onnx")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import scaleout  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("scaleout") / "scaleout.json"
    assert scaleout.main(["--batch", "16", "--seq", "16", "--chunk", "8", "--workers", "1", "--repeat", "1",
                          "--growth-batches", "16", "--growth-chunks", "8", "16", "--json", str(path)]) == 0
    with open(path) as f:
        return json.load(f)


def test_every_configuration_is_timed_and_equals_eager(report):
    assert list(report["throughput"]) == ["eager", "eager, 1 thread", "eager, 1 thread, chunked", "1 worker"]
    for name, row in report["throughput"].items():
        assert row["seconds"] > 0 and row["samples_per_s"] == pytest.approx(16 / row["seconds"]), name
        assert len(row["runs_s"]) == 1
        assert row["max_abs_diff"] == 0, name
    assert report["threads"]["eager, 1 thread"]["openblas"] in (1, None)


def test_the_scatter_and_a_compute_are_measured(report):
    graph_bytes = report["graph_pickle_bytes"]
    assert graph_bytes > 2_000_000   # the encoder's constants
    moved = report["transfer"]["1 worker"]
    assert abs(moved["scatter"]["workers_read"] - graph_bytes) < graph_bytes * 0.05   # pickled by distributed
    assert moved["scatter"]["to_workers"] == 0
    compute = moved["compute"]
    assert compute["result"] == 16 * 16 * 128 * 4
    assert compute["to_client"] >= compute["result"]
    assert 0 < compute["update_graph"] < graph_bytes / 10   # the graph goes by the scatter, not in the tasks
    assert compute["graph_sends"] == 0 and moved["tasks_run"] > 0


def test_growth_counts_one_task_per_chunk_and_input(report):
    small, whole = report["growth"]
    assert (small["chunks"], whole["chunks"]) == (2, 1)
    for row in (small, whole):
        # per chunk: two input blocks, the graph's run, its output; without a client, the graph itself
        assert row["client_tasks"] == 4 * row["chunks"] and row["tasks"] == row["client_tasks"] + 1
        assert row["no_client_bytes"] > report["graph_pickle_bytes"] > row["client_bytes"]
        assert row["scattered_bytes"] == {"1": report["graph_pickle_bytes"]}
