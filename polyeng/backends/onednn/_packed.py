"""Constant weights reordered once into the layout and type a primitive prefers (seed 000's
"memory descriptor any": weights blocked and down-converted once for inference).

A weight counts as constant as ``backends/_constant.py`` defines it (every constant of a graph
does). Its reordered copy is kept, bounded (``MAX_PACKED``, least recently used out), with a reference to
the weight itself so that its memory cannot be reused by another array while the copy is kept.
A writeable weight is read as it lies on every call (no copy is kept of data that may change).
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from .._address import address
from .._constant import constant  # noqa: F401  (where the kernels import it from)
from . import _constants as C
from ._primitive import aligned_empty, desc_of, reorder

MAX_PACKED = 512

_packed: collections.OrderedDict = collections.OrderedDict()
_lock = threading.Lock()
stats = {"reorders": 0}


def packed_weight(prim, weight: np.ndarray) -> np.ndarray:
    """``weight`` in the layout ``prim`` chose for its weights (a byte buffer), reordered on first use."""
    target = prim.md(C.QUERY_WEIGHTS_MD)
    key = (address(weight), weight.shape, weight.strides, weight.dtype.str, id(prim))
    with _lock:
        entry = _packed.get(key)
        if entry is not None and entry[0] is prim:
            _packed.move_to_end(key)
            return entry[2]
    source = desc_of(weight)
    buffer = aligned_empty(target.size)
    step = reorder(source, target)
    step.run({C.ARG_FROM: weight, C.ARG_TO: buffer}, 1)
    stats["reorders"] += 1
    root = weight
    while isinstance(root.base, np.ndarray):
        root = root.base
    with _lock:
        _packed[key] = (prim, root, buffer)
        while len(_packed) > MAX_PACKED:
            _packed.popitem(last=False)
    return buffer


def clear() -> None:
    with _lock:
        _packed.clear()


def note_for(*names):
    """A kernel's ``note(call)`` for ``graph.explain``: which of its ``names`` arguments are constant
    and so reordered once (on the first call of each signature) instead of on every call."""
    def note(call):
        fixed = [n for n in names if isinstance(call.args.get(n), np.ndarray) and constant(call.args[n])]
        return f"{', '.join(fixed)} reordered once (constant)" if fixed else ""
    return note
