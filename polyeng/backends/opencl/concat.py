"""concat on OPENCL: each piece is copied, as words, into its slice of the output by the
strided copy of ``permute.py`` (rows of the piece into the piece's column range of the output
seen as (outer, total) rows).

Pieces are promoted to the output dtype first with numpy (the BASIC rule); after that concat
only moves words, so every dtype is exact.
"""
from __future__ import annotations

import math

from ...engine import dtypes as dt
from . import _enqueue as enqueue
from .permute import copy


def concat(p, tensors, axis):
    dtype = dt.result_type(*[t.dtype for t in tensors])
    pieces = [enqueue.promoted(t, dtype) for t in tensors]
    first = pieces[0][0].shape
    shape = first[:axis] + (sum(t.shape[axis] for t, _ in pieces),) + first[axis + 1:]
    stay = any(stay for _, stay in pieces)
    out = enqueue.empty(shape, dtype, not stay)
    if out.size:
        rows = math.prod(shape[:axis])
        inner = out.size // (rows * shape[axis])   # elements per unit step along axis
        total = shape[axis] * inner
        offset = 0
        for t, _ in pieces:
            width = t.shape[axis] * inner
            if width:
                copy(t, out, (rows, width), [width, 1], [total, 1], dst_offset=offset)
            offset += width
    return enqueue.result(out, stay)
