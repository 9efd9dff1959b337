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
from .scopes import PASS_THROUGH, Scoped, close_scopes
from .signal_safe import entered_without_signal_check, settle

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


class Settings:
    """A picklable snapshot of the settings in effect where it was taken: the engine preference
    (with its ``fallback``), the fp math mode, the verbose level and the thread budget of a
    ``num_threads`` scope (None where none is open: the process default of wherever the snapshot
    is entered applies, so a worker keeps the budget of its own cores), as plain values.

    ``with settings:`` runs the block under them, in any thread or process (a dask worker, a
    process pool): it opens a ``compute_eng``, an ``fp_math_mode``, a ``verbose`` and, when
    given, a ``num_threads`` scope. The engine is checked where the block opens, so a plugin
    engine missing there is a ValueError. One snapshot may be entered by several threads at once,
    and nested.
    """

    __slots__ = ("engine", "fallback", "fp_math_mode", "verbose", "num_threads", "_scopes")

    def __init__(self, engine: str = "recommend", fallback: bool = True, fp_math_mode: str = "strict",
                 verbose: int = 0, num_threads=None):
        from .fpmath import as_mode
        from .threads import _parse as threads
        from .verbose import _parse
        if not isinstance(fallback, (bool, np.bool_)):
            raise TypeError(f"fallback={fallback!r} is not a bool; expected True or False")
        self.engine = engine_name(engine)
        self.fallback = bool(fallback)
        self.fp_math_mode = as_mode(fp_math_mode, "fp_math_mode").value
        self.verbose = _parse(verbose, "verbose")
        self.num_threads = None if num_threads is None else threads(num_threads, "num_threads")
        self._scopes = None

    def __repr__(self) -> str:
        return (f"Settings(engine={self.engine!r}, fallback={self.fallback}, "
                f"fp_math_mode={self.fp_math_mode!r}, verbose={self.verbose}, num_threads={self.num_threads})")

    def _key(self) -> tuple:
        return (self.engine, self.fallback, self.fp_math_mode, self.verbose, self.num_threads)

    def __eq__(self, other):
        return self._key() == other._key() if isinstance(other, Settings) else NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):   # the values only: the scopes are made again where it is entered
        return (Settings, self._key())

    def __enter__(self):
        scopes = self._scopes
        if scopes is None:   # made on first use, in the process that uses them
            from .fpmath import fp_math_mode
            from .threads import num_threads
            from .verbose import verbose
            scopes = (compute_eng(self.engine, fallback=self.fallback), fp_math_mode(self.fp_math_mode),
                      verbose(self.verbose))
            if self.num_threads is not None:
                scopes += (num_threads(self.num_threads),)
            self._scopes = scopes
        entered = []
        try:
            for scope in scopes:
                scope.__enter__()
                entered.append(scope)
        except BaseException:
            settle(close_scopes, tuple(entered), [])
            raise
        return self

    @entered_without_signal_check
    def __exit__(self, *exc):
        settle(close_scopes, self._scopes, [])   # all of them, whatever signal lands (see scopes.py)
        return False


PASS_THROUGH.add(Settings.__enter__.__code__)


def current_settings() -> Settings:
    """The engine, fp math mode, verbose level and scoped thread budget in effect here, as a
    picklable :class:`Settings`."""
    from .fpmath import get_fp_math_mode
    from .threads import scoped_num_threads
    from .verbose import level
    scope = current_scope()
    return Settings(scope.engine, scope.fallback, get_fp_math_mode().value, level(), scoped_num_threads())


class Bound:
    """``fn`` with a :class:`Settings` snapshot: calling it runs ``fn`` under those settings, in a
    copy of the calling thread's context (nothing it sets is left behind there). It pickles
    when ``fn`` does, so it can be sent to processes and cluster workers."""

    __slots__ = ("fn", "settings", "__dict__")

    def __init__(self, fn, settings: Settings):
        if not callable(fn):
            raise TypeError(f"fn={fn!r} is not callable")
        self.fn = fn
        self.settings = settings
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        return contextvars.copy_context().run(self._run, args, kwargs)

    def _run(self, args, kwargs):
        with self.settings:
            return self.fn(*args, **kwargs)

    def __reduce__(self):
        return (Bound, (self.fn, self.settings))

    def __repr__(self) -> str:
        return f"polyeng.bind({self.fn!r}) under {self.settings!r}"


def bind(fn) -> Bound:
    """Wrap ``fn`` so it runs under the engine, fp math, verbose and thread settings in effect now.

    For thread pools, process pools and dask workers, which do not inherit the caller's
    settings. The result holds a plain :class:`Settings` snapshot and pickles when ``fn`` does.
    """
    return Bound(fn, current_settings())
