"""Strided layouts for OPENCL's data-movement kernels (permute, select, concat), and ``copy``,
the strided word copy of permute.cl that permute and concat run.

A movement kernel walks its output shape and reads (or writes) each operand through element
strides. ``layout`` first merges dimensions that are contiguous in every operand (and drops
size-1 ones), then splits what remains into the two innermost dimensions, run as dimensions 0
and 1 of the kernel's range (adjacent work items touch adjacent addresses: vectorized by PoCL,
coalesced on a GPU, no per-element division), and the outer dimensions, flattened into rows
whose start offset per operand comes from a host table (range dimension 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _enqueue as enqueue


@dataclass(frozen=True)
class Layout:
    width: int      # innermost dimension (range dimension 0)
    height: int     # the next one (range dimension 1), 1 if none
    rows: int       # product of the outer dimensions (range dimension 2)
    inner: tuple    # per operand: (stride along width, stride along height)
    bases: tuple    # per operand: int64 array, the offset of each row

    def range_and_group(self, per_item: int = 1) -> tuple[tuple, tuple]:
        """(items, local) for ``enqueue.run`` with ``per_item`` adjacent elements of a row per work
        item: whole rows grouped, up to 256 items a group."""
        blocks = -(-self.width // per_item)
        lx, ly = enqueue.group(blocks, self.height)
        return (blocks, self.height, self.rows), (lx, ly, 1)

    def unit_width(self, steps=(0, 1)) -> bool:
        """Whether every operand steps along the width by one of ``steps`` (the output last, by 1)."""
        return all(s0 in steps for s0, _ in self.inner[:-1]) and self.inner[-1][0] == 1

    def args(self) -> list:
        """Kernel arguments after the buffers: width, height, rows, then per operand its two
        inner strides and its row table."""
        out = [np.uint64(self.width), np.uint64(self.height), np.uint64(self.rows)]
        for (s0, s1), base in zip(self.inner, self.bases):
            out += [np.int64(s0), np.int64(s1), enqueue.upload(base)]
        return out


def contiguous_strides(shape) -> list:
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    return strides


def broadcast_strides(shape, out_shape) -> list:
    """Element strides of a C-ordered ``shape`` against ``out_shape`` (0 where broadcast)."""
    own = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return [0 if n == 1 else s for n, s in zip(own, contiguous_strides(own))]


def layout(shape, strides: list, offsets=None) -> Layout:
    """The layout of a walk over ``shape`` (non-empty) reading operand k at ``offsets[k] +
    sum(index * strides[k])``, strides in elements."""
    offsets = offsets or [0] * len(strides)
    dims = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, st in dims:
        if merged:
            m, mst = merged[-1]
            if all(a == b * n for a, b in zip(mst, st)):
                merged[-1] = (m * n, st)
                continue
        merged.append((n, st))
    if not merged:
        merged = [(1, [0] * len(strides))]
    width, w_st = merged[-1]
    height, h_st = merged[-2] if len(merged) > 1 else (1, [0] * len(strides))
    outer = merged[:-2]
    bases = []
    for k, start in enumerate(offsets):
        base = np.array([start], np.int64)
        for n, st in outer:
            base = (base[:, None] + np.arange(n, dtype=np.int64) * st[k]).ravel()
        bases.append(base)
    rows = math.prod(n for n, _ in outer)
    return Layout(width, height, rows, tuple(zip(w_st, h_st)), tuple(bases))


def copy(src, dst, shape, src_strides, dst_strides, src_offset=0, dst_offset=0) -> None:
    """Copy the words of ``src`` seen through ``src_strides`` over ``shape`` into ``dst`` seen
    through ``dst_strides`` (both in elements, plus offsets)."""
    lay = layout(shape, [src_strides, dst_strides], [src_offset, dst_offset])
    wide = lay.unit_width(steps=(1,))   # contiguous rows: 16 words a work item
    items, local = lay.range_and_group(16 if wide else 1)
    enqueue.run("permute.cl", "strided_copy16" if wide else "strided_copy", enqueue.word_options(src.dtype),
                items, src.buffer, dst.buffer, *lay.args(), local=local)
