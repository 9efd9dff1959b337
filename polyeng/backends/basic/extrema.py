"""maximum and minimum in numpy. numpy's ufuncs already give a NaN operand (``a``'s when both
are); where both operands are zeros of either sign their choice depends on the operand order and
the loop, so those elements take +0.0 for maximum and -0.0 for minimum when either zero is one."""
import numpy as np


def _extreme(ufunc, pick_zero, p, a, b):
    a, b = a.astype(p.dtype, copy=False), b.astype(p.dtype, copy=False)
    out = ufunc(a, b)
    if p.order.magnitude:   # floats
        zeros = np.logical_and(a == 0, b == 0)
        if zeros.any():
            out = np.where(zeros, pick_zero(a, b), out)
    return out


def maximum(p, a, b):
    return _extreme(np.maximum, lambda a, b: np.where(np.signbit(a), b, a), p, a, b)


def minimum(p, a, b):
    return _extreme(np.minimum, lambda a, b: np.where(np.signbit(a), a, b), p, a, b)
