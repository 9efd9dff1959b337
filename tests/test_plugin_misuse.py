"""A plugin that breaks its contract is refused with a clear error, and leaves nothing behind."""
import re
import types
import warnings

import numpy as np
import pluggy
import pytest

import polyeng
from polyeng.engine import hookspecs, plugins
from polyeng.engine.errors import PluginError, PluginWarning
from polyeng.engine.registry import DuplicateEngineError

X = np.ones((2, 3), np.float32)


def _state():
    """What a refused registration must leave as it was: the plugins and the registry itself."""
    return plugins.plugin_manager().list_name_plugin(), plugins.registry()


class Plugin:
    """A plugin whose hook runs ``body(registry)``."""

    def __init__(self, body):
        self.body = body

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        self.body(registry)


def _softmax(x, axis):
    return x


# -- not a plugin -------------------------------------------------------------------------------------
class Unmarked:
    def polyeng_register(self, registry):   # no @polyeng.hookimpl
        registry.add_engine("unmarked")


@pytest.mark.parametrize("value", [None, object(), 42, "plugin", types.ModuleType("empty"), Unmarked()],
                         ids=["None", "object", "int", "str", "module", "unmarked"])
def test_an_object_without_the_hook_is_refused(value):
    before = _state()
    with pytest.raises(TypeError, match=r"plugin=.* is not a polyeng plugin; expected an object \(or module\) "
                                        r"with a polyeng_register\(registry\) hook implementation marked "
                                        r"with @polyeng.hookimpl"):
        polyeng.register_backend(value)
    assert _state() == before


def test_the_refusal_names_what_was_given():
    with pytest.raises(TypeError, match=r"plugin=42 \(int\)"):
        polyeng.register_backend(42)


class InstanceHook:
    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine("instancehook")


def test_a_class_whose_hook_needs_self_asks_for_an_instance():
    before = _state()
    with pytest.raises(TypeError, match=r"is a class whose polyeng_register is an instance method; pass an "
                                        r"instance, register_backend\(InstanceHook\(\)\)"):
        polyeng.register_backend(InstanceHook)
    assert _state() == before


class StaticHook:
    @staticmethod
    @polyeng.hookimpl
    def polyeng_register(registry):
        registry.add_engine("statichook")
        registry.add_kernel("softmax", "statichook", _softmax)


def test_a_class_whose_hook_needs_no_instance_registers(backends):
    backends(StaticHook)
    assert {e.name: e.ops for e in polyeng.engines()}["statichook"] == ("softmax",)


def test_a_hook_with_other_arguments_than_the_spec_is_refused():
    class OtherArguments:
        @polyeng.hookimpl
        def polyeng_register(self, reg):
            pass
    before = _state()
    with pytest.raises(TypeError, match=r"(?s)does not match the polyeng hook specs: .*\{'reg'\}"):
        polyeng.register_backend(OtherArguments())
    assert _state() == before


# -- registered twice -----------------------------------------------------------------------------------
def test_registering_a_plugin_twice_says_under_which_name(backends):
    plugin = backends(Plugin(lambda registry: registry.add_engine("once")))
    name = plugins.plugin_manager().get_name(plugin)
    before = _state()
    with pytest.raises(ValueError) as info:
        polyeng.register_backend(plugin)
    assert str(info.value) == f"register_backend: {plugin!r} is already registered (as {name!r})"
    assert _state() == before


def test_registering_under_a_taken_name_is_refused(backends):
    first = backends(Plugin(lambda registry: registry.add_engine("firstname")))
    name = plugins.plugin_manager().get_name(first)
    before = _state()
    with pytest.raises(ValueError, match=rf"name='{name}' is already taken by "):
        polyeng.register_backend(Plugin(lambda registry: registry.add_engine("secondname")), name=name)
    assert _state() == before


def test_a_second_plugin_with_a_taken_engine_name_is_refused(backends):
    backends(Plugin(lambda registry: registry.add_engine("taken")))
    before = _state()
    with pytest.raises(PluginError, match=r"failed in polyeng_register: DuplicateEngineError: engine 'taken' "
                                          r"is already registered \(by plugin 'Plugin[-0-9a-f]*'\); "
                                          r"it was not registered") as info:
        polyeng.register_backend(Plugin(lambda registry: registry.add_engine("taken")))
    assert isinstance(info.value, ValueError) and isinstance(info.value.__cause__, DuplicateEngineError)
    assert _state() == before


# -- the hook fails ------------------------------------------------------------------------------------
def _broken(registry):
    registry.add_engine("brokenhook")
    raise RuntimeError("cannot find device")


def test_a_hook_that_raises_fails_the_registration_and_leaves_nothing_behind(backends):
    backends(Plugin(lambda registry: registry.add_engine("bystander")))   # a registry with a plugin in it
    polyeng.softmax(X)   # ... and a decision in its cache
    before = _state()
    plans = plugins.registry().plans
    plugin = Plugin(_broken)
    with pytest.raises(PluginError, match=r"register_backend: plugin 'Plugin-[0-9a-f]+' \(<.*Plugin object.*>\) "
                                          r"failed in polyeng_register: RuntimeError: cannot find device") as info:
        polyeng.register_backend(plugin)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert _state() == before and plugins.registry().plans is plans
    assert "brokenhook" not in {e.name for e in polyeng.engines()}
    with pytest.raises(ValueError, match="is not registered"):
        polyeng.unregister_backend(plugin)


def test_a_plugin_can_be_registered_once_its_hook_works(backends):
    plugin = Plugin(_broken)
    with pytest.raises(PluginError):
        polyeng.register_backend(plugin)
    plugin.body = lambda registry: registry.add_engine("brokenhook")
    backends(plugin)
    assert {e.name: e.available for e in polyeng.engines()}["brokenhook"] is True


# -- what the hook asks of the registry ------------------------------------------------------------------
BAD_CALLS = {
    "unknown op": (lambda r: (r.add_engine("bad"), r.add_kernel("no_such_op", "bad", _softmax)),
                   ValueError, r"add_kernel\('no_such_op', 'bad'\): unknown op 'no_such_op'; expected one of "
                               r"(\w+, )*add, (\w+, )*avg_pool2d, .*softmax"),
    "kernel of no engine": (lambda r: r.add_kernel("softmax", "nowhere", _softmax),
                            ValueError, r"add_kernel\('softmax', 'nowhere'\): engine 'nowhere' is not registered; "
                                        r"call add_engine first"),
    "fn not callable": (lambda r: (r.add_engine("bad"), r.add_kernel("softmax", "bad", "softmax")),
                        TypeError, r"add_kernel\('softmax', 'bad'\): fn must be callable, got 'softmax'"),
    "accepts not callable": (lambda r: (r.add_engine("bad"), r.add_kernel("softmax", "bad", _softmax,
                                                                          accepts="axis 0 unsupported")),
                             TypeError, r"add_kernel\('softmax', 'bad'\): accepts='axis 0 unsupported' must be a "
                                        r"callable \(call -> None or a reason string\) or None"),
    "compute_types a string": (lambda r: (r.add_engine("bad"), r.add_kernel("softmax", "bad", _softmax,
                                                                            compute_types="f32")),
                               TypeError, r"add_kernel\('softmax', 'bad'\): compute_types='f32' must be a tuple "
                                          r"of compute type names"),
    "available neither": (lambda r: r.add_engine("bad", available="yes"),
                          TypeError, r"add_engine\('bad'\): available='yes' must be a bool or a callable "
                                     r"returning \(bool, reason\)"),
    "reason not a str": (lambda r: r.add_engine("bad", available=False, reason=None),
                         TypeError, r"add_engine\('bad'\): reason=None must be a str"),
    "native_type not a type": (lambda r: r.add_engine("bad", native_type=np.ones(2)),
                               TypeError, r"add_engine\('bad'\): native_type=array\(\[1., 1.\]\) must be a type"),
    "to_host not callable": (lambda r: r.add_engine("bad", to_host=np.ones(2)),
                             TypeError, r"add_engine\('bad'\): to_host=array\(\[1., 1.\]\) must be callable"),
    "reserved name": (lambda r: r.add_engine("recommend"), ValueError, r"engine name 'recommend' is reserved"),
}


@pytest.mark.parametrize("case", BAD_CALLS, ids=list(BAD_CALLS))
def test_a_bad_registry_call_fails_an_explicit_registration(case):
    body, kind, message = BAD_CALLS[case]
    before = _state()
    with pytest.raises(PluginError, match=rf"plugin 'Plugin[-0-9a-f]*' .*failed in polyeng_register: "
                                          rf"{kind.__name__}: {message}") as info:
        polyeng.register_backend(Plugin(body))
    assert type(info.value.__cause__) is kind
    assert _state() == before


@pytest.mark.parametrize("case", BAD_CALLS, ids=list(BAD_CALLS))
def test_a_bad_registry_call_leaves_an_autoloaded_engine_unavailable(case):
    body, kind, message = BAD_CALLS[case]
    pm = pluggy.PluginManager("polyeng")   # as entry points are loaded: the failure is a reason, not an error
    pm.add_hookspecs(hookspecs)
    pm.register(Plugin(body), name="badplugin")
    registry, errors = plugins._build(pm)
    assert type(errors["badplugin"]) is kind
    [(name, record)] = [(n, r) for n, r in registry.engines.items() if r.plugin == "badplugin"]
    available, reason = record.status()
    assert not available
    assert reason.startswith(f"plugin 'badplugin' failed to register: {kind.__name__}: ")
    assert re.search(message, reason)


# -- accepts returns something else than None or a str -------------------------------------------------
@pytest.mark.parametrize("returned", [True, False, 0, ["no"]], ids=["True", "False", "0", "list"])
def test_accepts_returning_a_non_string_leaves_the_engine_out_with_one_warning(backends, returned):
    asked = []

    def accepts(call):
        asked.append(call.args["x"].shape)
        return returned

    backends(Plugin(lambda r: (r.add_engine("boolish"), r.add_kernel("softmax", "boolish", _softmax,
                                                                      accepts=accepts))))
    reason = f"accepts returned {returned!r}; it must return None (accept) or a str (the reason to reject)"
    with polyeng.compute_eng("boolish"):
        with pytest.warns(PluginWarning, match=rf"engine 'boolish' left out of softmax: {re.escape(reason)}"):
            decision = polyeng.explain("softmax", X)
        assert decision.engine != "boolish"
        assert {c.engine: (c.verdict, c.reason) for c in decision.candidates}["boolish"] == ("rejected", reason)
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginWarning)   # said once is enough
            y = polyeng.softmax(np.ones((4, 5), np.float32))
        np.testing.assert_allclose(y, 0.2, rtol=1e-6)   # ran elsewhere: _softmax would return its input
    assert asked == [(2, 3), (4, 5)]
    with polyeng.compute_eng("boolish", fallback=False):
        with pytest.raises(polyeng.EngineError, match=rf"rejected: {re.escape(reason)}"):
            polyeng.softmax(np.ones((5, 4), np.float32))


def test_accepts_returning_a_reason_string_or_none_is_not_warned_about(backends):
    def axis_1_only(call):
        return "axis 0 unsupported" if call.args["axis"] == 0 else None

    backends(Plugin(lambda r: (r.add_engine("stringy"), r.add_kernel("softmax", "stringy", _softmax,
                                                                      accepts=axis_1_only))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        with polyeng.compute_eng("stringy"):
            assert polyeng.explain("softmax", X, axis=0).engine != "stringy"
            assert polyeng.explain("softmax", X, axis=1).engine == "stringy"


# -- the autoload switch --------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, enabled", [("", True), (" ", True), ("0", True), ("false", True), ("No", True),
                                          ("off", True), ("1", False), ("TRUE", False), ("yes", False),
                                          (" on ", False)])
def test_the_autoload_switch_takes_the_usual_spellings(monkeypatch, raw, enabled):
    monkeypatch.setenv("POLYENG_DISABLE_PLUGIN_AUTOLOAD", raw)
    assert plugins.autoload_enabled() is enabled


@pytest.mark.parametrize("raw", ["maybe", "2", "disable"])
def test_the_autoload_switch_refuses_other_values(monkeypatch, raw):
    monkeypatch.setenv("POLYENG_DISABLE_PLUGIN_AUTOLOAD", raw)
    with pytest.raises(ValueError, match=rf"POLYENG_DISABLE_PLUGIN_AUTOLOAD='{raw}' is not a switch; expected "
                                         r"1, true, yes or on \(autoload off\), or 0, false, no, off or empty "
                                         r"\(autoload on\)"):
        plugins.autoload_enabled()
