"""abs and neg on OPENCL (sign.cl): every dtype moved as unsigned words of its width, floats by
their sign bit and integers by two's complement negation, so results are exact and f64 needs no
cl_khr_fp64; a work item takes as many runs of 16 elements as ``enqueue.runs_per_item`` gives
the device."""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue


def _sign(function: str, x):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        dtype = np.dtype(tx.dtype)
        kind = ("-DFLOAT_SIGN=1",) if dtype in dt.FLOAT_DTYPES else ("-DSIGNED=1",) if dtype.kind == "i" else ()
        per = enqueue.runs_per_item(-(-tx.size // 16))
        enqueue.run("sign.cl", "sign_words", enqueue.word_options(dtype) + kind + (f"-DFN_{function}=1",),
                    -(-tx.size // (16 * per)), tx.buffer, out.buffer, np.uint64(tx.size), np.uint64(per),
                    local=enqueue.group_items(per))
    return enqueue.result(out, stay)


def abs(p, x):   # noqa: A001 - kernels are named after their op
    return _sign("ABS", x)


def neg(p, x):
    return _sign("NEG", x)
