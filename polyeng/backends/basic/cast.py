"""cast in numpy, correctly rounded (see engine.dtypes.round_to)."""
import numpy as np

from ...engine import dtypes as dt

_BLOCK = 1 << 16   # elements per round_to call where it builds several temporaries (about 1.4 MB)
_DIRECT = (dt.float32, dt.float16, dt.bfloat16)   # sources round_to converts to bf16 in one astype


def cast(p, x, dtype):
    if dtype != dt.bfloat16 or x.dtype in _DIRECT or x.size <= _BLOCK:
        return dt.round_to(x, dtype)
    # integers and f64 round to bf16 through f64 copies and masks of the output's size: a block
    # at a time they stay a small fraction of it
    out = np.empty(x.shape, dtype)
    source, target = x.reshape(-1) if x.flags.c_contiguous else x.flat, out.reshape(-1)
    for lo in range(0, x.size, _BLOCK):
        target[lo:lo + _BLOCK] = dt.round_to(source[lo:lo + _BLOCK], dtype)
    return out
