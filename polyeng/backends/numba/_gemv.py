"""``x @ w.T`` for a few f32 rows ``x`` and a stored (16-bit or f32) ``w``: ``w`` read once, as stored.

A product with one to a few rows (the LSTM's recurrent step at batch 1, a linear layer on one
token) reads each element of ``w`` once: it is memory-bound, and reading 16-bit storage halves
the bytes read. Each element is widened in registers (bf16: shift into the top half of an f32;
f16: the F16C conversion) and accumulated in f32; rows of ``w`` are split over threads.
"""
from __future__ import annotations

import numpy as np
from numba import get_num_threads, prange

from ._runtime import jit
from ._storage import read_only, widen


@jit(parallel=True)
def _gemv(x, w, out, tasks):
    """out[i, j] = sum_k x[i, k] * widen(w[j, k]); x (M, K) f32, w (N, K) stored, out (M, N) f32."""
    m, k = x.shape
    n = w.shape[0]
    for task in prange(tasks):
        for j in range(task * n // tasks, (task + 1) * n // tasks):
            row = w[j]
            for i in range(m):
                xi = x[i]
                s = np.float32(0.0)
                for kk in range(k):
                    s += xi[kk] * widen(row[kk])
                out[i, j] = s


def gemv(x, w, out):
    """``out`` (M, N) f32 = ``x`` (M, K) f32 @ ``w.T``, ``w`` (N, K) through ``kernel_view``; one
    task per thread (numba's count for this call, see ``_runtime.launch``)."""
    _gemv(read_only(x), read_only(w), out, max(1, min(get_num_threads(), w.shape[0])))
