"""The logical ops, isnan and isinf in numpy, on the storage dtype itself (an exact op arrives
unconverted; ml_dtypes' bfloat16 has both classifying ufuncs). No integer or bool is NaN or
infinite: their result is all False without reading them."""
import numpy as np

from ...engine import dtypes as dt


def logical_and(p, a, b):
    return np.logical_and(a, b)


def logical_or(p, a, b):
    return np.logical_or(a, b)


def logical_xor(p, a, b):
    return np.logical_xor(a, b)


def logical_not(p, x):
    return np.logical_not(x)


def isnan(p, x):
    return np.isnan(x) if x.dtype in dt.FLOAT_DTYPES else np.zeros(x.shape, dt.bool_)


def isinf(p, x):
    return np.isinf(x) if x.dtype in dt.FLOAT_DTYPES else np.zeros(x.shape, dt.bool_)
