"""``Scoped``: a context manager that sets a ContextVar for the ``with`` block.

The open scopes live in a ContextVar too, each with the value its variable had before, so one
instance may be entered by several threads or asyncio tasks at once, each restoring its own
value. A signal-raised exception (Ctrl-C) may land between any two bytecodes (Python runs
signal handlers at calls, function starts and backward jumps), so entering and leaving are
written to leave every setting as it was wherever one lands.
"""
from __future__ import annotations

import contextvars

_open: contextvars.ContextVar[tuple] = contextvars.ContextVar("polyeng_open_scopes", default=())
_ATTEMPTS = 4   # a close interrupted by a signal is redone; a fifth signal in a row goes through


class Scoped:
    """Base for ``compute_eng``, ``fp_math_mode`` and ``verbose``: subclasses set ``_var`` and ``value``."""

    _var: contextvars.ContextVar
    value: object

    def _entered_value(self):
        return self.value

    def __enter__(self):
        var, value = self._var, self._entered_value()
        previous, opened = var.get(), _open.get()
        try:   # a with statement does not call __exit__ when __enter__ raises: undone here
            _open.set(opened + ((self, var, previous),))
            var.set(value)
        except BaseException:
            var.set(previous)
            _open.set(opened)
            raise
        return self

    def __exit__(self, *exc):
        # A with statement does not call __exit__ again when it raises, so a signal landing in
        # here is caught, the close (idempotent) redone, and the signal's exception raised after.
        # Nothing before the try runs a signal handler. A signal on the first instruction, before
        # any code here runs, skips this method: the next enclosing scope to close closes this
        # one too (see ``_close``); only the outermost scope's is left open then.
        entry = interrupt = None
        attempts = 0
        while attempts < _ATTEMPTS:
            attempts += 1
            try:
                if entry is None:
                    entry = _entry_of(self)
                _close(entry)
                break
            except BaseException as caught:
                interrupt = caught
        if interrupt is not None:
            raise interrupt
        return False


def _entry_of(scope) -> tuple:
    """The innermost open entry ``(scope, var, previous value)`` of ``scope``; () when it is not open."""
    stack = _open.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is scope:
            return stack[i]
    return ()


def _close(entry: tuple) -> None:
    """Restore the variable of ``entry``, and those of the scopes opened after it and still open
    (whose ``__exit__`` a signal skipped), newest first; then drop them from the open scopes.
    Closing an entry already closed does nothing."""
    stack = _open.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is entry:
            for _, var, previous in reversed(stack[i:]):
                var.set(previous)
            _open.set(stack[:i])
            return
