"""layer_norm over the trailing axes, on the input's storage dtype.

x is seen as (rows, features). Each row is normalised while it sits in cache: a pass for
the (pivot-shifted) mean, a pass for the biased variance of the centred values (two-pass, so a large mean
costs no accuracy), and a pass writing ``(x - mean) * rstd * weight + bias``. Memory is read
once and written once; every pass is a simple loop LLVM vectorizes.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._runtime import jit, launch
from ._storage import compute_dtype, kernel_view, narrow, read_only, widen


@jit(parallel=True)
def _layer_norm(x, weight, bias, eps, count, out):
    """count: the number of features as a compute-dtype value (mean = sum / count, as BASIC)."""
    rows, features = x.shape
    for r in prange(rows):
        row, dst = x[r], out[r]
        # Summing x - x[0] makes the mean exact for a constant row (then centred is exactly 0,
        # not rounding noise that rstd = 1/sqrt(eps) would amplify) and tighter in general.
        pivot = widen(row[0])
        total = np.float32(0)   # typed f64 for f64 storage by unification with the sum
        for j in range(features):
            total += widen(row[j]) - pivot
        mean = pivot + total / count
        square = np.float32(0)
        for j in range(features):
            centred = widen(row[j]) - mean
            square += centred * centred
        rstd = np.float32(1) / np.sqrt(square / count + eps)   # f32 one: f64 stays f64
        for j in range(features):
            dst[j] = narrow((widen(row[j]) - mean) * rstd * weight[j] + bias[j], dst)


def layer_norm(p, x, normalized_shape, weight, bias, eps):
    if x.size == 0:
        return np.empty_like(x)
    features = math.prod(normalized_shape)
    compute = compute_dtype(x.dtype)
    # Missing weight/bias become 1 and -0.0: y * 1 and y + -0.0 give y exactly (signed zeros too).
    w = np.ones(features, compute) if weight is None else np.ascontiguousarray(weight, compute).reshape(features)
    b = np.full(features, -0.0, compute) if bias is None else np.ascontiguousarray(bias, compute).reshape(features)
    out = np.empty(x.shape, x.dtype)
    src = kernel_view(np.ascontiguousarray(x)).reshape(-1, features)
    launch(_layer_norm, out.nbytes, read_only(src), read_only(w), read_only(b), compute.type(eps),
           compute.type(features), kernel_view(out).reshape(-1, features))
    return out
