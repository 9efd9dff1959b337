"""What runs on a dask worker: one op or one graph on one block, under the caller's settings.

These are plain module-level functions taking a :class:`polyeng.Settings` snapshot, so a task
pickles as a reference to them plus plain values; the engines they use are made on the worker
the first time a task needs them (an OpenCL context, numba's compiled kernels).
"""
from __future__ import annotations

import numpy as np

from ..engine.call import map_arrays
from ..ops import catalogue


class Slot:
    """Where the ``index``-th block goes in an op's keyword arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"Slot({self.index})"

    def __reduce__(self):
        return (Slot, (self.index,))

    def __dask_tokenize__(self):
        return ("polyeng-slot", self.index)


def fill(template, blocks):
    """``template`` with every :class:`Slot` replaced by its block (lists, tuples, dicts kept)."""
    return map_arrays(template, lambda slot: blocks[slot.index], lambda v: type(v) is Slot)


def run_op(*blocks, op: str, settings, template: dict, keep_prefix=None):
    """The op on these blocks. ``keep_prefix=(p, tail)`` (reshape): the target shape is the
    block's first ``p`` dims followed by ``tail``."""
    kwargs = fill(template, blocks)
    if keep_prefix is not None:
        p, tail = keep_prefix
        kwargs["shape"] = tuple(kwargs["x"].shape[:p]) + tuple(tail)
    with settings:
        return catalogue.specs()[op].function(**kwargs)


def run_matmul(a_blocks, b_blocks, *, settings, out_dtype):
    """matmul with a chunked contraction axis: the blocks' products summed in the result dtype
    (f32 or f64 for floats: 16-bit results are never split) or, for bool, or-ed."""
    from ..ops import matmul
    out_dtype = np.dtype(out_dtype)
    with settings:
        partials = [matmul(a, b) for a, b in zip(a_blocks, b_blocks)]
    total = np.asarray(partials[0], dtype=out_dtype).copy()
    for part in partials[1:]:
        if out_dtype == np.bool_:
            np.logical_or(total, part, out=total)
        else:
            np.add(total, part, out=total, casting="unsafe")
    return total


def part(result, *, path: tuple):
    """One result of an op that returns several (``path`` indexes into the nested tuples)."""
    for i in path:
        result = result[i]
    return result


def run_graph(graph, *blocks, settings, in_axis: int, out_axes: list):
    """The whole graph on one batch chunk; its computed outputs as a tuple. ValueError when an
    output does not have the chunk's rows along its batch axis."""
    with settings:
        result = graph._run_flat(blocks)
    rows = next(b.shape[in_axis] for b in blocks if getattr(b, "ndim", 0) > in_axis)
    for value, axis in zip(result, out_axes):
        if value.ndim <= axis or value.shape[axis] != rows:
            raise ValueError(f"graph {graph.name} returned an output of shape {value.shape} for a batch chunk of "
                             f"{rows} rows; a graph runs on dask arrays only when every output keeps the batch "
                             f"(along axis {axis} here)")
    return tuple(result)
