"""The four-step engine priority, fallback and explain, driven by a fake plugin engine."""
import warnings

import numpy as np
import pytest

import polyeng
from support import FakeEngine, FakeTensor, align_corners_unsupported


@pytest.fixture
def plugin(backends):
    return lambda *args, **kwargs: backends(FakeEngine(*args, **kwargs))


X = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)


def test_special_argument_overrides_user_engine(plugin):
    fast = plugin("fastup", reject={"upsample_bilinear2d": align_corners_unsupported})
    with polyeng.compute_eng("fastup"):
        decision = polyeng.explain("upsample_bilinear2d", X, scale_factor=2, align_corners=True)
        assert decision.engine == "basic" and decision.step == "special-argument"
        verdicts = {c.engine: (c.verdict, c.reason) for c in decision.candidates}
        assert verdicts["fastup"] == ("rejected", "align_corners=True unsupported")
        polyeng.upsample_bilinear2d(X, scale_factor=2, align_corners=True)
        assert fast.calls == []
        polyeng.upsample_bilinear2d(X, scale_factor=2, align_corners=False)
        assert fast.calls == ["upsample_bilinear2d"]
    assert polyeng.explain("upsample_bilinear2d", X, scale_factor=2).step == "recommend"


def test_layout_wins_over_user_engine(plugin):
    plugin("devfake", native=True)
    with polyeng.compute_eng("basic"):
        decision = polyeng.explain("concat", [FakeTensor(X), X], axis=1)
        assert (decision.engine, decision.step) == ("devfake", "layout")
        out = polyeng.concat([FakeTensor(X), X], axis=1)
    assert isinstance(out, FakeTensor)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([X, X], axis=1))


def test_layout_transfers_to_host_when_owner_rejects(plugin, caplog):
    plugin("devfake", native=True, reject={"concat": lambda call: "no concat on axis 1" if call.args["axis"] == 1 else None})
    decision = polyeng.explain("concat", [FakeTensor(X), X], axis=1)
    assert (decision.engine, decision.step) == ("basic", "special-argument")
    with polyeng.verbose(1), caplog.at_level("INFO", logger="polyeng"):
        out = polyeng.concat([FakeTensor(X), X], axis=1)
    assert isinstance(out, np.ndarray)
    assert "transferred tensors to host" in caplog.text


def test_user_engine_wins_over_recommendation(plugin):
    fake = plugin()
    with polyeng.compute_eng("FAKE"):   # names are case-insensitive
        decision = polyeng.explain(polyeng.softmax, X)
        assert (decision.engine, decision.step) == ("fake", "user")
        polyeng.softmax(X)
    assert fake.calls == ["softmax"]


def test_recommendation_when_user_says_recommend(plugin):
    fake = plugin()
    with polyeng.compute_eng(polyeng.Engine.RECOMMEND):
        decision = polyeng.explain("softmax", X)
        polyeng.softmax(X)
    assert (decision.engine, decision.step) == ("basic", "recommend")
    assert fake.calls == []


def test_user_engine_without_kernel_falls_to_recommendation(plugin):
    plugin(ops=("concat",))
    with polyeng.compute_eng("fake"):
        decision = polyeng.explain("softmax", X)
    assert (decision.engine, decision.step) == ("basic", "recommend")
    assert {c.engine: c.verdict for c in decision.candidates}["fake"] == "not implemented"


def test_runtime_failure_falls_back_with_one_warning(plugin):
    fake = plugin(fail=("softmax",))
    expected = polyeng.softmax(X)
    with polyeng.compute_eng("fake"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = polyeng.softmax(X)
        second = polyeng.softmax(X)
    fallback = [w for w in caught if issubclass(w.category, polyeng.FallbackWarning)]
    assert len(fallback) == 1 and "fake" in str(fallback[0].message) and "softmax" in str(fallback[0].message)
    assert issubclass(polyeng.FallbackWarning, RuntimeWarning)
    assert fake.calls == ["softmax", "softmax"]
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, expected)


def test_bad_arguments_never_fall_back(plugin):
    fake = plugin()
    with polyeng.compute_eng("fake"), warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="axis=5"):
            polyeng.softmax(X, axis=5)
    assert fake.calls == []


def test_fallback_false_raises_engine_error(plugin):
    plugin(fail=("softmax",), reject={"concat": lambda call: "no concat today"})
    with polyeng.compute_eng("fake", fallback=False):
        with pytest.raises(polyeng.EngineError, match="fake.*softmax.*crashed") as info:
            polyeng.softmax(X)
        assert (info.value.engine, info.value.op) == ("fake", "softmax")
        with pytest.raises(polyeng.EngineError, match="fake.*concat.*no concat today"):
            polyeng.concat([X, X])
        with pytest.raises(polyeng.EngineError, match="fake.*layer_norm"):
            polyeng.layer_norm(X, 4)


def test_unavailable_plugin_engine(plugin):
    plugin(available=False)
    info = {e.name: e for e in polyeng.engines()}["fake"]
    assert not info.available and info.reason == "fake engine switched off"
    assert "softmax" in info.ops
    with polyeng.compute_eng("fake"):
        decision = polyeng.explain("softmax", X)
    assert decision.engine == "basic"
    assert {c.engine: c.verdict for c in decision.candidates}["fake"] == "unavailable"
    with polyeng.compute_eng("fake", fallback=False), pytest.raises(polyeng.EngineError, match="switched off"):
        polyeng.softmax(X)


def test_lazy_availability_callable(plugin):
    calls = []

    def probe():
        calls.append(1)
        return False, "probe says no"
    plugin(available=probe)
    assert calls == []
    info = {e.name: e for e in polyeng.engines()}["fake"]
    assert (info.available, info.reason) == (False, "probe says no")


def test_explicitly_registered_plugin_that_raises_is_refused():
    class Broken:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine("broken")
            raise RuntimeError("cannot find device")
    broken = Broken()
    with pytest.raises(polyeng.PluginError, match="cannot find device") as info:
        polyeng.register_backend(broken)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "broken" not in {e.name for e in polyeng.engines()}
    np.testing.assert_allclose(polyeng.softmax(X).sum(axis=-1), 1, rtol=1e-6)


def test_unknown_engine_names_list_registered_engines():
    with pytest.raises(ValueError, match="basic.*numba.*opencl"):
        polyeng.compute_eng("cuda")
    with pytest.raises(ValueError, match="not a registered engine"):
        polyeng.set_compute_eng("nope")


def test_explain_table_and_record():
    decision = polyeng.explain("softmax", X, axis=1)
    assert decision.fp_math_mode == "strict" and decision.compute_type == "f32" and decision.compute_dtype == np.float32
    assert [c.engine for c in decision.candidates][:3] == ["basic", "numba", "opencl"]
    text = str(decision)
    assert "softmax" in text and "step=recommend" in text and "basic" in text and "chosen" in text
    with pytest.raises(ValueError, match="not a polyeng op"):
        polyeng.explain("conv3d", X)
    with pytest.raises(TypeError, match="explain"):
        polyeng.explain("softmax", X, bogus=1)


def test_builtin_engines_and_enum():
    assert polyeng.Engine.NUMBA == "numba" and str(polyeng.Engine.OPENCL) == "opencl"
    infos = {e.name: e for e in polyeng.engines()}
    assert {"basic", "numba", "opencl"} <= set(infos)
    from polyeng.ops import OPS
    assert set(infos["basic"].ops) == set(OPS)
