"""One block of memory for a program's internal buffers, each placed by when a run uses it.

A program (``segment.Program``) gives each value it makes a byte buffer of its own while it is
built. A run uses a buffer only from the execution that first writes it to the last one that
reads it, so buffers whose spans do not meet may share bytes. ``share`` finds each buffer's span
in the program's executions, places the buffers in one block (the largest first, each at the
lowest offset free of every placed buffer whose span meets its own) and points the executions at
their places.

A buffer keeps bytes of its own where a run may read what an earlier run or the build left
there: its first execution in a run reads it (a constant, a value the build filled), or anything
outside the executions reads it at other times than the run's end. What the program reads after
its executions (its outputs, the scans of its checks) holds its buffer to the run's end.
"""
from __future__ import annotations

import bisect

import numpy as np

from . import _constants as C
from .._address import address
from ._primitive import aligned_empty

WRITES = frozenset((C.ARG_DST, C.ARG_DST_ITER, C.ARG_DST_ITER_C, C.ARG_WORKSPACE))
ALIGN = 64
END = float("inf")


class _Region:
    """Bytes [start, stop) of the program's buffers: one buffer, or buffers that overlap."""
    __slots__ = ("start", "stop", "first", "last", "movable", "offset")

    def __init__(self, start, stop):
        self.start, self.stop = start, stop
        self.first = self.last = None   # the first and last execution that use it
        self.movable = True
        self.offset = None

    @property
    def size(self) -> int:
        return -(-(self.stop - self.start) // ALIGN) * ALIGN


def _regions(buffers) -> list:
    """The regions of ``buffers`` (byte arrays), by start."""
    spans = sorted((address(a), address(a) + a.nbytes) for a in buffers if a.nbytes)
    regions = []
    for start, stop in spans:
        if regions and start < regions[-1].stop:
            regions[-1].stop = max(regions[-1].stop, stop)
        else:
            regions.append(_Region(start, stop))
    return regions


def _flat_bytes(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.uint8 and a.ndim == 1 and a.flags.c_contiguous


class _Finder:
    def __init__(self, regions):
        self.regions = regions
        self.starts = [r.start for r in regions]

    def __call__(self, array):
        """The region holding ``array``'s first byte, or None."""
        if not isinstance(array, np.ndarray) or not array.nbytes:
            return None
        where = address(array)
        i = bisect.bisect_right(self.starts, where) - 1
        if i >= 0 and where < self.regions[i].stop:
            return self.regions[i]
        return None


def share(program) -> int:
    """Places ``program``'s buffers in one block where that takes fewer bytes; returns the bytes
    saved (0 where nothing moved). The program's executions, buffers and checks are pointed at
    the new places."""
    regions = _regions(program.buffer.values())
    if len(regions) < 2:
        return 0
    find = _Finder(regions)
    for index, (_, template, _) in enumerate(program.calls):
        touched = {}
        for arg, (kind, value) in template.items():
            if kind != "buf":
                continue
            region = find(value)
            if region is None:
                continue
            if not _flat_bytes(value):
                region.movable = False
            touched[id(region)] = (region, touched.get(id(region), (None, True))[1] and arg in WRITES)
        for region, written in touched.values():
            if region.first is None:
                region.first = index
                if not written:   # read before any write of the run: its bytes outlive a run
                    region.movable = False
            region.last = index
    held = [program.buffer.get(name) for name in _read_after(program)]
    held += [check[1] for check in program.subnormal_checks + program.small_checks if check[0] == "buf"]
    for value in held:
        region = find(value)
        if region is not None:
            region.last = END
            if not _flat_bytes(value):
                region.movable = False
    moving = [r for r in regions if r.movable and r.first is not None]
    if len(moving) < 2:
        return 0
    total = _place(moving)
    before = sum(r.size for r in moving)
    if total >= before:
        return 0
    block = aligned_empty(total)

    def moved(value):
        region = find(value) if isinstance(value, np.ndarray) else None
        if region is None or region.offset is None:
            return value
        at = region.offset + address(value) - region.start
        return block[at:at + value.nbytes]

    for name, value in list(program.buffer.items()):
        program.buffer[name] = moved(value)
    program.calls = [(prim, {arg: (kind, moved(value) if kind == "buf" else value)
                             for arg, (kind, value) in template.items()}, work)
                     for prim, template, work in program.calls]
    program.subnormal_checks = [(kind, moved(value) if kind == "buf" else value, *rest)
                                for kind, value, *rest in program.subnormal_checks]
    program.small_checks = [(kind, moved(value) if kind == "buf" else value, *rest)
                            for kind, value, *rest in program.small_checks]
    program.arena = block
    return before - total


def _read_after(program):
    """The values the program reads after its executions: its outputs (the final reorders) and
    the sources of its layer norms' row checks."""
    names = list(program.outputs) + [source for _, _, source in program.row_checks]
    for name in names:
        while name in program.alias:
            name = program.alias[name]
        yield name


def _place(regions) -> int:
    """Gives each region an offset (the largest first, at the lowest offset clear of the placed
    regions whose spans meet its own); returns the block's size."""
    placed = []
    for region in sorted(regions, key=lambda r: (-r.size, r.first)):
        busy = sorted((p.offset, p.offset + p.size) for p in placed
                      if not (p.last < region.first or region.last < p.first))
        offset = 0
        for start, stop in busy:
            if offset + region.size <= start:
                break
            offset = max(offset, stop)
        region.offset = offset
        placed.append(region)
    return max(r.offset + r.size for r in placed)
