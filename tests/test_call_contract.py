"""What a call promises whatever engine runs it: a pinned engine is the only one to run the
call, a kernel's result is checked before the caller sees it, and out-of-memory and
interrupts are never mistaken for engine faults."""
import logging
import re
import warnings

import numpy as np
import pytest

import polyeng
from support import FakeEngine, FakeTensor

X = np.arange(10, dtype=np.float32).reshape(2, 5)
OPENCL = {e.name: e for e in polyeng.engines()}["opencl"].available


class ScriptedEngine:
    """A plugin engine whose softmax and max_pool2d kernels return or raise what the test says."""

    def __init__(self, name, returns=None, raises=None):
        self.name, self.returns, self.raises, self.calls = name, returns, raises, 0

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name)
        registry.add_kernel("softmax", self.name, self.kernel)
        registry.add_kernel("max_pool2d", self.name, self.kernel)

    def kernel(self, **kwargs):
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        return self.returns


def fallback_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, polyeng.FallbackWarning)]


# -- fallback must be a bool ------------------------------------------------------------

@pytest.mark.parametrize("bad", ["no", "False", 0, 1, None, [False]])
def test_fallback_that_is_not_a_bool_is_a_type_error(bad):
    with pytest.raises(TypeError, match=re.escape(f"fallback={bad!r} is not a bool; expected True or False")):
        polyeng.compute_eng("basic", fallback=bad)


def test_fallback_takes_python_and_numpy_bools():
    for value, expected in ((False, False), (True, True), (np.bool_(False), False), (np.True_, True)):
        scope = polyeng.compute_eng("basic", fallback=value).scope
        assert scope.fallback is expected


# -- fallback=False pins the engine -------------------------------------------------------

def test_pinned_engine_runs_a_call_on_another_engines_device_tensor(backends, caplog):
    owner = backends(FakeEngine("pinowner", ops=("softmax",), native=True))
    with polyeng.compute_eng("basic"):   # without the pin, the layout step wins
        assert isinstance(polyeng.softmax(FakeTensor(X)), FakeTensor)
    assert owner.calls == ["softmax"]
    with polyeng.compute_eng("basic", fallback=False):
        decision = polyeng.explain("softmax", FakeTensor(X))
        with polyeng.verbose(1), caplog.at_level(logging.INFO, logger="polyeng"):
            out = polyeng.softmax(FakeTensor(X))
    assert (decision.engine, decision.step) == ("basic", "user")
    assert owner.calls == ["softmax"]   # not run there again
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, polyeng.softmax(X))
    assert caplog.messages[-1].startswith("polyeng,exec,softmax,basic,user,")
    assert caplog.messages[-1].endswith(",transferred x to host")


def test_pinned_engine_keeps_its_own_device_tensors(backends):
    owner = backends(FakeEngine("pinself", ops=("softmax",), native=True))
    with polyeng.compute_eng("pinself", fallback=False):
        out = polyeng.softmax(FakeTensor(X))
    assert isinstance(out, FakeTensor) and owner.calls == ["softmax"]


def test_pinned_engine_that_cannot_run_the_call_names_engine_op_and_reason(backends):
    backends(FakeEngine("pinowner2", ops=("softmax",), native=True))
    backends(FakeEngine("pinpicky", ops=("softmax",), reject={"softmax": lambda call: "no 2-D softmax"}))
    with polyeng.compute_eng("pinpicky", fallback=False):
        with pytest.raises(polyeng.EngineError, match="'pinpicky' cannot run softmax: rejected: no 2-D softmax") as info:
            polyeng.softmax(FakeTensor(X))
        assert (info.value.engine, info.value.op) == ("pinpicky", "softmax")
        with pytest.raises(polyeng.EngineError, match="'pinpicky' cannot run gelu: not implemented: no gelu kernel"):
            polyeng.gelu(FakeTensor(X))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL platform (the CI run requires one)")
@pytest.mark.parametrize("engine", ["basic", "numba"])
def test_pinned_engine_runs_a_call_on_an_opencl_tensor(engine, caplog):
    t = polyeng.to_device(X, "opencl")
    with polyeng.compute_eng(engine, fallback=False):
        assert polyeng.explain("softmax", t).engine == engine
        with polyeng.verbose(1), caplog.at_level(logging.INFO, logger="polyeng"):
            out = polyeng.softmax(t)
    assert caplog.messages[-1].startswith(f"polyeng,exec,softmax,{engine},user,")
    assert caplog.messages[-1].endswith(",transferred x to host")
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, polyeng.softmax(X), rtol=1e-6)
    with polyeng.compute_eng("opencl", fallback=False):   # its own tensor stays on the device
        assert type(polyeng.softmax(t)) is type(t)


# -- a kernel's result is checked -----------------------------------------------------------

WRONG = [
    (np.ones(3, np.float32), "returned a result of shape (3,); expected (2, 5)"),
    (np.ones((2, 5), np.int64), "returned a result of dtype int64; expected float32"),
    (np.ones((2, 5), object), "returned a result of dtype object; expected float32"),
    ([[0.0] * 5] * 2, "returned a list; expected an array of shape (2, 5)"),
    (None, "returned None; expected an array of shape (2, 5)"),
    ((), "returned a tuple; expected an array of shape (2, 5)"),
    ((np.ones((2, 5), np.float32), [1]), "returned a list among its results; expected arrays"),
]


@pytest.mark.parametrize("case", range(len(WRONG)))
def test_a_wrong_result_is_a_kernel_failure_that_falls_back(backends, case):
    (result, problem), name = WRONG[case], f"liar{case}"   # one engine per case: warnings are issued once
    liar = backends(ScriptedEngine(name, returns=result))
    with polyeng.compute_eng(name), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = polyeng.softmax(X)
    assert liar.calls == 1
    np.testing.assert_array_equal(out, polyeng.softmax(X))
    assert fallback_warnings(caught) == [f"softmax: engine {name!r} failed at run time ({problem}); "
                                         f"running it on 'basic'"]
    with polyeng.compute_eng(name, fallback=False):
        with pytest.raises(polyeng.EngineError, match=re.escape(f"{name}' cannot run softmax: kernel failed: {problem}")):
            polyeng.softmax(X)


def test_float_results_are_returned_in_the_storage_dtype(backends):
    backends(ScriptedEngine("wider", returns=np.full((2, 5), 0.1, np.float64)))
    with polyeng.compute_eng("wider", fallback=False):
        out = polyeng.softmax(X)
    assert out.dtype == np.float32 and out.shape == (2, 5)


def test_results_of_ops_with_several_results_are_checked_by_the_first(backends):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    values, indices = polyeng.max_pool2d(x, 2, return_indices=True)
    backends(ScriptedEngine("pool", returns=(values, indices)))
    backends(ScriptedEngine("badpool", returns=(values[..., :1], indices)))
    with polyeng.compute_eng("pool", fallback=False):
        got = polyeng.max_pool2d(x, 2, return_indices=True)
    assert type(got) is tuple and got[0].dtype == np.float32 and got[1].dtype == indices.dtype
    with polyeng.compute_eng("badpool", fallback=False):
        with pytest.raises(polyeng.EngineError, match=r"shape \(1, 1, 2, 1\); expected \(1, 1, 2, 2\)"):
            polyeng.max_pool2d(x, 2, return_indices=True)


def test_built_in_results_pass_the_check_unchanged():
    out = polyeng.softmax(X)
    assert type(out) is np.ndarray and out.shape == X.shape and out.dtype == X.dtype


# -- out of memory and interrupts are not engine faults -------------------------------------

@pytest.mark.parametrize("fallback", [True, False])
@pytest.mark.parametrize("error", [MemoryError("no room"), KeyboardInterrupt(), SystemExit(3)],
                         ids=lambda e: type(e).__name__)
def test_memory_errors_and_interrupts_go_through_as_they_are(backends, error, fallback):
    name = f"oom{type(error).__name__.lower()}{int(fallback)}"
    engine = backends(ScriptedEngine(name, raises=error))
    with polyeng.compute_eng(name, fallback=fallback), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(type(error)) as info:
            polyeng.softmax(X)
    assert info.value is error and engine.calls == 1
    assert fallback_warnings(caught) == []


# -- to_numpy ---------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["abc", object(), None, b"xy", ["a", "b"], [{}]],
                         ids=["str", "object", "None", "bytes", "strings", "dicts"])
def test_to_numpy_refuses_what_is_not_a_tensor(bad):
    with pytest.raises(TypeError, match=r"is not a tensor; expected a device tensor, a numpy array or a numeric"):
        polyeng.to_numpy(bad)


def test_to_numpy_passes_arrays_and_numeric_array_likes_through():
    x = np.array(["kept", "as is"])
    assert polyeng.to_numpy(x) is x
    assert polyeng.to_numpy(X) is X
    np.testing.assert_array_equal(polyeng.to_numpy([[1, 2], [3, 4]]), [[1, 2], [3, 4]])
    assert polyeng.to_numpy(2.5).shape == () and polyeng.to_numpy(True).dtype == np.bool_
    assert polyeng.to_numpy(np.ones(2, polyeng.bfloat16).tolist()).dtype == np.float64
    np.testing.assert_array_equal(polyeng.to_numpy(FakeTensor(X)), X)   # objects with __array__
