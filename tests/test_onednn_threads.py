"""ONEDNN under polyeng's thread budget: a primitive never runs on more OpenMP threads than it was
created for (oneDNN sizes its scratch and work split for the threads in force at creation; more
at execution overran them and crashed the process), and a small primitive runs on one thread."""
import numpy as np
import pytest

import polyeng
from polyeng.engine.threads import available_cores

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available,
                                reason="onednn is unavailable")


@pytest.fixture
def executions(monkeypatch):
    from polyeng.backends.onednn import _primitive
    seen = []
    real = _primitive.set_threads

    def record(n):
        seen.append(n)
        real(n)
    monkeypatch.setattr(_primitive, "set_threads", record)
    return seen


def test_primitives_are_created_for_the_most_threads_they_may_get(executions):
    from polyeng.backends.onednn import _primitive
    x = np.random.default_rng(0).standard_normal((2, 8, 40, 40)).astype(np.float32)
    with polyeng.num_threads(1), polyeng.compute_eng("onednn", fallback=False):
        polyeng.upsample_nearest(x, scale_factor=3.0)   # created while the budget is 1
    made = [p for p in _primitive.cache._items.values() if isinstance(p, _primitive.Primitive)]
    assert made and all(p.threads >= max(1, available_cores()) for p in made)
    assert executions[0] == max(polyeng.get_num_threads(), available_cores())   # set before creating


def test_execution_never_exceeds_the_creation_threads(executions):
    from polyeng.backends.onednn import _primitive
    x = np.random.default_rng(1).standard_normal((4, 16, 64, 64)).astype(np.float32)
    with polyeng.compute_eng("onednn", fallback=False):
        polyeng.upsample_nearest(x, scale_factor=2.0)
        executions.clear()
        with polyeng.num_threads(64):   # a budget above the cores the primitive was made for
            y = polyeng.upsample_nearest(x, scale_factor=2.0)
    limit = max(p.threads for p in _primitive.cache._items.values() if isinstance(p, _primitive.Primitive))
    assert executions and max(executions) <= limit
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))


def test_small_work_runs_on_one_thread(executions):
    x = np.ones((4, 4), np.float32)
    with polyeng.compute_eng("onednn", fallback=False):
        polyeng.linear(x, x)
    assert executions[-1] == 1
