"""upsample_bilinear2d and upsample_nearest in numpy: gathers along each spatial axis with the
source positions and weights that ``polyeng.ops.upsample`` prepares for the call."""
import math

import numpy as np


def upsample_bilinear2d(p, x, size, scale_factor, align_corners):
    (h0, h1, lh0, lh1), (w0, w1, lw0, lw1) = p.coordinates
    # Separable: along W first, then H, the order (and so the rounding) of torch's CPU kernel.
    rows = np.take(x, w0, axis=3) * lw0 + np.take(x, w1, axis=3) * lw1
    out = np.take(rows, h0, axis=2) * lh0[:, None] + np.take(rows, h1, axis=2) * lh1[:, None]
    return out.astype(x.dtype, copy=False)


def upsample_nearest(p, x, size, scale_factor):
    """A block of output rows at a time: gather their source rows, then take along W into the
    output. The temporaries (positions, source rows) stay within a block, ``_BLOCK_BYTES`` or
    1/64 of a larger output, and no table spans a whole long dim (see ops.upsample.NearestAxis)."""
    if math.prod(p.shape) * x.dtype.itemsize <= _BLOCK_BYTES:   # whole-dim takes, on kept tables
        for axis, rule in enumerate(p.axes, 2):
            x = np.take(x, rule.table(), axis=axis)
        return np.ascontiguousarray(x)
    out = np.empty(p.shape, x.dtype)
    # canonical (N, C, D, H, W): size-1 dims with no rule in front of the missing spatial ones
    pad = (slice(None), slice(None)) + (None,) * (3 - len(p.axes))
    source, rows = x[pad], out[pad]
    n, c, in_d, in_h, in_w = source.shape
    _, _, out_d, out_h, out_w = rows.shape
    rows = rows.reshape(-1, out_w)
    rules = [None] * (3 - len(p.axes)) + list(p.axes[:-1])
    flat = source.reshape(-1, in_w) if x.flags.c_contiguous else None   # rows by one index
    block = max(_BLOCK_BYTES, out.nbytes // 64)   # few enough steps that their overhead is lost
    span = max(1, block // _POSITION_BYTES)   # positions computed at a time
    columns = [(lo, min(lo + span, out_w)) for lo in range(0, out_w, span)]
    whole = p.axes[-1].table() if len(columns) == 1 else None
    # rows longer than a span go one at a time (their column spans are contiguous then)
    per_block = max(1, block // (x.dtype.itemsize * max(in_w, out_w) + _ROW_BYTES)) if whole is not None else 1
    for start in range(0, len(rows), per_block):
        r = np.arange(start, min(start + per_block, len(rows)), dtype=np.int64)
        rest, oh = np.divmod(r, out_h)
        plane, od = np.divmod(rest, out_d)
        d, h = (o if rule is None else rule.sources(o) for o, rule in zip((od, oh), rules))
        target = rows[start:start + len(r)]
        if len(r) == 1:   # a view of the one source row, not a copy of it
            gathered, target = source[divmod(int(plane[0]), c) + (int(d[0]), int(h[0]))], target[0]
        elif flat is not None:
            src = (plane * in_d + d) * in_h + h
            # a slice when consecutive: the ends alone do not say so in 3-D, where a depth that
            # skips can make up for rows that repeat (0, 0, 1, 4, 4 spans 5 rows)
            first, last = int(src[0]), int(src[-1])
            consecutive = last - first == len(r) - 1 and bool((np.diff(src) == 1).all())
            gathered = flat[first:last + 1] if consecutive else np.take(flat, src, axis=0)
        else:
            gathered = source[np.divmod(plane, c) + (d, h)]
        for lo, hi in columns:
            positions = whole if whole is not None else p.axes[-1].sources(np.arange(lo, hi, dtype=np.int64))
            np.take(gathered, positions, axis=-1, out=target[..., lo:hi], mode="clip")
    return out


_BLOCK_BYTES = 1 << 20   # output (and gathered source rows) per step, at least
_POSITION_BYTES = 32     # what NearestAxis.sources allocates per position it computes
_ROW_BYTES = 4 * _POSITION_BYTES   # and a step per output row, for its source row
