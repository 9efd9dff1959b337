"""permute_contiguous on OPENCL (permute.cl): any rank and dtype, moved as words through the
strided layout of ``_strided.py`` (dimensions contiguous in both input and output merged)."""
from __future__ import annotations

from . import _enqueue as enqueue, _strided as strided


def permute_contiguous(p, x, dims):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if tx.size:
        source = strided.contiguous_strides(tx.shape)
        strided.copy(tx, out, p.shape, [source[d] for d in dims], strided.contiguous_strides(p.shape))
    return enqueue.result(out, stay)
