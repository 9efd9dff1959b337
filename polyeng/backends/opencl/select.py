"""select on OPENCL (select.cl): ``cond ? then : else_`` with the two-step broadcast, moved as words.

``then`` and ``else_`` are promoted to the output dtype first (the BASIC rule); the kernel then
only picks words, so every dtype is exact and the unselected branch cannot leak a NaN. Each
operand keeps its own contiguous buffer and is read through element strides against the
output shape, 0 along the axes it is broadcast over, in the layout of ``_strided.py``.
"""
from __future__ import annotations

from . import _enqueue as enqueue, _strided as strided


def select(p, cond, then, else_, auto_broadcast):
    dtype, shape = p.dtype, p.shape
    tc, cond_stays = enqueue.on_device(cond)
    tt, then_stays = enqueue.promoted(then, dtype)
    te, else_stays = enqueue.promoted(else_, dtype)
    stay = cond_stays or then_stays or else_stays
    out = enqueue.empty(shape, dtype, not stay)
    if out.size:
        lay = strided.layout(shape, [strided.broadcast_strides(t.shape, shape) for t in (tc, tt, te)]
                             + [strided.contiguous_strides(shape)])
        wide = lay.unit_width()   # every operand contiguous or broadcast along the width
        items, local = lay.range_and_group(16 if wide else 1)
        enqueue.run("select.cl", "select_words16" if wide else "select_words", enqueue.word_options(dtype), items,
                   tc.buffer, tt.buffer, te.buffer, out.buffer, *lay.args(), local=local)
    return enqueue.result(out, stay)
