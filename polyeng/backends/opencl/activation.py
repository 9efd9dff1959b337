"""gelu on OPENCL (activation.cl): one work item per 16 elements; the tanh form is a build option."""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue


def gelu(p, x, approximate):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        options = enqueue.float_options(tx.dtype) + (("-DTANH_FORM=1",) if approximate == "tanh" else ())
        enqueue.run("activation.cl", "gelu", options, -(-tx.size // 16), tx.buffer, out.buffer,
                   np.uint64(tx.size), local=64)
    return enqueue.result(out, stay)
