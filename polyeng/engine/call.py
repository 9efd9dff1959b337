"""``Prepared`` (what an op derives once per call signature) and ``Call`` (one validated call of an op)."""
from __future__ import annotations

import numpy as np



class Prepared:
    """What a kernel needs beyond the arrays, derived once per call signature by the op's module.

    Every op's ``prepare(args)`` sets ``shape`` (the result's shape; for ops with several
    results, the first one's) and ``dtype`` (the storage dtype results are returned in), plus
    what its family's kernels share: pooling windows and divisors, interpolation tables,
    promoted dtypes, broadcast shapes. It depends on shapes, dtypes and options only, never
    on array values, so a cached plan keeps it for every later call of the same signature.
    Built-in kernels are called as ``kernel(prepared, **args)`` and never recompute it.

    A fact given as ``later(fn)`` is computed by ``fn()`` when a kernel first reads it: tables
    one engine's kernels need are not built for a call another engine runs, nor by ``explain``
    (whose placeholder inputs may describe arrays far too large to hold such tables).
    """

    def __init__(self, shape, dtype, **facts):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._later = {name: value.fn for name, value in facts.items() if isinstance(value, later)}
        self.__dict__.update((name, value) for name, value in facts.items() if not isinstance(value, later))

    def __getattr__(self, name):   # only reached for a fact not computed yet
        fn = self.__dict__.get("_later", {}).get(name)
        if fn is None:
            raise AttributeError(f"prepared call has no fact {name!r}")
        value = self.__dict__[name] = fn()   # two threads may both compute it: same value
        self._later.pop(name, None)          # nothing the function captured is kept any longer
        return value

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.__dict__.items() if k != "_later"}
        shown.update((k, "<later>") for k in list(self._later) if k not in shown)
        return "Prepared(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


class later:
    """A prepared fact computed on first use (see :class:`Prepared`)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


class Call:
    """One op call after validation: what ``accepts(call)`` and the selector look at."""

    __slots__ = ("op", "args", "spec", "prepared", "storage_dtype", "fp_math_mode", "category",
                 "accumulation_dtype", "allowed_compute")

    def __init__(self, spec, args: dict):
        self.spec = spec
        self.op = spec.name
        self.args = args
        self.prepared = None           # the op's Prepared facts for these arguments
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
    for name, value in args.items():
        _collect_tensors(name, value, found)
    return found


def _collect_tensors(name, value, found: dict) -> None:
    # not a closure calling itself: that would be a reference cycle holding the arguments
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect_tensors(f"{name}[{i}]", item, found)
    elif hasattr(value, "shape") and hasattr(value, "dtype"):
        found[name] = value


def is_device_tensor(value) -> bool:
    """Whether ``value`` is an engine's device tensor (an array-like with a shape that numpy does not own)."""
    return hasattr(value, "shape") and not isinstance(value, (np.ndarray, np.generic))


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

