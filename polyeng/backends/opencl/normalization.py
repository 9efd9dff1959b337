"""layer_norm on OPENCL (normalization.cl): x seen as (rows, features), one work item per row
reading 16 contiguous elements at a time."""
from __future__ import annotations

import math

import numpy as np

from . import _enqueue as enqueue
from ._tensor import OpenCLTensor, to_numpy


def _parameter(value, compute):
    """A compute-dtype buffer for weight or bias (None stays None: the kernel skips it).
    One already on the device in the compute dtype is used as it is."""
    if value is None:
        return None
    if isinstance(value, OpenCLTensor):
        if value.dtype == compute:
            return value.buffer
        value = to_numpy(value)
    return enqueue.upload(np.asarray(value).astype(compute).reshape(-1))


def layer_norm(p, x, normalized_shape, weight, bias, eps):
    tx, stay = enqueue.on_device(x)
    stay = stay or isinstance(weight, OpenCLTensor) or isinstance(bias, OpenCLTensor)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        features = math.prod(normalized_shape)
        compute = enqueue.compute_dtype(tx.dtype)
        enqueue.run("normalization.cl", "layer_norm", enqueue.float_options(tx.dtype), tx.size // features,
                   tx.buffer, out.buffer, np.uint64(tx.size // features), np.uint64(features),
                   _parameter(weight, compute), _parameter(bias, compute),
                   np.int32(weight is not None), np.int32(bias is not None), compute.type(eps))
    return enqueue.result(out, stay)
