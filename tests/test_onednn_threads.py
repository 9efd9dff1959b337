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


def test_a_recurrent_primitive_made_on_one_thread_runs_on_another():
    # oneDNN's own scratchpad was sized in the thread that made the primitive: this crashed
    import threading
    rng = np.random.default_rng(2)
    seq = rng.random((10, 4, 16), dtype=np.float32)
    params = [(rng.random((48, 16), dtype=np.float32), rng.random((48, 16), dtype=np.float32), None, None)]
    results = []

    def go(n):
        with polyeng.compute_eng("onednn", fallback=False):
            for _ in range(n):
                results.append(polyeng.gru(seq, params)[0])
    go(1)
    worker = threading.Thread(target=go, args=(50,))
    worker.start()
    worker.join()
    assert len(results) == 51 and all(np.array_equal(r, results[0]) for r in results)


def test_one_primitive_run_from_several_threads_at_once_gives_every_thread_its_product():
    # a shared scratchpad gave a few of 18000 products wrong values (off by about 5.5)
    import threading
    rng = np.random.default_rng(3)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    with polyeng.compute_eng("onednn", fallback=False):
        want = polyeng.matmul(a, b)
    wrong = []

    def work():
        with polyeng.compute_eng("onednn", fallback=False):
            for _ in range(400):
                got = polyeng.matmul(a, b)
                if not np.array_equal(got, want):
                    wrong.append(float(np.abs(got - want).max()))
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.skipif(available_cores() < 2, reason="needs 2 usable cores: a primitive made for 1 thread has no variant")
def test_a_run_on_fewer_threads_takes_a_primitive_made_for_them():
    """Some implementations (the gemm convolution, reorders) start every thread they were made for
    whatever the count in force: a run on fewer threads (small work, a busy machine) takes a variant
    made for that count, when oneDNN chose the same implementation and layouts for it."""
    from polyeng.backends.onednn import _primitive
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16, 16, 16)).astype(np.float32)
    w = rng.standard_normal((72, 16, 1, 1)).astype(np.float32)
    with polyeng.compute_eng("basic"):
        want = polyeng.conv2d(x, w)
    _primitive.cache.clear()
    with polyeng.compute_eng("onednn", fallback=False), polyeng.num_threads(1):
        got = polyeng.conv2d(x, w)
    made = []
    for item in _primitive.cache._items.values():   # a convolution's plan holds its primitive and reorders
        made += [p for p in [item, getattr(item, "prim", None), *getattr(item, "steps", {}).values()]
                 if isinstance(p, _primitive.Primitive)]
    assert made and all(p.threads >= 2 for p in made)
    variants = [p._variants[1] for p in made if 1 in p._variants]
    assert variants and any(v is not None for v in variants)
    assert all(v[0] != p.handle for p in made for v in [p._variants.get(1)] if v is not None)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    _primitive.use_variants = False
    try:
        with polyeng.compute_eng("onednn", fallback=False), polyeng.num_threads(1):
            np.testing.assert_array_equal(polyeng.conv2d(x, w), got)   # the same bits either way
    finally:
        _primitive.use_variants = True
