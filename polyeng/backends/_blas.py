"""matmul and linear through numpy's BLAS: BASIC's kernels, and NUMBA's too (a JIT loop loses
to OpenBLAS at every size that matters, see ``numba/matmul.py``). Shared here so that
neither engine imports the other."""
import numpy as np

from ..engine import dtypes as dt


def matmul(p, a, b):
    product = dt.product_dtype(a.dtype, b.dtype)
    return np.matmul(a.astype(product, copy=False), b.astype(product, copy=False))


def linear(p, x, weight, bias):
    y = np.matmul(x, weight.T)
    if bias is not None:
        y += bias   # in place: faster than a parallel JIT epilogue right after the BLAS call
    return y
