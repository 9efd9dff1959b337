"""The decision cache: what the selector decided for a call signature, kept for the next call.

A call's signature is its op, the fp math mode, the user's engine scope, and, per argument,
the dtype, shape and strides of arrays and the value of everything else (a dtype argument too). Selection reads
nothing else (``accepts`` and recommendation rules look at shapes, dtypes and options, never
at array values), so a cached plan is the plan the selector would make again. The cache
lives on the registry, so registering or unregistering a backend starts a fresh one. Ops
with a user mixed precision rule (which may look at anything) are not cached.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from . import mixed_precision

MAX_ENTRIES = 4096
_SCALARS = frozenset({int, float, bool, str, type(None), complex})


class _Uncacheable(Exception):
    pass


def _signature(value):
    kind = type(value)
    if kind is np.ndarray:
        return (value.dtype, value.shape, value.strides)
    if kind in _SCALARS:
        return (kind, value)   # the kind keeps True, 1 and 1.0 apart
    if kind is tuple or kind is list:
        return (kind,) + tuple([_signature(v) for v in value])
    if isinstance(value, np.generic):
        return (kind, value.dtype)
    if isinstance(value, np.dtype):   # cast's target: its type is np.dtype's subclass for that dtype
        return (np.dtype, value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):   # a device tensor
        return (kind, value.dtype, tuple(value.shape))
    raise _Uncacheable


def key_for(op: str, args: dict, mode, scope):
    """The cache key of a call, or None when the call's decision must not be cached."""
    if mixed_precision.override.get() or mixed_precision.user_rules.get(op):   # a user rule may look at anything
        return None
    try:
        return (op, mode, scope.engine, scope.fallback) + tuple([_signature(v) for v in args.values()])
    except _Uncacheable:
        return None


@dataclass(frozen=True)
class Step:
    """One engine of the plan, with what its kernel needs done to the arguments."""
    engine: str
    kernel: object          # KernelRecord
    compute: str            # compute type under the fp math mode
    convert: bool           # float arrays need widening or down-conversion first
    to_host: bool           # some argument is a device tensor of another engine


class PlanCache:
    """A bounded dict of plans; cleared whole when full (signatures of a model repeat, so
    a working set far below the bound is the normal case)."""

    def __init__(self):
        self._plans: dict = {}
        self._lock = threading.Lock()

    def get(self, key):
        return self._plans.get(key)

    def put(self, key, plan) -> None:
        with self._lock:
            if len(self._plans) >= MAX_ENTRIES:
                self._plans.clear()
            self._plans[key] = plan

    def __len__(self) -> int:
        return len(self._plans)
