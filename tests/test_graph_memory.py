"""Freed memory kept for the next graph run or op call (polyeng.engine.memory): after the first,
runs and calls reuse the pages the last one freed instead of faulting fresh ones in, and the
setting can be turned off. Page faults are counted, not timed."""
import json
import os
import subprocess
import sys

import pytest

CODE = """
import json, resource, numpy as np, polyeng
from polyeng.engine import memory
w = np.full((512, 512), 1e-3, np.float32)
def net(x):
    for _ in range(6):   # 8 MiB temporaries, each freed after the next node
        x = polyeng.relu(polyeng.matmul(x, w))
    return polyeng.mean(x, axis=1)
x = np.ones((256, 16, 512), np.float32)   # items of 16 rows: the products stay on numpy's BLAS
g = polyeng.graph.trace(net, x)
first = g(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    again = g(x)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps({"faults": faults, "state": memory.state(), "same": bool(np.array_equal(first, again))}))
"""


OPS = """
import json, resource, numpy as np, polyeng
from polyeng.engine import memory
x = np.ones((8, 96, 56, 56), np.float32)
w = np.full((96, 1, 3, 3), 0.1, np.float32)
with polyeng.compute_eng("numba"):   # a depthwise convolution: a 9.6 MB result, freed before the next call
    assert memory.state() == {}   # nothing applied before the first call
    first = polyeng.conv2d(x, w, padding=1, groups=96)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        again = None
        again = polyeng.conv2d(x, w, padding=1, groups=96)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps({"faults": faults, "state": memory.state(), "same": bool(np.array_equal(first, again))}))
"""


def run(env_value, code=CODE):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("POLYENG_KEEP_FREED_MEMORY", None)
    if env_value is not None:
        env["POLYENG_KEEP_FREED_MEMORY"] = env_value
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_runs_reuse_freed_pages_unless_turned_off():
    kept, given_back = run(None), run("0")
    assert kept["state"]["kept"] and "32 MiB" in kept["state"]["why"]
    assert given_back["state"] == {"kept": False, "why": "POLYENG_KEEP_FREED_MEMORY=0"}
    assert kept["same"] and given_back["same"]
    # without the setting each run faults pages in afresh (1,000 per run measured here)
    assert given_back["faults"] > 300, given_back
    assert kept["faults"] < given_back["faults"] / 10, (kept, given_back)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_the_first_op_call_outside_a_graph_applies_the_setting_unless_turned_off():
    """Op calls keep freed memory as graph runs do (their page faults vary with the kernels'
    threads: 62-164 per call with the setting against 124-328 without, on a depthwise convolution
    with a 9.6 MB result; 1.10-1.19 ms per call against 2.10 ms)."""
    kept, given_back = run(None, OPS), run("0", OPS)
    assert kept["state"]["kept"] and "32 MiB" in kept["state"]["why"]
    assert given_back["state"] == {"kept": False, "why": "POLYENG_KEEP_FREED_MEMORY=0"}
    assert kept["same"] and given_back["same"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_the_setting_was_applied_does_not_hang(monkeypatch):
    """The lock taken while glibc's settings are applied (a few ms: finding libc) is made again
    in a forked child, whose first op call would wait for it for ever otherwise."""
    from polyeng.engine import memory
    monkeypatch.setattr(memory, "_state", {})
    monkeypatch.setattr(memory, "applied", False)
    with memory._lock:   # held as another thread of the parent would hold it
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(20)   # a hang ends the child, which then fails the test
            try:
                ok = "kept" in memory.keep_freed_memory()
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_graph_run_leaves_no_reference_cycles_holding_its_values():
    """Every value of a run is freed when the run no longer needs it: no cycle (a closure that
    calls itself, say) keeps the results of a run alive until the garbage collector's next pass."""
    import gc
    import numpy as np
    import polyeng
    w = np.full((64, 64), 1e-2, np.float32)

    def net(x):
        y = polyeng.relu(polyeng.matmul(x, w))
        parts = polyeng.split(y, 32, axis=1)   # an op of several results
        return polyeng.add(parts[0], parts[1])
    x = np.ones((8, 64), np.float32)
    g = polyeng.graph.trace(net, x)
    for _ in range(3):
        g(x)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)   # what a collection finds is kept in gc.garbage, to be read
    try:
        for _ in range(5):
            g(x)
        gc.collect()
        # another thread of the process (a pool's) may leave garbage of its own meanwhile: the
        # run's would hold its arrays, or be polyeng's functions and cells
        found = [o for o in gc.garbage if isinstance(o, np.ndarray) or getattr(
            o, "__module__", None) and str(getattr(o, "__module__", "")).startswith("polyeng")]
        assert not found, found[:5]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
