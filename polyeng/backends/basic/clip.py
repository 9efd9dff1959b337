"""clip in numpy, on the storage dtype itself (an exact op arrives unconverted): bounds of another
float dtype are rounded to x's first; np.where picks x, the lower bound or the upper one bit for
bit. A comparison with NaN is false, so NaN in x stays and a NaN bound is picked."""
import numpy as np

from ...engine import dtypes as dt


def _bound(value, dtype, missing: float):
    if value is None:
        return np.asarray(missing, dtype)   # never picked: nothing is below -inf or above inf
    return value if value.dtype == dtype else dt.round_to(value, dtype)


def clip(p, x, min, max):   # noqa: A002 - the op's argument names
    lo, hi = _bound(min, x.dtype, -np.inf), _bound(max, x.dtype, np.inf)
    low = (x < lo) | np.isnan(lo)
    held = np.where(low, lo, x)
    return np.where((held > hi) | np.isnan(hi), hi, held)
