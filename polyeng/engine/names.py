"""The ``Engine`` enum of built-in engine names and name normalisation."""
from __future__ import annotations

import enum


class Engine(str, enum.Enum):
    """Built-in engine names. Anywhere an engine is taken, a case-insensitive string works too."""

    RECOMMEND = "recommend"
    BASIC = "basic"
    NUMBA = "numba"
    OPENCL = "opencl"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            lowered = value.strip().lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None

    __format__ = str.__format__


def engine_name(value) -> str:
    """The lowercase name of an engine given as ``Engine`` or a string (not checked against the registry)."""
    if isinstance(value, Engine):
        return value.value
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    raise TypeError(f"engine={value!r} is not an engine; expected a polyeng.Engine member or an engine name string")
