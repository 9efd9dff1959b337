"""The comparisons in numpy, on the storage dtypes themselves (an exact op arrives unconverted):
both operands are brought to the dtype they compare in (``p.common``) and numpy's comparison
ufunc decides. bfloat16 compares as f32, which holds each of its values exactly; every other
conversion to the common dtype is numpy's own (int64 to f64 rounds, as numpy's loops do)."""
import numpy as np

from ...engine import dtypes as dt


def _in_common(p, a, b):
    common = dt.float32 if p.common == dt.bfloat16 else p.common
    return a.astype(common, copy=False), b.astype(common, copy=False)


def equal(p, a, b):
    return np.equal(*_in_common(p, a, b))


def not_equal(p, a, b):
    return np.not_equal(*_in_common(p, a, b))


def greater(p, a, b):
    return np.greater(*_in_common(p, a, b))


def greater_equal(p, a, b):
    return np.greater_equal(*_in_common(p, a, b))


def less(p, a, b):
    return np.less(*_in_common(p, a, b))


def less_equal(p, a, b):
    return np.less_equal(*_in_common(p, a, b))
