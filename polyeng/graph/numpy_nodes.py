"""The numpy operations a graph records as nodes of their own (``np.<name>``), and how they run.

They move or relabel data and run on the host with numpy; a device tensor given to one is
brought to the host first. Each is a host op of the op catalogue (``OpSpec.host``).
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt
from ..engine.api import host_array as _host
from ..ops.catalogue import OpSpec, register_host


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


def _result_type(op: str):
    """The result dtype of a numpy node whose first input has ``dtype``."""
    if op == "np.astype":
        return lambda args, dtype: dt.as_dtype(args["dtype"])
    return lambda args, dtype: np.dtype(dtype)


RUN = {"np.getitem": getitem, "np.transpose": transpose, "np.astype": astype, "np.negative": negative}

# Host ops of the catalogue: graphs look them up by name like any op and call them directly. They
# have no mixed precision rule (category None): the AMP pass treats them as FOLLOW and says so.
for _name, _function in RUN.items():
    register_host(OpSpec(name=_name, function=_function, host=True, result_type=_result_type(_name)))
