"""What the command line prints besides its results: one-line errors for bad arguments and
settings, the interruption message, and the library's notices (a cold numba compile) on stderr.

A bad argument or environment variable is the user's mistake: one line, exit status 2. Any
other exception is a bug of polyeng and keeps its traceback, so the two are told apart on
purpose: settings are read here, before a command runs, and commands raise ``UsageError``
for what they reject (the benchmark harness, ``polyeng.bench.BenchError``).
"""
from __future__ import annotations

import _thread
import contextlib
import gc
import logging
import signal
import sys
import threading
import warnings

USAGE_EXIT = 2
INTERRUPTED_EXIT = 130   # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
NOTICE_LOGGER = "polyeng.compile"


class UsageError(Exception):
    """A bad argument or setting; its message is the one line the user sees."""


def error(message: str, prog: str = "polyeng") -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return USAGE_EXIT


def check_environment() -> None:
    """Read every POLYENG_* setting now, so a bad value is a ``UsageError`` before any work.

    The library raises ValueError (or TypeError) naming the variable when it first reads one;
    read later, inside a command, the same error could not be told from a bug.
    """
    from ..engine import fpmath, settings, threads, verbose
    from ..engine.plugins import autoload_enabled
    for read in (autoload_enabled, verbose.level, fpmath.default_mode, settings.default_scope, threads.get_num_threads):
        try:
            read()
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None


class _StderrNotices(logging.Handler):
    """Writes a notice as ``polyeng: <message>`` to the current ``sys.stderr``, first clearing a
    progress bar that may be on the terminal's last line."""

    def emit(self, record):
        try:
            stream = sys.stderr
            clear = "\r\x1b[K" if getattr(stream, "isatty", lambda: False)() else ""
            stream.write(f"{clear}polyeng: {record.getMessage()}\n")
            stream.flush()
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def notices(show: bool = True):
    """Shows the library's INFO notices (``polyeng.compile``) on stderr while a command runs, and
    its FallbackWarnings as one line each (not Python's two, with a source line of polyeng).

    The library logs notices at INFO so that applications see them only if they ask; a command
    line user waiting on a first call should be told why it is slow.
    """
    from ..engine.errors import FallbackWarning
    logger = logging.getLogger(NOTICE_LOGGER)
    saved = logger.level, logger.propagate
    handler = _StderrNotices()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if show else logging.WARNING)
    logger.propagate = False   # not printed a second time by a handler verbose output installs
    shown = warnings.showwarning

    def show_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FallbackWarning):
            print(f"polyeng: warning: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)
    warnings.showwarning = show_warning
    try:
        yield
    finally:
        warnings.showwarning = shown
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


class _Redelivery:
    """Ctrl-C that lands while C code runs a Python callback (numba's LLVM object cache calls one
    for every function it compiles) raises KeyboardInterrupt inside that callback, where ctypes
    prints "Exception ignored" and drops it: the command would go on as if never interrupted.
    While ``interrupts_kept()`` is active such a dropped KeyboardInterrupt is not printed, and the
    main thread is interrupted again (every ``RETRY_S`` until ``main`` has caught one).

    Once ``main`` has caught an interrupt, what an object half built when it landed raises as it is
    destroyed (llvmlite's ``OutputString.__del__`` reading an attribute its ``__init__`` never set)
    is not printed either: the command was stopped, and that is all the user is told."""

    RETRY_S = 0.2

    def __init__(self):
        self.caught = threading.Event()
        self.interrupted = False
        self.thread = None

    def hook(self, unraisable, previous):
        if self.interrupted:
            return None
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            return previous(unraisable)
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._interrupt, name="polyeng-interrupt", daemon=True)
            self.thread.start()

    def _interrupt(self):
        while not self.caught.wait(self.RETRY_S):
            _thread.interrupt_main(signal.SIGINT)

    def stop(self):
        """No interrupt after this one: the thread ends, and one it sent just before is taken here."""
        self.interrupted = True
        self.caught.set()
        if self.thread is not None:
            self.thread.join()
            try:
                _settle()   # a Python call: an interrupt still pending is raised at its start
            except KeyboardInterrupt:
                pass


def _settle():
    return None


@contextlib.contextmanager
def interrupts_kept():
    """Yields a callable that ``main`` calls when it has caught a KeyboardInterrupt; see
    ``_Redelivery`` for the interrupts it keeps from being lost."""
    redelivery = _Redelivery()
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: redelivery.hook(unraisable, previous)
    try:
        yield redelivery.stop
    finally:
        redelivery.caught.set()
        if redelivery.interrupted:   # objects the interrupt left half built are destroyed while the hook stands
            gc.collect()
        sys.unraisablehook = previous

