"""16-bit storage around kernels that compute in f32 through numpy (the BLAS products of
matmul, linear and lstm): widen the float16/bfloat16 inputs with the JIT cast, run the f32
kernel, round the float results back with the JIT cast. numpy's own float16 conversions
take about 2.4 ns per element here, several times the JIT's.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from ...engine.call import map_arrays
from .cast import cast


def _to_f32(a):
    return cast(a, dt.float32) if a.dtype in dt.SIXTEEN_BIT_FLOATS else a


def via_f32(kernel, storage_of):
    """``kernel`` (f32 in, f32 out) made to take and return the 16-bit storage of ``storage_of(kwargs)``."""
    def run(**kwargs):
        storage = storage_of(kwargs)
        if storage not in dt.SIXTEEN_BIT_FLOATS:
            return kernel(**kwargs)
        result = kernel(**{name: map_arrays(value, _to_f32) for name, value in kwargs.items()})
        return map_arrays(result, lambda a: cast(a, storage) if a.dtype == dt.float32 else a)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


def float_storage(*names):
    """The result dtype of the named arguments (numpy's promotion, bf16 + f16 -> f32)."""
    def storage_of(kwargs):
        return dt.result_type(*[np.asarray(kwargs[n]).dtype if not hasattr(kwargs[n], "dtype")
                                else kwargs[n].dtype for n in names])
    return storage_of
