"""``Scoped``: a context manager that sets a ContextVar for the ``with`` block.

The open scopes live in a ContextVar too, each with the value its variable had before, so one
instance may be entered by several threads or asyncio tasks at once, each restoring its own
value. A signal-raised exception (Ctrl-C) may land between any two bytecodes (Python runs
signal handlers at calls, function starts and backward jumps), so entering and leaving are
written to leave every setting as it was wherever one lands: leaving is taken no signal on its
first instruction and redone when one interrupts it (``signal_safe``).

Scopes need not close in the order they opened: a generator's scope stays open across its
``yield`` while its consumer opens and closes its own, and may close while the consumer's is
still open. Closing one scope leaves the others as they are (see ``_close``).
"""
from __future__ import annotations

import contextlib
import contextvars
import sys

from .signal_safe import entered_without_signal_check, settle

_open: contextvars.ContextVar[tuple] = contextvars.ContextVar("polyeng_open_scopes", default=())
_CONTEXTLIB = contextlib.__file__
# functions that open scopes on their caller's behalf (``Settings.__enter__``): like contextlib's
# frames, the with statement's frame is further up
PASS_THROUGH: set = set()


class Scoped:
    """Base for ``compute_eng``, ``fp_math_mode`` and ``verbose``: subclasses set ``_var`` and ``value``."""

    _var: contextvars.ContextVar
    value: object

    def _entered_value(self):
        return self.value

    def __enter__(self):
        var, value = self._var, self._entered_value()
        previous, opened = var.get(), _open.get()
        # the id of the frame of the with statement (not the frame: kept in a context, that
        # could keep its locals alive), past contextlib's (ExitStack.enter_context); _close
        # tells scopes left open by a skipped close by it
        caller = sys._getframe(1)
        while (caller.f_code.co_filename == _CONTEXTLIB or caller.f_code in PASS_THROUGH) and caller.f_back is not None:
            caller = caller.f_back
        frame = id(caller)
        try:   # a with statement does not call __exit__ when __enter__ raises: undone here
            _open.set(opened + ((self, var, previous, value, frame),))
            var.set(value)
        except BaseException:
            var.set(previous)
            _open.set(opened)
            raise
        return self

    @entered_without_signal_check
    def __exit__(self, *exc):
        # A with statement does not call __exit__ again when it raises, so a signal landing in
        # here is caught, the close (idempotent) redone, and the signal's exception raised after
        # (``settle``). No signal is taken on this method's first instruction, so one cannot skip
        # the close either (``signal_safe``; on interpreters where that cannot be arranged, the
        # next enclosing scope to close closes this one too: see ``_close``).
        settle(close_scopes, (self,), [])
        return False


def close_scopes(scopes, entries: list) -> None:
    """Close the innermost open entry of each of ``scopes`` (in opening order), the last opened
    first. Redone after a signal: the entries found the first time are kept in ``entries`` and
    closing an entry twice does nothing."""
    if len(entries) != len(scopes):
        entries[:] = [_entry_of(scope) for scope in scopes]
    for entry in reversed(entries):
        if entry:
            _close(entry)


def _entry_of(scope) -> tuple:
    """The innermost open entry ``(scope, var, previous value, value, frame id)`` of ``scope``;
    () when it is not open."""
    stack = _open.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is scope:
            return stack[i]
    return ()


def _close(entry: tuple) -> None:
    """Close ``entry``, and the scopes opened after it that are still open only because a signal
    skipped their ``__exit__``: those opened in its own with statement's frame or in frames that
    have returned since. Scopes opened after it by a frame still running further up the stack
    (a generator's consumer, while the generator closes its scope) stay open, with their values.
    Every variable is set from the open scopes as they were (idempotent): closing an entry
    already closed does nothing, and a close redone after a signal gives the same result."""
    stack = _open.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is entry:
            newer = stack[i + 1:]
            callers = _callers_of(entry[4]) if newer else ()
            kept = tuple(e for e in newer if e[4] in callers)
            if not kept:
                for _, var, previous, _, _ in reversed(stack[i:]):
                    var.set(previous)
                _open.set(stack[:i])
                return
            # back to the values before ``entry`` opened, then the kept scopes reopened in order
            before = {}
            for _, var, previous, _, _ in stack[i:]:
                before.setdefault(var, previous)
            for var, previous in before.items():
                var.set(previous)
            reopened = []
            for scope, var, _, value, frame in kept:
                reopened.append((scope, var, var.get(), value, frame))
                var.set(value)
            _open.set(stack[:i] + tuple(reopened))
            return


def _callers_of(frame_id: int) -> frozenset:
    """The ids of the frames running further up the stack than the frame ``frame_id`` (empty when
    that frame is not running): only those can hold a scope open past the one it closes."""
    frame, ids = sys._getframe(1), []
    while frame is not None and id(frame) != frame_id:
        frame = frame.f_back
    if frame is not None:
        frame = frame.f_back
    while frame is not None:
        ids.append(id(frame))
        frame = frame.f_back
    return frozenset(ids)
