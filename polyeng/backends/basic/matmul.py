"""matmul and linear in numpy (BLAS for floats)."""
import numpy as np

from ...engine import dtypes as dt


def matmul(a, b):
    out = dt.result_type(a.dtype, b.dtype)
    if out in dt.FLOAT_DTYPES:
        # the dispatcher has converted floats to the compute dtype; ints join them here
        out = dt.result_type(*[d for d in (a.dtype, b.dtype) if d in dt.FLOAT_DTYPES])
    return np.matmul(a.astype(out, copy=False), b.astype(out, copy=False))


def linear(x, weight, bias):
    y = np.matmul(x, weight.T)
    if bias is not None:
        y += bias
    return y


KERNELS = {"matmul": matmul, "linear": linear}
