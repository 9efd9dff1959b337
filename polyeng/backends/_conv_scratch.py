"""Scratch arrays of conv2d's passes (the columns of im2col, Winograd's transformed tiles), held by
each thread from call to call.

A fresh scratch array of a few MB is memory the process maps page by page as the kernel first
writes it: glibc hands large blocks back to the system when they are freed, so a 3x3 layer of 64
channels at 56x56 spent 3.7 ms of its 5.5 ms in page faults on its two 3 MB Winograd arrays. Each
thread keeps one buffer per slot, as large as the largest scratch it needed up to ``HOLD_BYTES``;
larger scratch is allocated per call.
"""
from __future__ import annotations

import math
import threading

import numpy as np

HOLD_BYTES = 32 << 20

_held = threading.local()


def arrays(dtype, *shapes, slot: str = "pass") -> list:
    """Uninitialised arrays of ``dtype`` and these shapes, one after the other in this thread's
    buffer for ``slot``: valid until the thread's next call of ``arrays`` for the same slot (a pass's
    arrays and the temporaries of its steps take two slots)."""
    dtype = np.dtype(dtype)
    sizes = [math.prod(shape) for shape in shapes]
    starts = [0]
    for size in sizes:   # each array starts on a 64-byte boundary, as numpy's own allocations do
        starts.append(starts[-1] + -(-size * dtype.itemsize // 64) * 64)
    nbytes = starts[-1]
    held = getattr(_held, "buffers", None)
    if held is None:
        held = _held.buffers = {}
    buffer = held.get(slot)
    if buffer is None or buffer.nbytes < nbytes + 64:
        buffer = np.empty(nbytes + 64, np.uint8)
        if nbytes <= HOLD_BYTES:
            held[slot] = buffer
    base = -buffer.ctypes.data % 64
    return [buffer[base + start:base + start + size * dtype.itemsize].view(dtype).reshape(shape)
            for start, size, shape in zip(starts, sizes, shapes)]
