"""concat on OPENCL (concat.cl): one launch per piece copies its rows, as words, into the
piece's column range of the output seen as (outer, total) rows.

Pieces are promoted to the output dtype first with numpy (the BASIC rule); after that concat
only moves words, so every dtype is exact.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from . import launch


def concat(tensors, axis):
    dtype = dt.result_type(*[t.dtype for t in tensors])
    pieces = [launch.promoted(t, dtype) for t in tensors]
    first = pieces[0][0].shape
    shape = first[:axis] + (sum(t.shape[axis] for t, _ in pieces),) + first[axis + 1:]
    stay = any(stay for _, stay in pieces)
    out = launch.empty(shape, dtype, not stay)
    if out.size:
        rows = math.prod(shape[:axis])
        inner = out.size // (rows * shape[axis])   # elements per unit step along axis
        total = shape[axis] * inner
        offset = 0
        for t, _ in pieces:
            width = t.shape[axis] * inner
            if width:
                launch.run("concat.cl", "concat_piece", launch.word_options(dtype), t.size,
                           t.buffer, out.buffer, np.uint64(t.size), np.uint64(width),
                           np.uint64(total), np.uint64(offset))
            offset += width
    return launch.result(out, stay)


KERNELS = {"concat": concat}
