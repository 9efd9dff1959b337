"""``polyeng run MODEL --dask local:N | tcp://HOST:PORT``: the batch split into chunks over a dask
cluster gives the outputs of a plain run (and of onnxruntime); a local cluster lives only as long
as the run, a running scheduler outlives it; ``--chunk`` sets the rows of each chunk; every bad
value, a scheduler that is not there and dask not installed are one error line with status 2."""
import contextlib
import json
import logging
import socket
import sys

import pytest

from polyeng import models
from polyeng.cli import main

pytest.importorskip("onnx")
distributed = pytest.importorskip("distributed")
# a scheduler serves its health routes on 8787, or on another port when that one is taken
pytestmark = pytest.mark.filterwarnings(r"ignore:Port \d+ is already in use:UserWarning")
ENCODER = str(models.path("encoder_opset17"))
LSTM = str(models.path("lstm_lm_opset17"))


def run_json(tmp_path, *argv) -> dict:
    path = tmp_path / "run.json"
    assert main(["run", ENCODER, *argv, "--repeat", "2", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def assert_same_outputs(got: dict, want: dict) -> None:
    assert [(o["name"], o["shape"], o["dtype"]) for o in got["outputs"]] == \
        [(o["name"], o["shape"], o["dtype"]) for o in want["outputs"]]
    for g, w in zip(got["outputs"], want["outputs"]):
        assert [g[k] for k in ("min", "max", "mean")] == pytest.approx([w[k] for k in ("min", "max", "mean")],
                                                                       rel=1e-5, abs=1e-6)


def worker_processes() -> set:
    """The processes multiprocessing spawned under this one (not its resource tracker, kept for good)."""
    import psutil
    found = set()
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):   # one that ended meanwhile
            if "spawn_main" in " ".join(process.cmdline()):
                found.add(process.pid)
    return found


@pytest.fixture(scope="module")
def scheduler():
    """One running cluster of two worker processes, as someone else would have started it."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=logging.WARNING) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict:
    return run_json(tmp_path_factory.mktemp("plain"), "--compare", "--dim", "batch=8")


def test_a_local_cluster_gives_the_plain_outputs_and_is_closed_after(tmp_path, plain, capfd):
    pytest.importorskip("onnxruntime")
    before = worker_processes()
    report = run_json(tmp_path, "--compare", "--dim", "batch=8", "--dask", "local:2")
    assert_same_outputs(report, plain)
    assert 0 <= report["compare"]["max_abs_diff"]["hidden_states"] < 1e-4
    where = report["dask"]
    assert (where["cluster"], where["workers"], where["dim"], where["batch"]) == ("local:2", 2, "batch", 8)
    assert (where["chunks"], where["chunk_rows"]) == (4, [2, 2, 2, 2])   # two chunks per worker by default
    assert len(report["time"]["times_s"]) == 2 and report["time"]["median_s"] > 0
    out, err = capfd.readouterr()
    assert "dask: local:2 (scheduler tcp://127.0.0.1:" in out and "batch=8 in 4 chunks of 2 rows" in out
    assert "each one dask.compute over 2 workers" in out and "compare with onnxruntime" in out
    assert "distributed." not in err and "Traceback" not in err   # the workers' logs stay quiet
    assert worker_processes() <= before   # its workers are gone
    with pytest.raises(ValueError):
        distributed.default_client()


def graph_tasks_done(client) -> dict:
    """Tasks of graphs on dask arrays the scheduler has finished so far, by key prefix."""
    def done(dask_scheduler):
        return {name: prefix.state_counts["memory"] for name, prefix in dask_scheduler.task_prefixes.items()
                if name.startswith("polyeng-graph")}
    return client.run_on_scheduler(done)


@pytest.mark.parametrize("chunk,rows", [(None, [2, 2, 2, 2]), ("3", [3, 3, 2]), ("100", [8])])
def test_a_running_scheduler_splits_the_batch_by_chunk_and_keeps_running(tmp_path, plain, scheduler, chunk, rows):
    with distributed.Client(scheduler, timeout=10, set_as_default=False) as client:
        before = graph_tasks_done(client)
        report = run_json(tmp_path, "--dim", "batch=8", "--dask", scheduler, *(["--chunk", chunk] if chunk else []))
        assert len(client.nthreads()) == 2   # only the run's client was closed
        after = graph_tasks_done(client)
    assert_same_outputs(report, plain)
    where = report["dask"]
    assert (where["scheduler"], where["workers"], where["chunks"], where["chunk_rows"]) == \
        (scheduler, 2, len(rows), rows)
    runs = 1 + 2   # the warm-up and --repeat 2, each one task per chunk on the cluster (dask may fuse
    # the graph's task with the one taking its output, so the layer with the most tasks is counted)
    assert max(n - before.get(name, 0) for name, n in after.items()) == runs * len(rows)


def test_an_uneven_last_chunk_is_said(tmp_path, scheduler, capsys):
    report = run_json(tmp_path, "--dim", "batch=5", "--dask", scheduler)
    assert report["dask"]["chunk_rows"] == [2, 2, 1]
    assert "batch=5 in 3 chunks of 2 rows (the last 1)" in capsys.readouterr().out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_line(argv, capsys) -> str:
    assert main(["run", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("polyeng run: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert out == ""
    return err


@pytest.mark.parametrize("spec", ["local:0", "local:x", "local:", "http://127.0.0.1:8786", "", "tcp://127.0.0.1",
                                  "tcp://127.0.0.1:0"])
def test_a_bad_spec_is_one_line_naming_it_and_the_forms(spec, capsys):
    err = error_line([ENCODER, "--dask", spec], capsys)
    assert f"--dask {spec!r} names no dask cluster; expected local:N" in err and "tcp://HOST:PORT" in err


@pytest.mark.parametrize("argv,message", [
    (["--chunk", "4"], "--chunk 4: only with --dask"),
    (["--dask", "local:1", "--chunk", "0"], "--chunk 0: expected a positive number of rows"),
])
def test_a_bad_chunk_is_one_line(argv, message, capsys):
    assert message in error_line([ENCODER, *argv], capsys)


def test_a_scheduler_that_is_not_there_is_one_line(monkeypatch, capsys):
    from polyeng.dask import cluster
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    err = error_line([ENCODER, "--dask", address], capsys)
    assert f"--dask: no dask scheduler answered at {address} within 1 s" in err


def test_a_scheduler_without_workers_is_one_line(monkeypatch, capsys):
    from polyeng.dask import cluster
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None,
                                  silence_logs=logging.WARNING) as empty:
        err = error_line([ENCODER, "--dask", empty.scheduler_address], capsys)
    assert f"--dask: the dask scheduler at {empty.scheduler_address} has no workers (none joined within 1 s)" in err


def test_without_distributed_the_error_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert "pip install 'polyeng[dask]'" in error_line([ENCODER, "--dask", "local:2"], capsys)


def test_a_time_major_model_is_split_along_its_batch(tmp_path, scheduler, capfd):
    def lstm_json(*argv):
        path = tmp_path / "lstm.json"
        assert main(["run", LSTM, "--dim", "batch=6", "--dim", "seq=5", "--repeat", "1", *argv,
                     "--json", str(path)]) == 0
        return json.loads(path.read_text())
    plain = lstm_json()
    split = lstm_json("--dask", scheduler, "--chunk", "2")
    assert_same_outputs(split, plain)
    assert (split["dask"]["dim"], split["dask"]["batch"], split["dask"]["chunk_rows"]) == ("batch", 6, [2, 2, 2])
    assert "batch=6 in 3 chunks of 2 rows" in capfd.readouterr().out


def test_connect_refuses_bad_specs_before_importing_anything():
    from polyeng.dask import cluster
    for spec in ("local:0", "local:-1", "local:2.5", "tcp://:8786", "tls://127.0.0.1:8786", " "):
        with pytest.raises(ValueError, match="names no dask cluster"):
            with cluster.connect(spec):
                pass
    assert cluster.parse(" local:3 ") == ("local", 3)
    assert cluster.parse("tcp://[::1]:8786") == ("tcp", "tcp://[::1]:8786")


@pytest.mark.parametrize("batch,workers,rows,want", [(8, 2, None, 2), (3, 2, None, 1), (9, 2, None, 3),
                                                     (8, 2, 100, 8), (8, 4, 3, 3), (0, 2, None, 1)])
def test_chunk_rows(batch, workers, rows, want):
    from polyeng.dask.cluster import chunk_rows
    assert chunk_rows(batch, workers, rows) == want


def test_ctrl_c_in_a_terminal_says_only_interrupted():
    """Ctrl-C in a terminal reaches every process of the group, the workers too: only the command
    answers it, with one line and status 130 (the workers used to print a traceback each, and
    the client's loop the task the interrupt cut short)."""
    import os
    import signal
    import time

    import psutil

    from test_cli import polyeng_process
    proc = polyeng_process("run", ENCODER, "--dask", "local:2", "--repeat", "100000", start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(psutil.Process(proc.pid).children(recursive=True)) < 2 or time.monotonic() < deadline - 110:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
            time.sleep(0.2)
        time.sleep(3)   # the workers joined and the runs are under way
        os.killpg(proc.pid, signal.SIGINT)   # as a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert err.strip() == "polyeng: interrupted", err[-3000:]
