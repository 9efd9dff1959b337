"""The numpy operations a graph records as nodes of their own (``np.<name>``), and how they run.

They move or relabel data and run on the host with numpy; a device tensor given to one is
brought to the host first. They have no mixed precision rule (see ``polyeng.amp``): the pass
treats them as FOLLOW.
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from . import onnx_nodes


def _host(x):
    if isinstance(x, (np.ndarray, np.generic)):
        return x
    from ..engine.api import to_numpy
    return to_numpy(x)


def getitem(x, key):
    if not isinstance(x, (np.ndarray, np.generic)) and hasattr(x, "__getitem__"):
        try:   # device tensors take rows of their leading axis on the device
            return x[key]
        except NotImplementedError:
            pass
    return _host(x)[key]


def transpose(x, axes):
    if not isinstance(x, (np.ndarray, np.generic)) and len(x.shape) > 1:
        from ..ops import permute_contiguous   # a device copy on the tensor's engine (layout step)
        return permute_contiguous(x, tuple(range(len(x.shape) - 1, -1, -1)) if axes is None else axes)
    return _host(x).transpose(axes)


def astype(x, dtype):
    return _host(x).astype(dtype)


def negative(x):
    return np.negative(_host(x))


RUN = {"np.getitem": getitem, "np.transpose": transpose, "np.astype": astype, "np.negative": negative,
       **onnx_nodes.RUN, "onnx.getitem": getitem}

# An imported model's nodes: they only move, relabel or compute shapes, FOLLOW by nature, so
# the pass needs no rule for them (``onnx.getitem`` is Slice or Gather with fixed indices).
MOVEMENT = frozenset(op for op in RUN if op.startswith("onnx."))


def result_type(op: str, args: dict, dtype) -> np.dtype:
    """The result dtype of a numpy node whose first input has ``dtype``."""
    if op in onnx_nodes.RUN:
        return onnx_nodes.result_type(op, args, dtype)
    return dt.as_dtype(args["dtype"]) if op == "np.astype" else np.dtype(dtype)
