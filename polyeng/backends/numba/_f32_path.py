"""16-bit storage around kernels that compute in f32 through numpy (the BLAS products of
matmul, linear and lstm): widen the float16/bfloat16 inputs with the JIT cast, run the f32
kernel, round the float results back with the JIT cast. numpy's own float16 conversions
take about 2.4 ns per element here, several times the JIT's.
"""
from __future__ import annotations

from ...engine import dtypes as dt
from ...engine.call import map_arrays
from ._cast import converted


def _to_f32(a):
    return converted(a, dt.float32) if a.dtype in dt.SIXTEEN_BIT_FLOATS else a


def via_f32(kernel):
    """``kernel`` (f32 in, f32 out) made to take and return the call's 16-bit storage dtype."""
    def run(p, **kwargs):
        if p.dtype not in dt.SIXTEEN_BIT_FLOATS:
            return kernel(p, **kwargs)
        result = kernel(p, **{name: map_arrays(value, _to_f32) for name, value in kwargs.items()})
        return map_arrays(result, lambda a: converted(a, p.dtype) if a.dtype == dt.float32 else a)
    run.__name__ = getattr(kernel, "__name__", "kernel").lstrip("_")
    return run
