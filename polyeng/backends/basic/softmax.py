"""softmax and log_softmax in numpy, max-subtracted so large inputs do not overflow."""
import numpy as np


def _shifted(x, axis):
    if x.ndim == 0:
        x = x.reshape(1)
    with np.errstate(invalid="ignore"):   # an all -inf row gives NaN, as in PyTorch
        return x - np.max(x, axis=axis, keepdims=True)


def softmax(p, x, axis):
    if x.size == 0:
        return np.empty_like(x)
    e = np.exp(_shifted(x, axis))
    return (e / np.sum(e, axis=axis, keepdims=True)).reshape(x.shape)


def log_softmax(p, x, axis):
    if x.size == 0:
        return np.empty_like(x)
    shifted = _shifted(x, axis)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))).reshape(x.shape)
