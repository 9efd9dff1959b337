"""Constant arrays, and what a kernel derives from them once (reordered or permuted weights).

An array counts as constant when neither it nor any array it views can be written (a read-only
numpy array whose bases are read-only too, over memory of its own or ``bytes``): every constant of
a graph is such an array. An owner that makes its array writeable again and changes it breaks that
promise; polyeng's graphs never do.

``Derived`` keeps what a kernel computes from constant arrays, bounded (least recently used out),
with references to the arrays themselves so that their memory cannot be reused by other arrays
while the derived value is kept. Arrays that are not constant are derived from on every call.
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from ._address import address


def constant(a: np.ndarray) -> bool:
    """Whether ``a``'s data cannot change through numpy: it and every ndarray base are read-only, and
    the memory at the bottom is the array's own or immutable ``bytes`` (a view made through another
    object, ``as_strided``'s or an mmap's, may be of writeable memory)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None or type(a) is bytes


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class Derived:
    """Values derived from arrays, kept for constant ones: ``get(arrays, extra, make)`` is
    ``make()``, computed once per set of constant ``arrays`` (None entries allowed) and ``extra``
    (hashable: whatever else the value depends on)."""

    def __init__(self, limit: int = 256):
        self.limit = limit
        self._kept: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, arrays, extra, make):
        present = [a for a in arrays if a is not None]
        if not all(constant(a) for a in present):
            return make()
        key = (extra,) + tuple(None if a is None else (address(a), a.shape, a.strides, a.dtype.str)
                               for a in arrays)
        with self._lock:
            entry = self._kept.get(key)
            if entry is not None:
                self._kept.move_to_end(key)
                return entry[1]
        value = make()
        with self._lock:
            self._kept[key] = ([_root(a) for a in present], value)
            while len(self._kept) > self.limit:
                self._kept.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
