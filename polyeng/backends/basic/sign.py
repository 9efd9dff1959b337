"""abs and neg in numpy, on the storage dtype itself (exact ops arrive unconverted; ml_dtypes'
bfloat16 has both ufuncs): numpy clears or flips the sign bit of floats and wraps integers."""
import numpy as np


def abs(p, x):   # noqa: A001 - kernels are named after their op
    return np.abs(x)


def neg(p, x):
    return np.negative(x)
