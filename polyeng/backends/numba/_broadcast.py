"""Broadcast operands described for one walk over the output (select and the arithmetic ops).

Each operand becomes a flat 1-D view of its own memory plus element strides against the
output shape (0 along broadcast axes) and the offset of its first element. Axes along which
every operand steps as along one axis are merged, so the common cases are a few long rows.
"""
from __future__ import annotations

import numpy as np


def element_strides(a, shape):
    """Element strides of ``a`` against the broadcast ``shape`` (0 along broadcast and size-1 axes);
    ``a``'s byte strides must be multiples of its item size."""
    lead = len(shape) - a.ndim
    strides = [0] * len(shape)
    for d in range(a.ndim):
        if a.shape[d] != 1:
            strides[lead + d] = a.strides[d] // a.itemsize
    return strides


def merged_layout(shape, operand_strides):
    """Drop size-1 axes and merge neighbours that every operand walks as one axis."""
    axes = [d for d in range(len(shape)) if shape[d] != 1] or [len(shape)]
    shape = list(shape) + [1]
    operand_strides = [list(s) + [0] for s in operand_strides]
    merged_shape, merged = [shape[axes[0]]], [[s[axes[0]]] for s in operand_strides]
    for d in axes[1:]:
        if all(m[-1] == s[d] * shape[d] for m, s in zip(merged, operand_strides)):
            merged_shape[-1] *= shape[d]
            for m, s in zip(merged, operand_strides):
                m[-1] = s[d]
        else:
            merged_shape.append(shape[d])
            for m, s in zip(merged, operand_strides):
                m.append(s[d])
    return merged_shape, merged


def operand_view(a, shape):
    """``(flat, start, strides)`` for operand ``a`` of an output of ``shape``: a read-only 1-D view
    of the memory ``a`` spans, from its lowest-addressed element; where ``a``'s first element sits
    in it; ``a``'s element strides against ``shape``. Every element of ``a`` is then
    ``flat[start + sum(index * stride)]`` with a position >= 0, negative strides included.

    Strides that are not whole elements (or unaligned data) are copied to a contiguous array
    first. Read-only always: numba compiles read-only and writable arrays as different types,
    and one type per dtype keeps the compiled kernels (and their disk cache) to one per dtype.
    """
    if a.flags.c_contiguous:
        flat = a.reshape(-1)
        flat.flags.writeable = False
        return flat, 0, element_strides(a, shape)
    if not a.flags.aligned or any(s % a.itemsize for s in a.strides):
        return operand_view(np.ascontiguousarray(a), shape)
    steps = [s // a.itemsize for s in a.strides]
    start = sum(-s * (n - 1) for s, n in zip(steps, a.shape) if s < 0)
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in steps)]
    span = 1 + sum(abs(s) * (n - 1) for s, n in zip(steps, a.shape))
    flat = np.lib.stride_tricks.as_strided(lowest, shape=(span,), strides=(a.itemsize,), writeable=False)
    return flat, start, element_strides(a, shape)
