"""permute_contiguous on OPENCL (permute.cl): any rank and dtype, moved as words through the
strided layout of ``strided.py`` (dimensions contiguous in both input and output merged)."""
from __future__ import annotations

from . import _enqueue as enqueue, _strided as strided


def permute_contiguous(p, x, dims):
    tx, stay = enqueue.on_device(x)
    shape = tuple(tx.shape[d] for d in dims)
    out = enqueue.empty(shape, tx.dtype, not stay)
    if tx.size:
        source = strided.contiguous_strides(tx.shape)
        copy(tx, out, shape, [source[d] for d in dims], strided.contiguous_strides(shape))
    return enqueue.result(out, stay)


def copy(src, dst, shape, src_strides, dst_strides, src_offset=0, dst_offset=0) -> None:
    """Copy the words of ``src`` seen through ``src_strides`` over ``shape`` into ``dst`` seen
    through ``dst_strides`` (both in elements, plus offsets)."""
    lay = strided.layout(shape, [src_strides, dst_strides], [src_offset, dst_offset])
    wide = lay.unit_width(steps=(1,))   # contiguous rows: 16 words a work item
    items, local = lay.range_and_group(16 if wide else 1)
    enqueue.run("permute.cl", "strided_copy16" if wide else "strided_copy", enqueue.word_options(src.dtype),
               items, src.buffer, dst.buffer, *lay.args(), local=local)
