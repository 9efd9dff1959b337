"""mean in numpy. numpy sums pairwise only along a contiguous innermost axis, so the reduced axes
are moved last and made contiguous first: the error then grows with log(n), not n, whichever
axes are reduced. 16-bit inputs arrive widened to f32 and accumulate there."""
import numpy as np


def mean(p, x, axis, keepdims):
    kept = [d for d in range(x.ndim) if d not in axis]
    rows = np.ascontiguousarray(np.transpose(x, kept + list(axis))).reshape(
        [x.shape[d] for d in kept] + [p.count])
    total = np.add.reduce(rows, axis=-1, dtype=x.dtype)
    return (total / x.dtype.type(p.count)).reshape(p.shape)   # 0 / 0: NaN for an empty mean
