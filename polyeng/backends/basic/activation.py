"""gelu, relu, sigmoid, tanh, exp, sqrt and erf in numpy (16-bit inputs arrive widened to f32)."""
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)   # correctly rounded libm erf; numpy has none


def erf_values(x):
    """erf of every element of ``x`` in its own dtype, through the f64 libm function."""
    x = np.asarray(x)
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def gelu(p, x, approximate):
    if approximate == "tanh":
        k = x.dtype.type(math.sqrt(2.0 / math.pi))
        return x.dtype.type(0.5) * x * (1 + np.tanh(k * (x + x.dtype.type(0.044715) * x * x * x)))
    return x.dtype.type(0.5) * x * (1 + erf_values(x * x.dtype.type(1 / math.sqrt(2.0))))


def relu(p, x):
    return np.maximum(x, x.dtype.type(0))   # maximum propagates NaN


def sigmoid(p, x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))   # exp(-x) = inf for very negative x gives exactly 0


def tanh(p, x):
    return np.tanh(x)


def exp(p, x):
    return np.exp(x)


def sqrt(p, x):
    return np.sqrt(x)


def erf(p, x):
    return erf_values(x)
