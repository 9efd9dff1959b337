"""reshape on OPENCL: a device tensor (always C-contiguous) takes the new shape over the same
buffer, a host array is numpy's reshape (a view where numpy makes one); no kernel, no transfer."""
from __future__ import annotations


def reshape(p, x, shape):
    return x.reshape(shape)   # OpenCLTensor.reshape shares the buffer
