"""gelu in numpy."""
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)   # correctly rounded libm erf; numpy has none


def erf(x):
    x = np.asarray(x)
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def gelu(p, x, approximate):
    if approximate == "tanh":
        k = x.dtype.type(math.sqrt(2.0 / math.pi))
        return x.dtype.type(0.5) * x * (1 + np.tanh(k * (x + x.dtype.type(0.044715) * x * x * x)))
    return x.dtype.type(0.5) * x * (1 + erf(x * x.dtype.type(1 / math.sqrt(2.0))))
