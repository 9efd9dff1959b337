"""Finding engines: the plugin manager, entry points, and the registry built from them.

pluggy only *finds* engines; choosing a kernel is the selector's job.
"""
from __future__ import annotations

import inspect
import os
import threading

import pluggy

from . import hookspecs
from ..ops import catalogue
from .errors import PluginError
from .registry import Registry

ENTRY_POINT_GROUP = "polyeng.backends"
ENV_DISABLE_AUTOLOAD = "POLYENG_DISABLE_PLUGIN_AUTOLOAD"
HOOK = "polyeng_register"
# The values POLYENG_DISABLE_PLUGIN_AUTOLOAD may take: True turns autoload off.
_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False, "": False}
BUILTIN_BACKENDS = ("polyeng.backends.basic", "polyeng.backends.numba", "polyeng.backends.opencl",
                    "polyeng.backends.onednn")

_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_registry: Registry | None = None
_load_failures: dict[str, str] = {}   # entry-point name -> reason
# The device tensor types of the current registry's engines, kept here so that argument
# validation tells them from array-likes without building or asking the registry.
native_types: tuple = ()


def autoload_enabled() -> bool:
    """False when POLYENG_DISABLE_PLUGIN_AUTOLOAD turns entry-point loading off.

    A value that is not a switch is a user error (ValueError), raised when the plugin manager
    is built, as POLYENG_COMPUTE_ENG's is when the default engine is first read.
    """
    raw = os.environ.get(ENV_DISABLE_AUTOLOAD, "")
    disabled = _SWITCH.get(raw.strip().lower())
    if disabled is None:
        raise ValueError(f"{ENV_DISABLE_AUTOLOAD}={raw!r} is not a switch; expected 1, true, yes or on "
                         f"(autoload off), or 0, false, no, off or empty (autoload on)")
    return not disabled


def plugin_manager() -> pluggy.PluginManager:
    global _manager
    with _lock:
        if _manager is None:
            autoload = autoload_enabled()   # a bad value raises before anything is registered
            pm = pluggy.PluginManager("polyeng")
            pm.add_hookspecs(hookspecs)
            import importlib
            for module_name in BUILTIN_BACKENDS:
                pm.register(importlib.import_module(module_name), name=module_name)
            if autoload:
                _load_entry_points(pm)
            _manager = pm
        return _manager


def _declared_anywhere() -> bool:
    """False only where no installed distribution can declare a ``polyeng.backends`` entry point: no
    ``entry_points.txt`` in a ``*.dist-info`` or ``*.egg-info`` folder on ``sys.path`` (or the
    ``EGG-INFO`` folder of an ``.egg`` folder on it) names the group, every ``sys.path`` entry is a
    folder, and no finder but Python's own path finder lists distributions. Then
    ``importlib.metadata`` (about 3 MB of a process with the modules it imports) is not needed;
    otherwise it reads the entry points as ever."""
    import sys
    from importlib.machinery import PathFinder
    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return True
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):   # a zip or egg file: importlib.metadata reads inside it
                return True
            continue
        # what importlib.metadata looks in: *.dist-info and *.egg-info folders, and the EGG-INFO
        # folder of a sys.path entry that is an egg folder (a plugin installed as an .egg)
        is_egg = os.path.basename(os.path.normpath(folder)).lower().endswith(".egg")
        try:
            names = [e.name for e in os.scandir(folder)
                     if e.name.lower().endswith((".dist-info", ".egg-info")) or is_egg and e.name.lower() == "egg-info"]
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as file:
                    if ENTRY_POINT_GROUP.encode() in file.read():
                        return True
            except OSError:   # no entry points, or an egg-info file
                continue
    return False


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    try:
        if not _declared_anywhere():
            return
        from importlib import metadata
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
    _publish(_build(plugin_manager())[0])


def _publish(reg: Registry) -> None:
    global _registry, native_types
    _registry = reg
    native_types = reg.native_types()


def _build(pm: pluggy.PluginManager) -> tuple[Registry, dict]:
    """A registry from every plugin's hook, and the exception each failing hook raised (by plugin name)."""
    reg = Registry(catalogue.specs())
    errors = {}
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
            errors[plugin_name] = exc
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
    return reg, errors


def _add_failure_record(reg: Registry, plugin_name: str, reason: str) -> None:
    """An unavailable engine row saying why a plugin provides nothing."""
    name = plugin_name if plugin_name not in reg.engines else f"{plugin_name}-plugin"
    if name not in reg.engines:
        reg.add_engine(name, available=False, reason=reason).plugin = plugin_name


def register_backend(plugin, name: str | None = None) -> None:
    """Register an object carrying a ``polyeng_register`` hook implementation, and its engines.

    Unlike an entry point (lenient: a failure leaves an unavailable engine), an explicit
    registration fails loudly: a plugin whose hook raises is not registered, and the
    PluginError says why (the hook's exception is its cause).
    """
    with _lock:
        pm = plugin_manager()
        _check_plugin(pm, plugin)
        if pm.is_registered(plugin):
            raise ValueError(f"register_backend: {plugin!r} is already registered (as {pm.get_name(plugin)!r})")
        if name is None:
            name = getattr(plugin, "__name__", type(plugin).__name__)
            if pm.has_plugin(name):
                name = f"{name}-{id(plugin):x}"
        elif pm.has_plugin(name):
            raise ValueError(f"register_backend: name={name!r} is already taken by {pm.get_plugin(name)!r}")
        try:
            pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise TypeError(f"register_backend: {plugin!r} does not match the polyeng hook specs: {exc}") from exc
        # Built aside and published only if the new plugin's hook succeeds, so a failure leaves
        # the registry (and its decision cache) exactly as it was.
        try:
            reg, errors = _build(pm)
        except BaseException:   # an interrupt inside a hook: not registered either
            pm.unregister(name=name)
            raise
        error = errors.get(name)
        if error is not None:
            pm.unregister(name=name)
            raise PluginError(f"register_backend: plugin {name!r} ({plugin!r}) failed in {HOOK}: "
                              f"{type(error).__name__}: {error}; it was not registered") from error
        _publish(reg)


def _check_plugin(pm: pluggy.PluginManager, plugin) -> None:
    """TypeError unless ``plugin`` carries a ``polyeng_register`` that pluggy would call correctly."""
    if not hasattr(plugin, HOOK) or pm.parse_hookimpl_opts(plugin, HOOK) is None:
        kind = "class" if isinstance(plugin, type) else type(plugin).__name__
        raise TypeError(f"register_backend: plugin={plugin!r} ({kind}) is not a polyeng plugin; expected an "
                        f"object (or module) with a {HOOK}(registry) hook implementation marked with "
                        f"@polyeng.hookimpl")
    # pluggy reads a class's method unbound, so the hook would be called without ``self``
    if isinstance(plugin, type) and inspect.isfunction(inspect.getattr_static(plugin, HOOK)):
        raise TypeError(f"register_backend: plugin={plugin!r} is a class whose {HOOK} is an instance method; "
                        f"pass an instance, register_backend({plugin.__name__}())")


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
