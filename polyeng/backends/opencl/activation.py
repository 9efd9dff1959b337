"""gelu on OPENCL (activation.cl): one work item per 16 elements; the tanh form is a build option."""
from __future__ import annotations

import numpy as np

from . import launch


def gelu(x, approximate):
    tx, stay = launch.on_device(x)
    out = launch.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        options = launch.float_options(tx.dtype) + (("-DTANH_FORM=1",) if approximate == "tanh" else ())
        launch.run("activation.cl", "gelu", options, -(-tx.size // 16), tx.buffer, out.buffer,
                   np.uint64(tx.size), local=64)
    return launch.result(out, stay)


KERNELS = {"gelu": gelu}
