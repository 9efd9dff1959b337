"""Verbose output: one oneDNN-style line per op call through the ``polyeng`` logger."""
from __future__ import annotations

import contextvars
import logging
import os

from .dtypes import short_name
from .scopes import Scoped

logger = logging.getLogger("polyeng")
ENV_VERBOSE = "POLYENG_VERBOSE"

_level: contextvars.ContextVar[int | None] = contextvars.ContextVar("polyeng_verbose", default=None)
_env_level: int | None = None


def _parse(value, where: str) -> int:
    try:
        level = int(str(value).strip() or 0)
    except ValueError:
        level = -1
    if level not in (0, 1, 2):
        raise ValueError(f"{where}={value!r} is not a verbose level; expected 0, 1 or 2")
    return level


def level() -> int:
    global _env_level
    scoped = _level.get()
    if scoped is not None:
        return scoped
    if _env_level is None:
        _env_level = _parse(os.environ.get(ENV_VERBOSE, "0"), ENV_VERBOSE)
    return _env_level


class verbose(Scoped):
    """``with polyeng.verbose(1):`` prints one line per op call (2 adds dispatch lines)."""

    _var = _level

    def __init__(self, level: int = 1):
        self.level = self.value = _parse(level, "level")


def _emit(line: str) -> None:
    # Verbose was asked for, so an unconfigured logger gets a level and a handler; a level
    # or handlers the application set are left alone.
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not logger.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.info(line)


def describe_value(name: str, value) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return f"{name}:{value!r}".replace(",", ";")
    dims = "x".join(str(d) for d in shape) or "scalar"
    return f"{name}:{short_name(dtype)}:{dims}"


def describe_args(tensors: dict) -> str:
    return " ".join(describe_value(name, value) for name, value in tensors.items())


def exec_line(op, engine, step, mode, compute, tensors, ms, note="") -> None:
    line = f"polyeng,exec,{op},{engine},{step},fpm:{mode},{compute},{describe_args(tensors)},{ms:.4f}"
    if note:
        line += f",{note}"
    _emit(line)


def dispatch_line(op, engine, verdict, reason) -> None:
    _emit(f"polyeng,dispatch,{op},{engine},{verdict},{reason.replace(',', ';')}")
