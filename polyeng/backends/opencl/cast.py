"""cast on OPENCL (cast.cl): every supported dtype (f16, bf16, f32, f64, int8, uint8, int32,
int64, bool) to f16, bf16, f32 or f64, bit for bit as BASIC for every number (one rounding to
nearest even; Inf stays Inf, overflow becomes Inf, the sign of zero is kept). NaN stays NaN,
but as a quiet NaN: its payload bits can differ from numpy's, which keeps signalling NaNs
and truncates payloads differently.

The kernel converts IEEE bit patterns with integer arithmetic, f64 included, so it needs no
cl_khr_fp64 (the engine takes f64 casts on any device) and does not depend on a device's
float conversions or denormal mode. A cast to the input's own dtype is a buffer copy (NaN
payloads kept, as numpy's ``astype`` keeps them).
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue, _runtime as runtime

# cast.cl's SRC / DST codes
_SOURCE = {dt.float32: 1, dt.float16: 2, dt.bfloat16: 3, dt.float64: 4, dt.int8: 5, dt.uint8: 6,
           dt.int32: 7, dt.int64: 8, dt.bool_: 9}
_TARGET = {dt.float32: 1, dt.float16: 2, dt.bfloat16: 3, dt.float64: 4}
RUN = 16   # elements per work item (cast.cl's RUN)


def cast(p, x, dtype):
    dtype = np.dtype(dtype)
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, dtype, not stay)
    if out.size:
        if tx.dtype == dtype:
            import pyopencl as cl
            cl.enqueue_copy(runtime.state().queue, out.buffer, tx.buffer, byte_count=out.nbytes).wait()
        else:
            options = (f"-DSRC={_SOURCE[np.dtype(tx.dtype)]}", f"-DDST={_TARGET[dtype]}")
            enqueue.run("cast.cl", "cast", options, -(-out.size // RUN), tx.buffer, out.buffer, np.uint64(out.size))
    return enqueue.result(out, stay)
