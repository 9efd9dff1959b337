"""The local cluster's worker preload drops the log lines that only repeat a closing."""
import inspect
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("distributed")

HEARTBEAT = "Failed to communicate with scheduler during heartbeat."


def test_the_dropped_heartbeat_message_is_distributed_s_own():
    import distributed.worker
    assert f'logger.exception("{HEARTBEAT}")' in inspect.getsource(distributed.worker.Worker.heartbeat)


def test_a_worker_keeps_its_warnings_but_not_the_closings_echoes():
    script = textwrap.dedent(f"""
        import logging
        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
        import polyeng.dask.worker_setup
        worker = logging.getLogger("distributed.worker")
        try:
            raise OSError("stream closed")
        except OSError:
            worker.exception("{HEARTBEAT}")
        worker.warning("Worker stream died during communication: tcp://127.0.0.1:1")
        logging.getLogger("distributed.worker.state_machine").warning(
            "Async instruction for <Task> ended with CancelledError")
        worker.warning("a worker's own warning")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["distributed.worker: a worker's own warning"]
