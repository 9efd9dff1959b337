"""mean, sum, amax and amin in numpy.

numpy sums pairwise only along a contiguous innermost axis, so the reduced axes are moved last
and made contiguous first: the error then grows with log(n), not n, whichever axes are reduced.
16-bit inputs arrive widened to f32 and accumulate there; integers sum in int64.

amax and amin compare the elements' bits as integers in the order of ``ops/extrema.py``: numpy's
own max and min return either zero for -0.0 beside +0.0, and the first NaN they meet.
"""
import numpy as np


def _rows(p, x, axis):
    """``x`` as a contiguous (kept elements, reduced elements) array."""
    kept = [d for d in range(x.ndim) if d not in axis]
    return np.ascontiguousarray(np.transpose(x, kept + list(axis))).reshape(
        [x.shape[d] for d in kept] + [p.count])


def mean(p, x, axis, keepdims):
    total = np.add.reduce(_rows(p, x, axis), axis=-1, dtype=x.dtype)
    return (total / x.dtype.type(p.count)).reshape(p.shape)   # 0 / 0: NaN for an empty mean


def sum(p, x, axis, keepdims):   # noqa: A001 - kernels are named after their op
    dtype = x.dtype if x.dtype.kind == "f" else p.dtype   # 16-bit floats arrive as f32
    return np.add.reduce(_rows(p, x, axis), axis=-1, dtype=dtype).reshape(p.shape)


def _extreme(p, x, axis, reduce, nan_key):
    """The best key over ``axis`` (a NaN's key is ``nan_key``, past every number's), as a word."""
    order = p.order
    words = x.view(order.word)   # an array of the word's width: a view of the same memory
    magnitude = order.word.type(order.magnitude)
    keys = words ^ ((words >> (order.bits - 1)) & magnitude)   # the order's key
    if order.magnitude:
        keys = np.where((words & magnitude) > order.infinity, nan_key, keys)
    best = np.asarray(reduce(keys, axis=axis))
    best = best ^ ((best >> (order.bits - 1)) & magnitude)   # the key's word again
    return np.asarray(best).view(x.dtype).reshape(p.shape)


def amax(p, x, axis, keepdims):
    return _extreme(p, x, axis, np.max, p.order.word.type(np.iinfo(p.order.word).max))


def amin(p, x, axis, keepdims):
    return _extreme(p, x, axis, np.min, p.order.word.type(np.iinfo(p.order.word).min))
