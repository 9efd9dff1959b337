"""embedding as a NUMBA row gather: ``out[i] = weight[ids[i]]``, rows copied in parallel.

Rows are moved as unsigned words of the element's width, so every float dtype (NaN payloads,
-0.0, subnormals) arrives bit for bit. The table is read in place whatever its strides (a
large table is never copied for a few rows); ids are flattened to int64 (ids were
range-checked at validation).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._runtime import jit, launch, threads_for

_WORDS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


@jit(parallel=True)
def _gather(ids, weight, out, chunks):
    n, dim = out.shape
    for c in prange(chunks):
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            src, dst = weight[ids[i]], out[i]
            for k in range(dim):
                dst[k] = src[k]


def embedding(p, ids, weight):
    out = np.empty(p.shape, p.dtype)
    if out.size == 0:
        return out
    words = _WORDS[weight.dtype.itemsize]
    flat = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
    table = weight.view(words)
    flat.flags.writeable = table.flags.writeable = False   # one compiled type per layout
    rows = out.view(words).reshape(flat.size, -1)
    chunks = min(flat.size, 4 * threads_for(out.nbytes))
    launch(_gather, out.nbytes, flat, table, rows, chunks)
    return out
