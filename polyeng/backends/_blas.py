"""matmul and linear through numpy's BLAS: BASIC's kernels, and NUMBA's too (a JIT loop loses
to OpenBLAS at every size that matters, see ``numba/matmul.py``). Shared here so that
neither engine imports the other. Small products run on the calling thread
(``_blas_threads``)."""
import math

import numpy as np

from ..engine import dtypes as dt
from ._blas_threads import blas_threads


def matmul(p, a, b):
    product = dt.product_dtype(a.dtype, b.dtype)
    vector = a.ndim == 1 or b.ndim == 1 or a.shape[-2] == 1 or b.shape[-1] == 1
    with blas_threads(math.prod(p.shape) * a.shape[-1], vector,   # multiply-adds: outputs x inner size
                      ("matmul", a.shape, b.shape, product)):
        return np.matmul(a.astype(product, copy=False), b.astype(product, copy=False))


def linear(p, x, weight, bias):
    if x.ndim > 2:   # one product of all rows: numpy's matmul would make one per leading index,
        # each reading the whole weight ((64, 1, 512) @ W.T: 64 matrix-vector products)
        return linear(p, x.reshape(-1, x.shape[-1]), weight, bias).reshape(p.shape)
    with blas_threads(x.size * weight.shape[0], x.ndim == 1 or x.shape[-2] == 1 or weight.shape[0] == 1,
                      ("linear", x.shape, weight.shape, x.dtype)):
        y = np.matmul(x, weight.T)
    if bias is not None:
        y += bias   # in place: faster than a parallel JIT epilogue right after the BLAS call
    return y
