"""The exceptions and warnings polyeng raises about engines."""
import threading
import warnings

_warned: dict = {}   # key -> an object whose id the key holds, kept alive so the id is not reused
_warned_lock = threading.Lock()


def warn_once(key, warning: Warning, stacklevel: int, keep=None) -> None:
    """Issue ``warning`` the first time ``key`` is seen in this process (per op, engine and
    reason: a failing kernel in a loop warns once, not per call). A key may hold the id of
    ``keep`` (an object that need not be hashable), which is then kept alive with it.
    ``stacklevel`` counts from the caller of this function, as ``warnings.warn``'s does."""
    with _warned_lock:
        if key in _warned:
            return
        _warned[key] = keep
    warnings.warn(warning, stacklevel=stacklevel + 1)


class EngineError(RuntimeError):
    """An engine the user insisted on (``fallback=False``) cannot run a call, or no engine can."""

    def __init__(self, engine: str, op: str, reason: str):
        self.engine, self.op, self.reason = engine, op, reason
        super().__init__(f"engine {engine!r} cannot run {op}: {reason}")


class FallbackWarning(RuntimeWarning):
    """A kernel failed at run time and the next candidate engine ran the call instead."""


class PluginError(ValueError):
    """A plugin given to ``register_backend`` failed in its ``polyeng_register`` hook; it was not registered."""


class PluginWarning(RuntimeWarning):
    """A plugin broke its contract during a call; polyeng left its engine out of that call."""
