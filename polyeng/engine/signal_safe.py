"""Undoing a change so that no signal can skip it, and numpy's error state set without a change
to undo.

A Python-level signal handler (Ctrl-C's KeyboardInterrupt, an alarm) runs where the interpreter
looks for pending signals: at calls, at backward jumps, and at the first instruction of every
Python function. A ``try``/``finally`` therefore does not protect an ``__exit__`` or a helper
called from ``finally``: the signal can land on the helper's first instruction, before any of
its code runs, and the undo is skipped.

- ``entered_without_signal_check(function)``: CPython 3.11 to 3.14 look for signals at a
  function's start because its first instruction is ``RESUME`` with argument 0 ("function
  start"); with argument 2 ("after yield from"), which is otherwise the same instruction, they do
  not. The decorator rewrites that one argument, so that the function's first statement runs
  whatever is pending; where the first statement is ``try`` (or a call of another function made
  this way), an undo cannot be skipped. Other interpreters keep the function as it is.
- ``settle(fn, *args)``: ``fn(*args)`` redone when a signal interrupts it (up to ``ATTEMPTS``
  times), the signal's exception raised once it has run. ``fn`` must give the same result when
  run again (restoring a saved value does).
- ``quietly(fn, *args, **errstate)``: ``fn(*args)`` with numpy's error state set as
  ``np.errstate(**errstate)`` would, in a copy of the current context: the caller's state is
  never changed, so there is nothing for a signal to leave changed (numpy >= 2 keeps the state in
  a context variable; with an older numpy this is ``with np.errstate``).
"""
from __future__ import annotations

import contextvars
import dis
import sys

import numpy as np

ATTEMPTS = 4
_RESUME = dis.opmap.get("RESUME")
_PREFIX = {dis.opmap[name] for name in ("MAKE_CELL", "COPY_FREE_VARS", "NOP") if name in dis.opmap}
PATCHED = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 14) and _RESUME is not None


def entered_without_signal_check(function):
    """``function`` with no check for pending signals at its first instruction (see above)."""
    if not PATCHED:
        return function
    code = function.__code__
    raw = bytearray(code.co_code)
    for i in range(0, len(raw), 2):
        if raw[i] == _RESUME:
            if raw[i + 1] == 0:
                raw[i + 1] = 2
                function.__code__ = code.replace(co_code=bytes(raw))
            return function
        if raw[i] not in _PREFIX:
            return function
    return function


@entered_without_signal_check
def settle(fn, *args, _left=ATTEMPTS):
    try:
        fn(*args)
    except BaseException as caught:
        if _left > 1:   # no check for signals between here and the next attempt's try
            settle(fn, *args, _left=_left - 1)
        raise caught


try:   # numpy >= 2 keeps its error state in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar as error_state
except Exception:   # an older numpy: a thread's global state
    error_state = None


def quietly(fn, *args, **errstate):
    if error_state is None:
        with np.errstate(**errstate):
            return fn(*args)
    return contextvars.copy_context().run(_witherror_state, errstate, fn, args)


def _witherror_state(errstate, fn, args):
    np.seterr(**errstate)
    return fn(*args)
