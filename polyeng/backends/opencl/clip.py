"""clip on OPENCL (clip.cl): elements moved and compared as unsigned words of their width, so the
result is BASIC's bit for bit and f64 needs no cl_khr_fp64. Bounds of another float dtype are
rounded to x's on the host first (as BASIC does); a missing bound is ±inf, which is never picked.
Bounds that are one host value each are kernel arguments (one flat run over x); array bounds
(or bounds already on the device) keep their own buffers, read through element strides against
x's shape, 0 along the axes they are broadcast over, in the layout of ``_strided.py``.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from . import _enqueue as enqueue, _strided as strided
from ._tensor import OpenCLTensor, to_numpy

_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# +inf's bit pattern in each float format: a magnitude above it is a NaN
_INF_BITS = {dt.float16: "0x7C00", dt.bfloat16: "0x7F80", dt.float32: "0x7F800000U",
             dt.float64: "0x7FF0000000000000UL"}


def _bound(value, dtype, missing: float):
    """The bound in x's dtype: a host array, or a device tensor when it already is one."""
    if value is None:
        return np.asarray(missing, dtype)
    if np.dtype(value.dtype) == dtype:
        return value
    host = to_numpy(value) if isinstance(value, OpenCLTensor) else np.asarray(value)
    return dt.round_to(host, dtype)


def clip(p, x, min, max):   # noqa: A002 - the op's argument names
    return _clip(x, min, max)


def _clip(x, low, high):
    tx, stay = enqueue.on_device(x)
    dtype = np.dtype(tx.dtype)
    bounds = [_bound(low, dtype, -np.inf), _bound(high, dtype, np.inf)]
    stay = stay or any(isinstance(b, OpenCLTensor) for b in bounds)
    out = enqueue.empty(tx.shape, dtype, not stay)
    if out.size == 0:
        return enqueue.result(out, stay)
    options = enqueue.word_options(dtype) + (f"-DINF_BITS={_INF_BITS[dtype]}",)
    bits = _BITS[dtype.itemsize]
    if all(isinstance(b, np.ndarray) and b.size == 1 for b in bounds):
        lo, hi = (np.ascontiguousarray(b).view(bits).reshape(-1)[0] for b in bounds)
        per = enqueue.runs_per_item(-(-out.size // 16))
        enqueue.run("clip.cl", "clip_flat", options, -(-out.size // (16 * per)), tx.buffer, out.buffer,
                    np.uint64(out.size), np.uint64(per), lo, hi, local=enqueue.group_items(per))
        return enqueue.result(out, stay)
    tl, th = (enqueue.on_device(b)[0] for b in bounds)
    shape = tuple(out.shape)
    lay = strided.layout(shape, [strided.contiguous_strides(shape), strided.broadcast_strides(tl.shape, shape),
                                 strided.broadcast_strides(th.shape, shape), strided.contiguous_strides(shape)])
    runs = -(-lay.width // 16)
    per = enqueue.runs_per_item(runs, runs * lay.height * lay.rows)
    blocks, wide = -(-runs // per), enqueue.group_items(per)
    local = enqueue.group(blocks, lay.height, widest=wide, items=wide) + (1,)
    args = lay.args()
    enqueue.run("clip.cl", "clip_strided", options, (blocks, lay.height, lay.rows), tx.buffer, tl.buffer, th.buffer,
                out.buffer, *args[:3], np.uint64(per), *args[3:], local=local)
    return enqueue.result(out, stay)
