"""concat as a NUMBA kernel: one parallel launch copies every piece's rows, as bytes, into its
column range of the output seen as (outer, total) rows.

Pieces are first promoted to the output dtype with numpy (the BASIC rule); after that concat
only moves bytes, so a single compiled kernel serves every dtype and any number of pieces
(the pieces are passed as addresses, which also keeps the launch count at one per call).
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._runtime import jit, launch

_TASK_BYTES = 64 * 1024   # bytes per parallel task: amortizes the task, still balances two pieces
@intrinsic
def _copy_bytes(typingctx, dst_address, src_address, nbytes):
    """memcpy between raw addresses (libc's memcpy beats a vectorized element loop on long rows)."""
    def codegen(context, builder, signature, args):
        dst, src, count = args
        cgutils.raw_memcpy(builder, builder.inttoptr(dst, cgutils.voidptr_t),
                           builder.inttoptr(src, cgutils.voidptr_t), count, 1)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


@jit(parallel=True)
def _concat(out_address, out_row_bytes, rows, sources, row_bytes, offsets, rows_per_task,
            blocks_per_row, first_task, block_bytes):
    """Piece ``k`` (address ``sources[k]``, ``row_bytes[k]`` per row) lands at byte ``offsets[k]``
    of every output row. Its tasks ``first_task[k]:first_task[k + 1]`` each copy a chunk of
    ``rows_per_task[k]`` rows, or one ``block_bytes`` block of a row longer than that."""
    pieces = sources.size
    for task in prange(first_task[pieces]):
        k = 0
        while first_task[k + 1] <= task:
            k += 1
        local = task - first_task[k]
        chunk = local // blocks_per_row[k]
        lo = (local - chunk * blocks_per_row[k]) * block_bytes
        width = min(row_bytes[k] - lo, block_bytes)
        first_row = chunk * rows_per_task[k]
        for row in range(first_row, min(first_row + rows_per_task[k], rows)):
            _copy_bytes(out_address + row * out_row_bytes + offsets[k] + lo,
                        sources[k] + row * row_bytes[k] + lo, width)


def concat(p, tensors, axis):
    dtype, shape = p.dtype, p.shape
    out = np.empty(shape, dtype)
    if out.size == 0:
        return out
    rows = math.prod(shape[:axis])
    inner_bytes = out.nbytes // (rows * shape[axis])
    pieces, sources, row_bytes, offsets, rows_per_task, blocks_per_row, first_task = [], [], [], [], [], [], [0]
    offset = 0
    for t in tensors:
        width = t.shape[axis] * inner_bytes
        if width:
            piece = np.ascontiguousarray(t.astype(dtype, copy=False))
            pieces.append(piece)   # keeps converted copies alive while the kernel reads them
            sources.append(piece.ctypes.data)
            row_bytes.append(width)
            offsets.append(offset)
            per_task = max(1, _TASK_BYTES // width)
            blocks = -(-width // _TASK_BYTES)
            rows_per_task.append(per_task)
            blocks_per_row.append(blocks)
            first_task.append(first_task[-1] + -(-rows // per_task) * blocks)
        offset += width
    arrays = [np.array(v, np.int64) for v in (sources, row_bytes, offsets, rows_per_task, blocks_per_row, first_task)]
    launch(_concat, out.nbytes, out.ctypes.data, offset, rows, *arrays, _TASK_BYTES)
    return out
