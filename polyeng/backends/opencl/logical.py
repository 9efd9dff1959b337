"""The logical ops, isnan and isinf on OPENCL (logical.cl).

logical_and, logical_or and logical_xor run as the comparisons do (``compare.run_binary``: each
bool operand its own buffer, read flat or through broadcast strides, 16 lanes at a time).
logical_not, isnan and isinf read each element as an unsigned word of its width, a float by its
bits, so every dtype is exact and f64 needs no cl_khr_fp64; a work item takes as many runs of 16
elements as ``enqueue.runs_per_item`` gives the device.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue
from .compare import run_binary

# float storage -> (the bits below the sign, +inf's bits)
_FLOAT_BITS = {dt.float16: (0x7FFF, 0x7C00), dt.bfloat16: (0x7FFF, 0x7F80), dt.float32: (0x7FFFFFFF, 0x7F800000),
               dt.float64: (0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000)}


def _binary(op: str, p, a, b):
    return run_binary("logical.cl", (f"-DOP_{op}=1",), p, a, b, dt.bool_)


def _classify(function: str, x):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, dt.bool_, not stay)
    if tx.size:
        dtype = np.dtype(tx.dtype)
        if function == "NOT":
            options = ("-DFN_NOT=1",)
        elif dtype in dt.FLOAT_DTYPES:
            suffix = "UL" if dtype.itemsize == 8 else "U"
            magnitude, inf = _FLOAT_BITS[dtype]
            options = (f"-DFN_{function}=1", f"-DMAGNITUDE_BITS={magnitude:#x}{suffix}", f"-DINF_BITS={inf:#x}{suffix}")
        else:
            options = ("-DFN_FALSE=1",)   # no integer or bool is NaN or infinite
        per = enqueue.runs_per_item(-(-tx.size // 16))
        enqueue.run("logical.cl", "classify_words", enqueue.word_options(dtype) + options,
                    -(-tx.size // (16 * per)), tx.buffer, out.buffer, np.uint64(tx.size), np.uint64(per),
                    local=enqueue.group_items(per))
    return enqueue.result(out, stay)


def logical_and(p, a, b):
    return _binary("AND", p, a, b)


def logical_or(p, a, b):
    return _binary("OR", p, a, b)


def logical_xor(p, a, b):
    return _binary("XOR", p, a, b)


def logical_not(p, x):
    return _classify("NOT", x)


def isnan(p, x):
    return _classify("ISNAN", x)


def isinf(p, x):
    return _classify("ISINF", x)
