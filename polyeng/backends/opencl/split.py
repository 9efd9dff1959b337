"""split on OPENCL: each piece is copied, as words, from its column range of ``x`` seen as
(outer, length * inner) rows by the strided copy of ``_strided.py`` (concat's copy, the other way).
Every copy is queued before any piece is returned; pieces of a device tensor stay on the device."""
from __future__ import annotations

import math

from . import _enqueue as enqueue, _strided as strided


def split(p, x, split_size_or_sections, axis):
    tx, stay = enqueue.on_device(x)
    rows = math.prod(tx.shape[:axis])
    inner = math.prod(tx.shape[axis + 1:])   # elements per unit step along axis
    total = tx.shape[axis] * inner
    pieces, offset = [], 0
    for shape, size in zip(p.shapes, split_size_or_sections):
        out = enqueue.empty(shape, tx.dtype, not stay)
        width = size * inner
        if width and rows:
            strided.copy(tx, out, (rows, width), [total, 1], [width, 1], src_offset=offset)
        pieces.append(out)
        offset += width
    return tuple(enqueue.result(out, stay) for out in pieces)
