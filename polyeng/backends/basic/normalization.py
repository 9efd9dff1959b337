"""layer_norm in numpy (two-pass mean and biased variance)."""
import numpy as np


def layer_norm(p, x, normalized_shape, weight, bias, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    if x.size == 0:
        return np.empty_like(x)
    # Centred as (x - the row's first element) - its mean, as NUMBA shifts the sum: exact for a
    # constant row, whose centred values are then exactly 0, not rounding noise that 1/sqrt(eps)
    # would amplify; a large mean costs no accuracy either.
    centred = x - x[(Ellipsis,) + (slice(0, 1),) * len(axes)]
    centred -= centred.mean(axis=axes, keepdims=True)
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    y = np.divide(centred, np.sqrt(var + x.dtype.type(eps)), out=centred)   # centred is ours to reuse
    if weight is not None:
        y = np.multiply(y, weight, out=y) if np.can_cast(weight.dtype, y.dtype) else y * weight
    if bias is not None:
        y = np.add(y, bias, out=y) if np.can_cast(bias.dtype, y.dtype) else y + bias
    return y.astype(x.dtype, copy=False)
