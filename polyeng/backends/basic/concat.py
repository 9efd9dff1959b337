"""concat in numpy."""
import numpy as np

from ...engine import dtypes as dt


def concat(p, tensors, axis):
    out = dt.result_type(*[t.dtype for t in tensors])
    return np.concatenate([t.astype(out, copy=False) for t in tensors], axis=axis)
