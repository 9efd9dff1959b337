"""upsample_nearest on OPENCL (upsample.cl): 1, 2 or 3 spatial dims, any dtype, moved as words.

The source index of every output position along each spatial dim comes from
``polyeng.ops.upsample.nearest_indices`` (the same tables BASIC gathers with), uploaded as
int64; fewer than 3 spatial dims are padded in front with size-1 dims indexing 0, so one
kernel serves every rank.
"""
from __future__ import annotations

import numpy as np

from ...ops.upsample import nearest_indices
from . import launch


def upsample_nearest(x, size, scale_factor):
    tx, stay = launch.on_device(x)
    tables = nearest_indices({"x": tx, "size": size, "scale_factor": scale_factor})
    out = launch.empty(tx.shape[:2] + tuple(len(t) for t in tables), tx.dtype, not stay)
    if out.size:
        pad = 3 - len(tables)
        sources = [1] * pad + list(tx.shape[2:])
        tables = [np.zeros(1, np.int64)] * pad + tables
        launch.run("upsample.cl", "upsample_nearest", launch.word_options(tx.dtype), out.size,
                   tx.buffer, out.buffer, np.uint64(out.size),
                   *[np.uint64(len(t)) for t in tables], *[np.uint64(s) for s in sources],
                   *[launch.upload(t.astype(np.int64, copy=False)) for t in tables])
    return launch.result(out, stay)


KERNELS = {"upsample_nearest": upsample_nearest}
