"""gelu, relu, sigmoid, tanh, exp, sqrt, erf, hardswish, hardsigmoid, silu, leaky_relu, log and
reciprocal in numpy (16-bit inputs arrive widened to f32). hardswish, hardsigmoid and silu are
PyTorch's CPU formulas term for term (``x * relu6(x + 3) / 6``, ``relu6(x + 3) / 6``,
``x / (1 + exp(-x))``); relu6 propagates NaN as np.maximum and np.minimum do."""
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


def _relu6(v):
    return np.minimum(np.maximum(v, v.dtype.type(0)), v.dtype.type(6))


def hardswish(p, x):
    return x * _relu6(x + x.dtype.type(3)) / x.dtype.type(6)


def hardsigmoid(p, x):
    return _relu6(x + x.dtype.type(3)) / x.dtype.type(6)


def silu(p, x):
    return x / (x.dtype.type(1) + np.exp(-x))   # exp(inf) = inf: -0.0 for very negative x, NaN at -inf


def leaky_relu(p, x, negative_slope):
    return np.where(x > 0, x, x * x.dtype.type(negative_slope))   # NaN > 0 is false: NaN * slope is NaN


def log(p, x):
    return np.log(x)


def reciprocal(p, x):
    return np.reciprocal(x)
