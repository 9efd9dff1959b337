"""softmax and log_softmax on OPENCL (softmax.cl): the input is seen as (outer, n, inner)
with the reduction over n, so any axis runs without a transpose."""
from __future__ import annotations

import math

import numpy as np

from . import launch


def _run(x, axis, log):
    tx, stay = launch.on_device(x)
    out = launch.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        shape = tx.shape or (1,)   # a 0-d input is one row of one element
        outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        launch.run("softmax.cl", "softmax", launch.float_options(tx.dtype), outer * inner,
                   tx.buffer, out.buffer, np.uint64(outer), np.uint64(n), np.uint64(inner), np.int32(log))
    return launch.result(out, stay)


def softmax(x, axis):
    return _run(x, axis, False)


def log_softmax(x, axis):
    return _run(x, axis, True)


KERNELS = {"softmax": softmax, "log_softmax": log_softmax}
