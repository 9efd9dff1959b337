"""NUMBA's on-disk cache under processes that start at once: each function's compile-or-load step
is serialized by a file lock of its own, so exactly one process compiles a function and the others
load its code, while processes compiling different functions do not wait for each other."""
import json
import os
import subprocess
import sys
import textwrap
import time
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


def _env(tmp_path: Path) -> dict:
    path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=path)


def _start_together(tmp_path: Path, count: int):
    script = tmp_path / "kernel_mod.py"
    script.write_text(KERNEL)
    env = _env(tmp_path)
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
    done = subprocess.run([sys.executable, str(script)], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7.0"


TWO_KERNELS = textwrap.dedent('''
    import os, sys, time
    from numba.extending import intrinsic
    from polyeng.backends.numba._runtime import jit

    HERE = os.path.dirname(os.path.abspath(__file__))

    @intrinsic
    def held_until_released(typingctx, x):
        # typed while `slow` compiles, under its lock: says so, then waits for the test
        open(os.path.join(HERE, "holding"), "w").close()
        deadline = time.time() + 90
        while not os.path.exists(os.path.join(HERE, "release")) and time.time() < deadline:
            time.sleep(0.02)

        def codegen(context, builder, sig, args):
            return args[0]
        return x(x), codegen

    @jit
    def slow(x):
        return held_until_released(x) + 1.0

    @jit
    def fast(x):
        return x * 2.0

    print(slow(1.0) if sys.argv[1] == "slow" else fast(1.0))
''')


def test_processes_compiling_different_functions_do_not_wait_for_each_other(tmp_path):
    """One process is held inside the compile of ``slow``; another compiles ``fast``, from the same
    file and cache folder, meanwhile (with one lock for the folder it waited for ``slow``)."""
    script = tmp_path / "two_kernels.py"
    script.write_text(TWO_KERNELS)
    env = _env(tmp_path)
    slow = subprocess.Popen([sys.executable, str(script), "slow"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (tmp_path / "holding").exists():
            assert slow.poll() is None, slow.communicate()
            assert time.time() < deadline, "the slow compile never started"
            time.sleep(0.02)
        fast = subprocess.run([sys.executable, str(script), "fast"], env=env, capture_output=True, text=True,
                              timeout=60)
        assert fast.returncode == 0, fast.stderr
        assert fast.stdout.strip() == "2.0"
        assert slow.poll() is None   # still inside its compile: `fast` did not wait for it
    finally:
        (tmp_path / "release").touch()
        out, err = slow.communicate(timeout=120)
    assert slow.returncode == 0, err
    assert out.strip() == "2.0"


THREADS = textwrap.dedent('''
    import threading, time
    from numba.extending import intrinsic
    from polyeng.backends.numba._runtime import jit

    started = threading.Event()

    @intrinsic
    def let_the_other_thread_start(typingctx, x):
        # typed while `outer` compiles, before it compiles `inner`
        started.set()
        time.sleep(1.0)

        def codegen(context, builder, sig, args):
            return args[0]
        return x(x), codegen

    @jit
    def inner(x):
        return x * 3.0

    @jit
    def outer(x):
        return inner(let_the_other_thread_start(x)) + 1.0

    results = {}

    def first():
        results["outer"] = outer(2.0)

    def second():
        started.wait(60)
        results["inner"] = inner(2.0)

    threads = [threading.Thread(target=f, daemon=True) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    print(sorted(results.items()))
''')


def test_two_threads_compiling_a_kernel_and_its_callee_at_once_finish(tmp_path):
    """A second thread starts compiling ``inner`` while the first, inside ``outer``'s compile, is
    about to: had it taken ``inner``'s file lock before numba's compiler lock, each thread would wait
    on the other's lock for good."""
    script = tmp_path / "threads_mod.py"
    script.write_text(THREADS)
    done = subprocess.run([sys.executable, str(script)], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('inner', 6.0), ('outer', 7.0)]"


def test_a_lock_file_that_cannot_be_opened_leaves_the_compile_to_numba(tmp_path):
    script = tmp_path / "blocked_mod.py"
    script.write_text(textwrap.dedent('''
        import os
        from polyeng.backends.numba._runtime import _lock_path, jit

        @jit
        def f(x):
            return x + 1.0

        os.makedirs(_lock_path(f))   # a folder where the lock file would be: open() fails
        print(f(2.0), f.stats.cache_misses)
    '''))
    done = subprocess.run([sys.executable, str(script)], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("3.0 ")
