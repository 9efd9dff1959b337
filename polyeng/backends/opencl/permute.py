"""permute_contiguous on OPENCL (permute.cl): any rank and dtype, moved as words."""
from __future__ import annotations

import numpy as np

from . import launch


def permute_contiguous(x, dims):
    tx, stay = launch.on_device(x)
    shape = tuple(tx.shape[d] for d in dims)
    out = launch.empty(shape, tx.dtype, not stay)
    if tx.size:
        strides = np.ones(max(tx.ndim, 1), np.int64)   # element strides of the C-ordered input
        for d in range(tx.ndim - 2, -1, -1):
            strides[d] = strides[d + 1] * tx.shape[d + 1]
        launch.run("permute.cl", "permute", launch.word_options(tx.dtype), tx.size,
                   tx.buffer, out.buffer, np.uint64(tx.size), np.int32(len(dims)),
                   launch.upload(np.array(shape or (1,), np.int64)),
                   launch.upload(np.array([strides[d] for d in dims] or [1], np.int64)))
    return launch.result(out, stay)


KERNELS = {"permute_contiguous": permute_contiguous}
