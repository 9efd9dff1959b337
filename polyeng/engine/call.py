"""``OpSpec`` (what an op declares) and ``Call`` (one validated call of it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .amp import Category


@dataclass(frozen=True)
class OpSpec:
    """Everything the engine needs to know about an op; each ``polyeng/ops`` module declares one.

    ``validate(**kwargs)`` returns the validated keyword arguments (same names as the public
    function) or raises ValueError/TypeError naming the argument. ``output_dtype(args)`` is
    the storage dtype of the result. ``exact`` ops only move or compare data, so they run
    in their storage dtype and are never converted. ``recommend(call)`` names the engine to
    prefer for these arguments; ``preference`` is the documented order tried after it.
    """
    name: str
    function: Callable
    validate: Callable[..., dict]
    category: Category
    output_dtype: Callable[[dict], np.dtype]
    exact: bool = False
    preference: tuple = ("basic",)
    recommend: Optional[Callable[["Call"], Optional[str]]] = None
    doc: str = ""


class Call:
    """One op call after validation: what ``accepts(call)`` and the selector look at."""

    __slots__ = ("op", "args", "spec", "storage_dtype", "fp_math_mode", "category", "accumulation_dtype",
                 "allowed_compute")

    def __init__(self, spec: OpSpec, args: dict):
        self.spec = spec
        self.op = spec.name
        self.args = args
        self.storage_dtype = None      # the dtype results are returned in
        self.fp_math_mode = None
        self.category = spec.category  # after the mixed precision rules
        self.accumulation_dtype = "float32"
        self.allowed_compute = ()      # compute types the mode allows, most preferred first

    def tensors(self) -> dict:
        """name -> tensor for every array argument (lists and tuples flattened as name[i])."""
        return tensors_of(self.args)

    def __repr__(self) -> str:
        return f"Call({self.op}, {', '.join(self.tensors())})"


def tensors_of(args: dict) -> dict:
    """name -> tensor for every array in ``args`` (lists and tuples flattened as name[i])."""
    found = {}

    def walk(name, value):
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(f"{name}[{i}]", item)
        elif hasattr(value, "shape") and hasattr(value, "dtype"):
            found[name] = value
    for name, value in args.items():
        walk(name, value)
    return found


def _is_numpy(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def map_arrays(value, fn, is_leaf=_is_numpy):
    """Apply ``fn`` to every leaf (by default: numpy array or scalar) inside nested lists,
    tuples and dicts, keeping the structure."""
    if is_leaf(value):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_arrays(v, fn, is_leaf) for v in value)
    if isinstance(value, dict):
        return {k: map_arrays(v, fn, is_leaf) for k, v in value.items()}
    return value
