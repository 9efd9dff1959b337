"""The numpy operations a graph records as nodes of their own (``np.<name>``), and how they run.

They move or relabel data and run on the host with numpy; a device tensor given to one is
brought to the host first. They have no mixed precision rule (see ``polyeng.amp``): the pass
treats them as FOLLOW.
"""
from __future__ import annotations

import numpy as np

from ..engine import dtypes as dt


def _host(x):
    if isinstance(x, (np.ndarray, np.generic)):
        return x
    from ..engine.api import to_numpy
    return to_numpy(x)


def getitem(x, key):
    return _host(x)[key]


def transpose(x, axes):
    return _host(x).transpose(axes)


def astype(x, dtype):
    return _host(x).astype(dtype)


def negative(x):
    return np.negative(_host(x))


RUN = {"np.getitem": getitem, "np.transpose": transpose, "np.astype": astype, "np.negative": negative}


def result_type(op: str, args: dict, dtype) -> np.dtype:
    """The result dtype of a numpy node whose first input has ``dtype``."""
    return dt.as_dtype(args["dtype"]) if op == "np.astype" else np.dtype(dtype)
