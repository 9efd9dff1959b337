"""Settings scopes: nesting, restore on error, thread and asyncio isolation, bind, env defaults, verbose."""
import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polyeng
from polyeng.engine import scopes
from polyeng.engine.verbose import level as verbose_level
from support import FakeEngine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_scopes_nest_and_restore_on_exception():
    assert polyeng.get_compute_eng() == "recommend"
    with polyeng.compute_eng("basic"):
        assert polyeng.get_compute_eng() == "basic"
        with pytest.raises(KeyError):
            with polyeng.compute_eng(polyeng.Engine.NUMBA):
                assert polyeng.get_compute_eng() == polyeng.Engine.NUMBA
                raise KeyError("boom")
        assert polyeng.get_compute_eng() == "basic"
    assert polyeng.get_compute_eng() == "recommend"


def test_process_default_sits_below_scopes():
    polyeng.set_compute_eng("BASIC")
    try:
        assert polyeng.get_compute_eng() == "basic"
        with polyeng.compute_eng("numba"):
            assert polyeng.get_compute_eng() == "numba"
        assert polyeng.get_compute_eng() == "basic"
    finally:
        polyeng.set_compute_eng("recommend")


def test_threads_see_only_their_own_scope():
    barrier = threading.Barrier(3)
    seen = {}

    def worker(engine):
        with polyeng.compute_eng(engine):
            barrier.wait()   # all three scopes are open at the same time
            seen[engine] = polyeng.get_compute_eng()
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(e,)) for e in ("basic", "numba", "opencl")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"basic": "basic", "numba": "numba", "opencl": "opencl"}
    assert polyeng.get_compute_eng() == "recommend"


def test_asyncio_tasks_are_isolated():
    async def task(engine, mode):
        with polyeng.compute_eng(engine), polyeng.fp_math_mode(mode):
            await asyncio.sleep(0.01)
            await asyncio.sleep(0)
            return polyeng.get_compute_eng(), polyeng.get_fp_math_mode()

    async def main():
        return await asyncio.gather(task("basic", "bf16"), task("numba", "tf32"), task("opencl", "any"))

    assert asyncio.run(main()) == [("basic", polyeng.FpMathMode.BF16), ("numba", polyeng.FpMathMode.TF32),
                                   ("opencl", polyeng.FpMathMode.ANY)]


def test_bind_carries_scope_into_thread_pool():
    def probe():
        return polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value

    with ThreadPoolExecutor(max_workers=2) as pool:
        with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"):
            bound = pool.submit(polyeng.bind(probe)).result()
            unbound = pool.submit(probe).result()
        # the worker thread is left as it was after the bound call
        after = pool.submit(probe).result()
    assert bound == ("numba", "bf16")
    assert unbound == ("recommend", "strict") and after == ("recommend", "strict")


def test_bind_runs_ops_under_the_bound_engine(caplog):
    x = np.ones((3, 4), np.float32)
    with polyeng.compute_eng("basic"), polyeng.verbose(1):
        fn = polyeng.bind(lambda: polyeng.softmax(x))
    with ThreadPoolExecutor(max_workers=1) as pool, caplog.at_level(logging.INFO, logger="polyeng"):
        out = pool.submit(fn).result()
    np.testing.assert_allclose(out, 0.25)
    assert "polyeng,exec,softmax,basic,user,fpm:strict,f32,x:f32:3x4," in caplog.text


def test_bind_leaves_nothing_behind_in_the_worker_thread():
    def leaves_a_scope_open():
        polyeng.fp_math_mode("f16").__enter__()   # never exited
        return polyeng.get_fp_math_mode().value

    def probe():
        return polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, scopes._open.get()

    with ThreadPoolExecutor(max_workers=1) as pool:
        with polyeng.compute_eng("numba"):
            assert pool.submit(polyeng.bind(leaves_a_scope_open)).result() == "f16"
        assert pool.submit(probe).result() == ("recommend", "strict", ())


def test_an_enclosing_scope_closes_the_scopes_left_open_inside_it():
    # a signal landing on the first instruction of an __exit__ skips it; the next enclosing
    # scope to close closes the skipped ones too
    with polyeng.verbose(0):
        with polyeng.compute_eng("basic"):
            polyeng.fp_math_mode("bf16").__enter__()
            polyeng.verbose(2).__enter__()
            assert (polyeng.get_fp_math_mode().value, verbose_level()) == ("bf16", 2)
        assert (polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, verbose_level()) == \
            ("recommend", "strict", 0)
        assert len(scopes._open.get()) == 1
    assert scopes._open.get() == ()


def _scoped_generator():
    with polyeng.compute_eng("numba"), polyeng.verbose(1):
        yield
        yield


def _settings():
    return polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, verbose_level()


def _run_out_inside_consumer_scopes(generator):
    """Finishes ``generator``, whose scopes opened before the consumer's, while those are open."""
    assert _settings() == ("basic", "bf16", 1)
    assert next(generator, "done") is None and next(generator, "done") == "done"
    assert _settings() == ("basic", "bf16", 0)


def test_a_generator_closing_its_scopes_leaves_its_consumers_scopes_open():
    generator = _scoped_generator()
    next(generator)
    with polyeng.fp_math_mode("bf16"), polyeng.compute_eng("basic"):
        _run_out_inside_consumer_scopes(generator)
    assert _settings() == ("recommend", "strict", 0) and scopes._open.get() == ()


def test_a_generator_closing_its_scopes_leaves_exit_stack_scopes_open():
    generator = _scoped_generator()
    next(generator)
    with contextlib.ExitStack() as stack:
        stack.enter_context(polyeng.fp_math_mode("bf16"))
        stack.enter_context(polyeng.compute_eng("basic"))
        _run_out_inside_consumer_scopes(generator)
    assert _settings() == ("recommend", "strict", 0) and scopes._open.get() == ()


def test_a_close_interrupted_by_a_signal_is_redone(monkeypatch):
    close, calls = scopes._close, []

    def interrupted_once(entry):
        calls.append(entry)
        close(entry)
        if len(calls) == 1:   # as if a signal landed after the variable was restored
            raise KeyboardInterrupt
    monkeypatch.setattr(scopes, "_close", interrupted_once)
    outer = polyeng.compute_eng("numba")
    with pytest.raises(KeyboardInterrupt):
        with outer, polyeng.compute_eng("basic"):
            pass
    assert polyeng.get_compute_eng() == "recommend" and scopes._open.get() == ()
    assert len(calls) == 3   # the inner close twice (the second finds it closed), the outer once


def test_fp_math_mode_scopes_and_validation():
    assert polyeng.get_fp_math_mode() == polyeng.FpMathMode.STRICT
    with polyeng.fp_math_mode("BF16"):
        assert polyeng.get_fp_math_mode() is polyeng.FpMathMode.BF16
    with pytest.raises(ValueError, match="strict, bf16, f16, tf32, any"):
        polyeng.fp_math_mode("fp8")


def test_verbose_levels(backends, caplog):
    backends(FakeEngine("fake", ops=("concat",)))   # a candidate without matmul
    x = np.zeros((2, 3), np.float16)
    with caplog.at_level(logging.INFO, logger="polyeng"):
        polyeng.softmax(x)
        assert caplog.text == ""
        with polyeng.verbose(1):
            polyeng.softmax(x)
        lines = caplog.messages
        assert len(lines) == 1
        fields = lines[0].split(",")
        assert fields[:8] == ["polyeng", "exec", "softmax", "basic", "recommend", "fpm:strict", "f32", "x:f16:2x3"]
        assert float(fields[8]) >= 0
        caplog.clear()
        with polyeng.verbose(2):
            polyeng.matmul(x, x.T)
        assert "polyeng,dispatch,matmul,fake,not implemented,no matmul kernel" in caplog.messages
    with pytest.raises(ValueError, match="verbose level"):
        polyeng.verbose(7)


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_environment_defaults_in_a_fresh_process():
    out = _run("import polyeng; print(polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value)",
               POLYENG_COMPUTE_ENG="Basic", POLYENG_DEFAULT_FP_MATH_MODE="TF32")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["basic", "tf32"]


def test_invalid_environment_values_are_clear_errors():
    out = _run("import polyeng; polyeng.get_fp_math_mode()", POLYENG_DEFAULT_FP_MATH_MODE="fp8")
    assert out.returncode != 0 and "POLYENG_DEFAULT_FP_MATH_MODE='fp8'" in out.stderr
    out = _run("import polyeng; polyeng.get_compute_eng()", POLYENG_COMPUTE_ENG="cuda")
    assert out.returncode != 0 and "POLYENG_COMPUTE_ENG='cuda'" in out.stderr and "basic" in out.stderr


@pytest.mark.parametrize("variable,valid", [("POLYENG_VERBOSE", "expected 0, 1 or 2"),
                                            ("POLYENG_COMPUTE_ENG", "expected one of recommend, basic, numba"),
                                            ("POLYENG_DEFAULT_FP_MATH_MODE", "expected one of strict, bf16, f16")])
def test_a_bad_environment_variable_is_one_clear_error_at_the_first_call(variable, valid):
    out = _run("import polyeng; polyeng.softmax([1.0])", **{variable: "nonsense"})
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1].startswith(f"ValueError: {variable}='nonsense' is not ")
    assert valid in out.stderr


def test_verbose_environment_variable_prints_lines():
    out = _run("import numpy as np, polyeng; polyeng.concat([np.ones(3), np.ones(2)])", POLYENG_VERBOSE="1")
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("polyeng,exec,concat,basic,recommend,fpm:strict,f64,tensors[0]:f64:3 tensors[1]:f64:2,")


def test_current_settings_is_a_plain_picklable_snapshot():
    import pickle
    with polyeng.compute_eng("numba", fallback=False), polyeng.fp_math_mode("bf16"), polyeng.verbose(2):
        settings = polyeng.current_settings()
    assert repr(settings) == ("Settings(engine='numba', fallback=False, fp_math_mode='bf16', verbose=2, "
                              "num_threads=None)")
    copy = pickle.loads(pickle.dumps(settings))
    assert copy == settings and hash(copy) == hash(settings)
    assert polyeng.current_settings() == polyeng.Settings()   # outside the scopes: the defaults
    with copy:
        assert (polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, verbose_level()) == ("numba", "bf16", 2)
        with polyeng.compute_eng("basic"), copy:   # nests, and the same snapshot may be entered twice
            assert polyeng.get_compute_eng() == "numba"
        assert polyeng.get_compute_eng() == "numba"
    assert (polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, verbose_level()) == ("recommend", "strict", 0)


def test_a_settings_snapshot_is_entered_by_threads_at_once():
    settings = polyeng.Settings("basic", True, "tf32", 0)
    barrier = threading.Barrier(3)

    def inside():
        with settings:
            barrier.wait(timeout=10)
            seen = polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value
            barrier.wait(timeout=10)
        return seen, polyeng.get_compute_eng()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = [f.result() for f in [pool.submit(inside) for _ in range(3)]]
    assert results == [(("basic", "tf32"), "recommend")] * 3


def test_bad_settings_are_named():
    with pytest.raises(TypeError, match="fallback"):
        polyeng.Settings("basic", "no")
    with pytest.raises(ValueError, match="fp_math_mode"):
        polyeng.Settings("basic", True, "fp8")
    with pytest.raises(ValueError, match="verbose"):
        polyeng.Settings("basic", True, "strict", 5)
    with pytest.raises(ValueError, match="not a registered engine"):
        with polyeng.Settings("nosuchengine"):
            pass
    with pytest.raises(TypeError, match="not callable"):
        polyeng.bind(42)


def test_bind_pickles_and_runs_in_another_process():
    import multiprocessing
    import pickle
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode("f16"):
        bound = polyeng.bind(polyeng.softmax)
        probe = polyeng.bind(polyeng.get_fp_math_mode)
    assert bound.__name__ == "softmax" and bound.__wrapped__ is polyeng.softmax
    assert pickle.loads(pickle.dumps(bound)).settings == bound.settings
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.apply(bound, (x,))
        mode = pool.apply(probe)
        plain = pool.apply(polyeng.get_fp_math_mode)
    np.testing.assert_array_equal(out, polyeng.softmax(x))
    assert (mode, plain) == (polyeng.FpMathMode.F16, polyeng.FpMathMode.STRICT)
