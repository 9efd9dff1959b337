"""split as a NUMBA kernel: one parallel launch copies every piece, as bytes, from its column
range of ``x`` seen as (outer, length * inner) rows (concat's copy, the other way).

Only bytes move, so one compiled kernel serves every dtype and any number of pieces (passed as
addresses). An input that is not C-contiguous is made so first.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._runtime import jit, launch
from .concat import _TASK_BYTES, _copy_bytes


@jit(parallel=True)
def _split(x_address, x_row_bytes, rows, targets, row_bytes, offsets, rows_per_task, blocks_per_row, first_task,
           block_bytes):
    """Piece ``k`` (address ``targets[k]``, ``row_bytes[k]`` per row) is byte ``offsets[k]`` on of
    every row of ``x``. Its tasks ``first_task[k]:first_task[k + 1]`` each copy a chunk of
    ``rows_per_task[k]`` rows, or one ``block_bytes`` block of a row longer than that."""
    pieces = targets.size
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
            _copy_bytes(targets[k] + row * row_bytes[k] + lo, x_address + row * x_row_bytes + offsets[k] + lo, width)


def split(p, x, split_size_or_sections, axis):
    pieces = tuple(np.empty(shape, x.dtype) for shape in p.shapes)
    if x.size == 0:
        return pieces
    x = np.ascontiguousarray(x)
    rows = math.prod(x.shape[:axis])
    inner_bytes = x.nbytes // (rows * x.shape[axis])
    targets, row_bytes, offsets, rows_per_task, blocks_per_row, first_task = [], [], [], [], [], [0]
    offset = 0
    for piece, size in zip(pieces, split_size_or_sections):
        width = size * inner_bytes
        if width:
            targets.append(piece.ctypes.data)
            row_bytes.append(width)
            offsets.append(offset)
            rows_per_task.append(max(1, _TASK_BYTES // width))
            blocks_per_row.append(-(-width // _TASK_BYTES))
            first_task.append(first_task[-1] + -(-rows // rows_per_task[-1]) * blocks_per_row[-1])
        offset += width
    arrays = [np.array(v, np.int64) for v in (targets, row_bytes, offsets, rows_per_task, blocks_per_row, first_task)]
    launch(_split, x.nbytes, x.ctypes.data, offset, rows, *arrays, _TASK_BYTES)
    return pieces
