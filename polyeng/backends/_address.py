"""An array's data address, as ``array.ctypes.data`` gives it, in a seventh of its time; and a C
library function's address (``c_function``), for compiled code that calls it.

``ndarray.ctypes`` builds a helper object on every access (about 1.5 us); a oneDNN primitive's
run reads the address of each of its arguments, a few per graph node. numpy's array struct
begins, after the object header (reference count and type), with its data pointer, and has
since numpy 1.7; ``address`` reads it there (about 0.2 us). The layout is checked against
``ctypes.data`` on a few arrays when this module loads; where it differs (another Python build
or implementation) ``address`` is ``ctypes.data`` itself.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

_from_address = ctypes.c_void_p.from_address
_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)   # ob_refcnt, ob_type


def _slow(array) -> int:
    return array.ctypes.data


def _fast(array) -> int:
    if type(array) is np.ndarray:
        return _from_address(id(array) + _OFFSET).value or 0
    return array.ctypes.data


def _layout_holds() -> bool:
    probes = [np.empty(3, np.float32), np.zeros((4, 5))[1:, 2:], np.arange(6)[::2], np.ones((2, 3), order="F").T]
    try:
        return all(_fast(p) == p.ctypes.data for p in probes)
    except (ValueError, OSError, OverflowError):
        return False


address = _fast if _layout_holds() else _slow


def c_function(name: str) -> int:
    """The address of the C library's function ``name``, 0 where it has none (and on Windows,
    where ``ctypes.CDLL(None)`` does not open the process's own symbols)."""
    if os.name != "posix":
        return 0
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except (OSError, AttributeError, TypeError):
        return 0
