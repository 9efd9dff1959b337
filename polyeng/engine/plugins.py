"""Finding engines: the plugin manager, entry points, and the registry built from them.

pluggy only *finds* engines; choosing a kernel is the selector's job.
"""
from __future__ import annotations

import os
import threading
from importlib import metadata

import pluggy

from . import hookspecs
from .call import OPS
from .registry import DuplicateEngineError, Registry

ENTRY_POINT_GROUP = "polyeng.backends"
BUILTIN_BACKENDS = ("polyeng.backends.basic", "polyeng.backends.numba", "polyeng.backends.opencl")

_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_registry: Registry | None = None
_load_failures: dict[str, str] = {}   # entry-point name -> reason
_duplicates: dict[str, str] = {}      # plugin name -> "engine X is already registered"
# The device tensor types of the current registry's engines, kept here so that argument
# validation tells them from array-likes without building or asking the registry.
native_types: tuple = ()


def autoload_enabled() -> bool:
    """False when POLYENG_DISABLE_PLUGIN_AUTOLOAD turns entry-point loading off."""
    return os.environ.get("POLYENG_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower() not in ("1", "true", "yes", "on")


def plugin_manager() -> pluggy.PluginManager:
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager("polyeng")
            pm.add_hookspecs(hookspecs)
            import importlib
            for module_name in BUILTIN_BACKENDS:
                pm.register(importlib.import_module(module_name), name=module_name)
            if autoload_enabled():
                _load_entry_points(pm)
            _manager = pm
        return _manager


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    try:
        entry_points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # a broken metadata install must not break import polyeng
        _load_failures["<entry points>"] = f"could not read entry points: {exc}"
        return
    for ep in entry_points:
        if pm.has_plugin(ep.name):
            continue
        try:
            plugin = ep.load()
            if isinstance(plugin, type):
                plugin = plugin()
            pm.register(plugin, name=ep.name)
        except Exception as exc:
            _load_failures[ep.name] = f"plugin {ep.value!r} failed to load: {type(exc).__name__}: {exc}"


def registry() -> Registry:
    """The current registry, built on first use."""
    reg = _registry
    if reg is None:
        with _lock:
            if _registry is None:
                _rebuild()
            reg = _registry
    return reg


def _rebuild() -> None:
    global _registry, native_types
    pm = plugin_manager()
    reg = Registry(set(OPS))
    _duplicates.clear()
    # Hook implementations are called one by one (not as one hook call) so that one plugin's
    # failure cannot hide the others; hookwrappers and tryfirst/trylast are not used here.
    for impl in pm.hook.polyeng_register.get_hookimpls():  # registration order
        plugin_name = impl.plugin_name
        before = set(reg.engines)
        reg._plugin = plugin_name
        try:
            impl.function(registry=reg)
        except Exception as exc:
            reason = f"plugin {plugin_name!r} failed to register: {type(exc).__name__}: {exc}"
            if isinstance(exc, DuplicateEngineError):
                _duplicates[plugin_name] = str(exc)
            added = [n for n in reg.engines if n not in before]
            for name in added:
                reg.engines[name].mark_failed(reason)
            if not added:
                _add_failure_record(reg, plugin_name, reason)
        finally:
            reg._plugin = ""
    # entry points that could not even be imported; built-in names are never shadowed
    for name, reason in _load_failures.items():
        _add_failure_record(reg, name, reason)
    _registry = reg
    native_types = reg.native_types()


def _add_failure_record(reg: Registry, plugin_name: str, reason: str) -> None:
    """An unavailable engine row saying why a plugin provides nothing."""
    name = plugin_name if plugin_name not in reg.engines else f"{plugin_name}-plugin"
    if name not in reg.engines:
        reg.add_engine(name, available=False, reason=reason).plugin = plugin_name


def register_backend(plugin, name: str | None = None) -> None:
    """Register an object carrying ``polyeng_register`` hook implementations."""
    with _lock:
        pm = plugin_manager()
        if name is None:
            name = getattr(plugin, "__name__", type(plugin).__name__)
            if pm.has_plugin(name):
                name = f"{name}-{id(plugin):x}"
        pm.register(plugin, name=name)
        _rebuild()
        if name in _duplicates:
            reason = _duplicates[name]
            pm.unregister(name=name)
            _rebuild()
            raise ValueError(f"register_backend: {reason}")


def unregister_backend(plugin) -> None:
    """Remove a plugin registered with ``register_backend`` and its engines."""
    with _lock:
        pm = plugin_manager()
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        elif isinstance(plugin, str) and pm.has_plugin(plugin):
            pm.unregister(name=plugin)
        else:
            raise ValueError(f"unregister_backend: {plugin!r} is not registered")
        _rebuild()
