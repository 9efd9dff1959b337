"""The ``Engine`` enum of built-in engine names and name normalisation."""
from __future__ import annotations

import enum


class NameEnum(str, enum.Enum):
    """An enum of names that prints, formats and compares as its value (``Engine.NUMBA == "numba"``)."""

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


class Engine(NameEnum):
    """Built-in engine names. Anywhere an engine is taken, a case-insensitive string works too."""

    RECOMMEND = "recommend"
    BASIC = "basic"
    NUMBA = "numba"
    OPENCL = "opencl"
    ONEDNN = "onednn"

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            lowered = value.strip().lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None


def engine_name(value) -> str:
    """The lowercase name of an engine given as ``Engine`` or a string (not checked against the registry)."""
    if isinstance(value, Engine):
        return value.value
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    raise TypeError(f"engine={value!r} is not an engine; expected a polyeng.Engine member or an engine name string")
