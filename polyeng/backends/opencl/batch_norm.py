"""batch_norm (inference) on OPENCL (batch_norm.cl): the per-channel scale and shift computed on the
host in the compute dtype (C values), then one element per work item."""
from __future__ import annotations

import numpy as np

from ...ops.batch_norm import affine
from . import _enqueue as enqueue
from ._tensor import OpenCLTensor, to_numpy


def _host(value):
    return to_numpy(value) if isinstance(value, OpenCLTensor) else value


def batch_norm(p, x, running_mean, running_var, weight, bias, eps):
    tx, stay = enqueue.on_device(x)
    stay = stay or any(isinstance(v, OpenCLTensor) for v in (running_mean, running_var, weight, bias))
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        compute = enqueue.compute_dtype(tx.dtype)
        scale, shift = affine(*(_host(v) for v in (running_mean, running_var, weight, bias)), eps, compute)
        planes = tx.shape[0] * tx.shape[1]
        size = tx.size // planes
        enqueue.run("batch_norm.cl", "batch_norm", enqueue.float_options(tx.dtype), (size, planes),
                    tx.buffer, out.buffer, enqueue.upload(scale), enqueue.upload(shift), np.uint64(size),
                    np.uint32(tx.shape[1]))
    return enqueue.result(out, stay)
