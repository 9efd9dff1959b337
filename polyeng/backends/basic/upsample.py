"""upsample_bilinear2d and upsample_nearest in numpy: gathers along each spatial axis with the
index and weight arrays that ``polyeng.ops.upsample`` prepares for the call."""
import numpy as np


def upsample_bilinear2d(p, x, size, scale_factor, align_corners):
    (h0, h1, lh0, lh1), (w0, w1, lw0, lw1) = p.coordinates
    # Separable: along W first, then H, the order (and so the rounding) of torch's CPU kernel.
    rows = np.take(x, w0, axis=3) * lw0 + np.take(x, w1, axis=3) * lw1
    out = np.take(rows, h0, axis=2) * lh0[:, None] + np.take(rows, h1, axis=2) * lh1[:, None]
    return out.astype(x.dtype, copy=False)


def upsample_nearest(p, x, size, scale_factor):
    out = x
    for axis, index in enumerate(p.indices, 2):
        out = np.take(out, index, axis=axis)
    return np.ascontiguousarray(out)
