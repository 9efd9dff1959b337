"""pad on OPENCL (pad.cl): every dtype moved as unsigned words, so results are exact and f64
needs no cl_khr_fp64. The op's ``movement_plan`` reduces the call to rows along its last padded
dim, whole blocks of the dims after it moving as wide words; a work item writes up to ``per``
runs of 16 words of one row (``enqueue.runs_per_item``), the mode a build option. A call that
pads nothing is the strided copy of ``_strided.py``."""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue, _strided as strided

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MODE = {"constant": (), "reflect": ("-DPAD_REFLECT=1",), "replicate": ("-DPAD_REPLICATE=1",)}


def pad(p, x, pads, mode, value):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(p.shape, p.dtype, not stay)
    if out.size == 0:
        return enqueue.result(out, stay)
    plan = p.plan
    if plan.copy:
        shape = (out.size,)
        strided.copy(tx, out, shape, [1], [1])
        return enqueue.result(out, stay)
    word = _UINT[plan.word]
    fill = np.full(plan.word // p.dtype.itemsize, p.fill, p.dtype).view(word)[0]
    positions = int(plan.out_shape[-1])
    rows = plan.rows
    runs = -(-positions * plan.inner // 16)
    per = enqueue.runs_per_item(runs, runs * rows)
    blocks = -(-runs // per)
    items = enqueue.group_items(per) if per > 1 else enqueue.LOCAL_SIZE
    local = enqueue.group(blocks, rows, widest=items, items=items)
    # constant padding of an empty dim reads nothing of x: the output's buffer stands in for x's
    source = tx.buffer if tx.size else out.buffer
    enqueue.run("pad.cl", "pad_words", enqueue.word_options(word) + _MODE[mode], (blocks, rows), source,
                out.buffer, np.uint64(rows), np.uint64(positions), np.uint64(plan.inner), np.uint64(per),
                np.uint32(len(plan.out_shape) - 1), enqueue.upload(plan.in_shape), enqueue.upload(plan.out_shape),
                enqueue.upload(plan.left), enqueue.upload(plan.in_strides), fill, local=local)
    return enqueue.result(out, stay)
