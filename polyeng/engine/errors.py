"""The exceptions and warnings polyeng raises about engines."""


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
