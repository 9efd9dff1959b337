"""Whether an op's output could ever be allocated, checked before any engine tries.

An output larger than the machine's memory (or than int64 can count in bytes) is the
caller's mistake, like a wrong shape: validation says so with a ValueError naming the
argument, instead of each engine in turn failing to allocate it at run time.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np


def physical_memory() -> int:
    """The machine's memory in bytes; where the OS does not say, the most a process can address."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):   # no sysconf (Windows), or no such name
        return sys.maxsize
    if pages <= 0 or page_size <= 0:   # -1: the OS does not know
        return sys.maxsize
    return pages * page_size


def check_output_size(shape, dtype, op: str, given: str) -> None:
    """Raise ValueError when an output of ``shape`` and ``dtype`` cannot be allocated here.

    ``given`` names what decided the shape, as the caller wrote it (``"scale_factor=1000000.0"``,
    ``"a (1000000, 1) and b (1, 1000000)"``): the message starts with it. It may be a function
    returning that text, for callers on the per-call path: it is built only for the error.
    """
    nbytes = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize   # Python ints: exact
    limit = min(physical_memory(), sys.maxsize)
    if nbytes > limit:
        given = given() if callable(given) else given
        raise ValueError(
            f"{given}: {op}'s output would have shape {tuple(int(s) for s in shape)} of "
            f"{np.dtype(dtype).name}, {nbytes} bytes ({_readable(nbytes)}), more than this machine "
            f"could allocate ({_readable(limit)}); expected an output that fits in memory")


def _readable(nbytes: int) -> str:
    if nbytes >= 1024 ** 7:   # past float's range too (scale_factor=1e300): whole EiB, in int arithmetic
        return f"{nbytes // 1024 ** 6} EiB"
    value, unit = float(nbytes), "bytes"
    for larger in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{nbytes} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
