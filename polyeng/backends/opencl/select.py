"""select on OPENCL (select.cl): ``cond ? then : else_`` with the two-step broadcast, moved as words.

``then`` and ``else_`` are promoted to the output dtype first (the BASIC rule); the kernel then
only picks words, so every dtype is exact and the unselected branch cannot leak a NaN. Each
operand keeps its own contiguous buffer and is read through element strides against the
output shape, 0 along the axes it is broadcast over.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from ...ops.select import broadcast_value_shapes
from . import launch


def _strides(shape, out_shape) -> list:
    """Element strides of a C-ordered ``shape`` against ``out_shape`` (0 where broadcast)."""
    own = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, step = [0] * len(out_shape), 1
    for d in range(len(out_shape) - 1, -1, -1):
        strides[d] = step if own[d] != 1 else 0
        step *= own[d]
    return strides


def select(cond, then, else_, auto_broadcast):
    dtype = dt.result_type(then.dtype, else_.dtype)
    shape = broadcast_value_shapes(then.shape, else_.shape)
    tc, cond_stays = launch.on_device(cond)
    tt, then_stays = launch.promoted(then, dtype)
    te, else_stays = launch.promoted(else_, dtype)
    stay = cond_stays or then_stays or else_stays
    out = launch.empty(shape, dtype, not stay)
    if out.size:
        strides = [_strides(t.shape, shape) for t in (tc, tt, te)]   # rows: cond, then, else_
        launch.run("select.cl", "select_words", launch.word_options(dtype), out.size,
                   tc.buffer, tt.buffer, te.buffer, out.buffer, np.uint64(out.size), np.int32(len(shape)),
                   launch.upload(np.array(shape or (1,), np.int64)),
                   launch.upload(np.array(strides if shape else [[0], [0], [0]], np.int64)))
    return launch.result(out, stay)


KERNELS = {"select": select}
