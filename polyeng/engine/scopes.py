"""``Scoped``: a context manager that sets a ContextVar for the ``with`` block.

The reset tokens live in a ContextVar too, so one instance may be entered by several
threads or asyncio tasks at once, each restoring its own value.
"""
from __future__ import annotations

import contextvars

_open: contextvars.ContextVar[tuple] = contextvars.ContextVar("polyeng_open_scopes", default=())


class Scoped:
    """Base for ``compute_eng``, ``fp_math_mode`` and ``verbose``: subclasses set ``_var`` and ``value``."""

    _var: contextvars.ContextVar
    value: object

    def _entered_value(self):
        return self.value

    def __enter__(self):
        token = self._var.set(self._entered_value())
        _open.set(_open.get() + ((self, token),))
        return self

    def __exit__(self, *exc):
        stack = _open.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is self:
                self._var.reset(stack[i][1])
                _open.set(stack[:i] + stack[i + 1:])
                break
        return False
