"""cast on NUMBA: the JIT conversion of ``_cast.py`` (one round-to-nearest-even, bit for bit as BASIC)."""
from __future__ import annotations

from ._cast import converted


def cast(p, x, dtype):
    return converted(x, dtype)
