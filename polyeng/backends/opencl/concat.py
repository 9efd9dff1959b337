"""concat on OPENCL: each piece is copied, as words, into its slice of the output by the
strided copy of ``_strided.py`` (rows of the piece into the piece's column range of the output
seen as (outer, total) rows).

Pieces are promoted to the output dtype first with numpy (the BASIC rule); after that concat
only moves words, so every dtype is exact.
"""
from __future__ import annotations

import math

from . import _enqueue as enqueue, _strided as strided


def concat(p, tensors, axis):
    pieces = [enqueue.promoted(t, p.dtype) for t in tensors]
    shape = p.shape
    stay = any(stay for _, stay in pieces)
    out = enqueue.empty(shape, p.dtype, not stay)
    if out.size:
        rows = math.prod(shape[:axis])
        inner = out.size // (rows * shape[axis])   # elements per unit step along axis
        total = shape[axis] * inner
        offset = 0
        for t, _ in pieces:
            width = t.shape[axis] * inner
            if width:
                strided.copy(t, out, (rows, width), [width, 1], [total, 1], dst_offset=offset)
            offset += width
    return enqueue.result(out, stay)
