"""``import polyeng`` makes OpenBLAS's workers sleep soon after their last task
(``backends/_blas_spin.py``): each case runs in a fresh process, as the setting is made at import."""
import json
import os
import subprocess
import sys

import pytest

from polyeng.backends import _blas_spin
from polyeng.backends._blas_threads import blas_info

pytestmark = pytest.mark.skipif(blas_info() is None, reason="numpy's BLAS is not an OpenBLAS on its own threads")

# CPU time of the process in the 0.3 s after a threaded 1024x1024 product returned: OpenBLAS's
# default spin keeps a worker busy for about 0.1 s of it
AFTER_PRODUCT = """
import json, resource, sys, threading, time
import numpy as np
{before}
import polyeng
from polyeng.backends import _blas_spin
from threadpoolctl import threadpool_limits

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

a = np.random.default_rng(0).random((1024, 1024), dtype=np.float32)
spent = []
with threadpool_limits(2, user_api="blas"):
    for _ in range(3):
        a @ a
        began = cpu()
        time.sleep(0.3)
        spent.append(cpu() - began)
import os
print(json.dumps({{"state": _blas_spin.state(), "spent": min(spent), "most": max(spent), "sum": float((a @ a).sum()),
                  "env": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}}))
"""


def _run(before: str = "", **env) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in _blas_spin.USER_VARIABLES}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", AFTER_PRODUCT.format(before=before)], env=environ,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS runs one thread: no worker spins")
def test_workers_sleep_soon_after_a_threaded_product():
    found = _run()
    assert found["state"]["short"], found["state"]
    assert found["spent"] < 0.03, found   # OpenBLAS's default: 0.1-0.13 s
    assert found["env"] is None   # the environment is put back as it was


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS runs one thread: no worker spins")
def test_the_users_timeout_wins_and_keeps_the_default_spin():
    found = _run(OPENBLAS_THREAD_TIMEOUT="28")
    assert not found["state"]["short"]
    assert "OPENBLAS_THREAD_TIMEOUT=28 set by the user" in found["state"]["why"]
    assert found["most"] > 0.04, found   # about 0.1 s: the test above measures what the setting changes
    assert found["sum"] == _run()["sum"]   # the same bits either way


def test_nothing_is_stopped_while_another_thread_runs():
    before = "t = threading.Thread(target=time.sleep, args=(2,), daemon=True); t.start()"
    found = _run(before)
    assert not found["state"]["short"] and "other threads" in found["state"]["why"]


def test_it_is_applied_once_per_process():
    assert _blas_spin.state()
    assert _blas_spin.apply() == _blas_spin.state()


def test_a_timeout_openblas_read_at_load_wins_and_the_rest_is_kept():
    """A timeout OpenBLAS took when it loaded, gone from the environment since, is still the user's;
    the environment is put back as it was, empty values included."""
    found = _run("import os; os.environ.pop('OPENBLAS_THREAD_TIMEOUT')", OPENBLAS_THREAD_TIMEOUT="10")
    assert not found["state"]["short"] and "OPENBLAS_THREAD_TIMEOUT=10 given when OpenBLAS loaded" in found["state"]["why"]
    kept = _run("import os; os.environ['OPENBLAS_THREAD_TIMEOUT'] = ''")
    assert kept["state"]["short"] and kept["env"] == ""


def test_polyeng_info_says_what_applies():
    environ = {k: v for k, v in os.environ.items() if k not in _blas_spin.USER_VARIABLES}
    done = subprocess.run([sys.executable, "-m", "polyeng", "info"], capture_output=True, text=True, timeout=300,
                          env=environ)
    assert done.returncode == 0, done.stderr
    assert "BLAS workers:   sleep 2**18 cycles" in done.stdout
