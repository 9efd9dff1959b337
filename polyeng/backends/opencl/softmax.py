"""softmax and log_softmax on OPENCL (softmax.cl): the input is seen as (outer, n, inner) with
the reduction over n, so any axis runs without a transpose. A contiguous reduction (inner 1)
runs one row per work item; otherwise a work item takes 16 adjacent lanes. Reductions of up
to ``UNROLLED`` elements are built for their length (one program per length), so the loops
along n unroll.
"""
from __future__ import annotations

import math

import numpy as np

from . import _enqueue as enqueue

UNROLLED = 64


def _run(x, axis, log):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        shape = tx.shape or (1,)   # a 0-d input is one row of one element
        outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        options = enqueue.float_options(tx.dtype) + ((f"-DN={n}",) if n <= UNROLLED else ())
        if inner == 1:
            enqueue.run("softmax.cl", "softmax_rows", options, outer, tx.buffer, out.buffer,
                       np.uint64(outer), np.uint64(n), np.int32(log), local=64)
        else:
            options += ("-DLOG_FORM=1",) if log else ()
            enqueue.run("softmax.cl", "softmax_lanes", options, (-(-inner // 16), outer),
                       tx.buffer, out.buffer, np.uint64(outer), np.uint64(n), np.uint64(inner),
                       local=(16, 1))
    return enqueue.result(out, stay)


def softmax(p, x, axis):
    return _run(x, axis, False)


def log_softmax(p, x, axis):
    return _run(x, axis, True)
