"""NUMBA's on-disk cache under processes that start at once: the compile-or-load step is
serialized by a file lock, so exactly one process compiles and the others load its code."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

KERNEL = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    from polyeng.backends.numba._runtime import jit

    @jit
    def twice(x, out):
        for i in range(x.size):
            out[i] = 2 * x[i]

    while time.time() < float(sys.argv[1]):   # start together
        time.sleep(0.001)
    x = np.arange(5.0)
    out = np.empty_like(x)
    twice(x, out)
    stats = twice.stats
    print(json.dumps({"out": out.tolist(), "misses": sum(stats.cache_misses.values()),
                      "hits": sum(stats.cache_hits.values())}))
''')


def _start_together(tmp_path: Path, count: int):
    script = tmp_path / "kernel_mod.py"
    script.write_text(KERNEL)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    import time
    start_at = str(time.time() + 4.0)   # every process has imported numba by then
    procs = [subprocess.Popen([sys.executable, str(script), start_at], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(count)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_processes_starting_at_once_compile_once(tmp_path):
    results = _start_together(tmp_path, 4)
    assert all(r["out"] == [0.0, 2.0, 4.0, 6.0, 8.0] for r in results)
    assert sum(r["misses"] for r in results) == 1, results
    assert sum(r["hits"] for r in results) == 3, results
    again = _start_together(tmp_path, 1)[0]
    assert again["misses"] == 0 and again["hits"] == 1


def test_the_guard_wraps_compile():
    from polyeng.backends.numba._runtime import jit

    @jit
    def f(x):
        return x + 1
    assert f.compile.__name__ == "compile_locked"
    assert f(np.float64(1.0)) == 2.0


def test_a_kernel_calling_another_kernel_compiles(tmp_path):
    # compiling the caller compiles the callee inside the guarded section: the lock must be re-entrant
    script = tmp_path / "nested_mod.py"
    script.write_text(textwrap.dedent('''
        from polyeng.backends.numba._runtime import jit

        @jit
        def inner(x):
            return x * 3

        @jit
        def outer(x):
            return inner(x) + 1

        print(outer(2.0))
    '''))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7.0"
