"""Hostile and broken inputs: nothing read from outside what polyeng was given, and no input
that crashes the process. Crash cases run in a child process, so a crash fails the test
instead of ending the run."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyeng

ENGINES = [e.name for e in polyeng.engines() if e.available and e.name in ("basic", "numba", "opencl")]

SOFTMAX_SWEEP = """
    import json, sys
    import numpy as np, polyeng
    engine = sys.argv[1]
    rng = np.random.default_rng(0)
    worst = {}
    for dtype in (np.float16, polyeng.bfloat16, np.float32, np.float64):
        eps = 2.0 ** -7 if dtype == polyeng.bfloat16 else float(np.finfo(dtype).eps)
        for fn in (polyeng.softmax, polyeng.log_softmax):
            for n in range(1, 71):
                for shape, axis in (((3, n), -1), ((1, n), -1), ((2, n, 5), 1), ((2, n, 17), 1)):
                    x = rng.standard_normal(shape).astype(dtype)
                    with polyeng.compute_eng("basic"):
                        ref = fn(x.astype(np.float64), axis=axis)
                    with polyeng.compute_eng(engine, fallback=False):
                        got = np.asarray(fn(x, axis=axis)).astype(np.float64)
                    err = float(np.max(np.abs(got - ref)) / (eps * max(1.0, float(np.max(np.abs(ref))))))
                    key = f"{np.dtype(dtype).name} {fn.__name__}"
                    worst[key] = max(worst.get(key, 0.0), err)
    print(json.dumps(worst))
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_softmax_of_every_short_last_axis_runs_and_matches(engine):
    """float16 softmax on OPENCL crashed the process (SIGSEGV) for rows of 17-31 elements but 24."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SOFTMAX_SWEEP), engine], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"the sweep on {engine} ended with status {out.returncode}: {out.stderr[-2000:]}"
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(worst) == 8
    assert all(err <= 16 for err in worst.values()), worst   # the engine suite's tolerance for softmax
