"""gelu on OPENCL (activation.cl)."""
from __future__ import annotations

import numpy as np

from . import launch


def gelu(x, approximate):
    tx, stay = launch.on_device(x)
    out = launch.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        launch.run("activation.cl", "gelu", launch.float_options(tx.dtype), tx.size,
                   tx.buffer, out.buffer, np.uint64(tx.size), np.int32(approximate == "tanh"))
    return launch.result(out, stay)


KERNELS = {"gelu": gelu}
