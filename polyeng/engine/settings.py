"""The user's engine preference: ``compute_eng`` scopes over contextvars and the process default.

This is step 3 ("user engine") of the selection priority; see ``selector.choose_engine``.
"""
from __future__ import annotations

import contextvars
import functools
import os
from dataclasses import dataclass

import numpy as np

from .names import Engine, engine_name
from .scopes import Scoped

ENV_COMPUTE_ENG = "POLYENG_COMPUTE_ENG"


@dataclass(frozen=True)
class EngineScope:
    engine: str           # lowercase name, "recommend" for no preference
    fallback: bool = True


_scope: contextvars.ContextVar[EngineScope | None] = contextvars.ContextVar("polyeng_compute_eng", default=None)
_default: EngineScope | None = None   # None: not yet read from the environment


def check_engine(value, where: str = "engine") -> str:
    """Normalise ``value`` to a registered engine name, or raise ValueError listing them."""
    name = engine_name(value)
    if name == Engine.RECOMMEND.value:
        return name
    from .plugins import registry
    names = list(registry().engines)
    if name not in names:
        raise ValueError(f"{where}={value!r} is not a registered engine; expected one of "
                         f"{', '.join(['recommend'] + names)}")
    return name


def default_scope() -> EngineScope:
    global _default
    if _default is None:
        raw = os.environ.get(ENV_COMPUTE_ENG, "").strip()
        _default = EngineScope(check_engine(raw, ENV_COMPUTE_ENG) if raw else Engine.RECOMMEND.value)
    return _default


def current_scope() -> EngineScope:
    """The innermost ``compute_eng`` scope, else the process default."""
    return _scope.get() or default_scope()


def set_compute_eng(engine) -> None:
    """Set the process-wide default engine (step 3 of the priority, below any ``compute_eng`` scope)."""
    global _default
    _default = EngineScope(check_engine(engine))


def get_compute_eng() -> str:
    """The name of the engine in effect here: the innermost ``compute_eng`` scope, else the default."""
    return current_scope().engine


class compute_eng(Scoped):
    """Prefer ``engine`` for op calls inside the ``with`` block (step 3 of the priority).

    Special-argument constraints (step 1) and device-tensor layout (step 2) still outrank
    it. ``fallback=False`` pins the engine: only it runs the calls (device tensors of other
    engines are brought to the host for it), and a call it cannot run raises ``EngineError``
    instead of running on another engine. Scopes nest and are private to their thread / task.
    """

    _var = _scope

    def __init__(self, engine, *, fallback: bool = True):
        if not isinstance(fallback, (bool, np.bool_)):   # fallback="no" would mean True
            raise TypeError(f"fallback={fallback!r} is not a bool; expected True or False")
        self.scope = self.value = EngineScope(check_engine(engine), bool(fallback))

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with compute_eng(self.scope.engine, fallback=self.scope.fallback):
                return fn(*args, **kwargs)
        return wrapper


def _bound_vars() -> list[contextvars.ContextVar]:
    """Every ContextVar that a ``bind``-wrapped function carries into another thread."""
    from . import fpmath, verbose
    return [_scope, fpmath._mode, verbose._level]


def bind(fn):
    """Wrap ``fn`` so it runs under the engine, fp math and verbose settings in effect now.

    For thread pools and executors, whose threads do not inherit contextvars. Each call runs
    in a copy of the calling thread's context, so nothing it sets (nor a signal landing
    halfway) is left behind in that thread.
    """
    captured = [(var, var.get()) for var in _bound_vars()]

    @functools.wraps(fn)
    def bound(*args, **kwargs):
        context = contextvars.copy_context()
        context.run(_set_all, captured)
        return context.run(fn, *args, **kwargs)
    return bound


def _set_all(pairs) -> None:
    for var, value in pairs:
        var.set(value)
