"""layer_norm in numpy (two-pass mean and biased variance)."""
import numpy as np


def layer_norm(p, x, normalized_shape, weight, bias, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    if x.size == 0:
        return np.empty_like(x)
    mean = x.mean(axis=axes, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    y = centred / np.sqrt(var + x.dtype.type(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False)
