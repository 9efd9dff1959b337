"""The traced value: what a function being traced holds in place of each array computed from its inputs.

It carries the concrete array of the example run, so shapes and dtypes are known at every
node, and it turns what numpy code does with it into polyeng op calls (recorded by the tracer)
or numpy nodes: the operators ``+ - * / ** @`` and unary ``-``, ``.reshape``, ``.T``,
``.transpose``, ``.astype``, indexing and slicing, and the numpy functions listed in
``UFUNCS`` and ``FUNCTIONS``. Anything else raises TypeError naming the numpy function or
method: a value computed from the inputs is never silently turned into a constant.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops import catalogue
from ..engine import dtypes as dt

# numpy ufunc name -> the op a trace records for it (each op's OpSpec.ufuncs)
UFUNCS = {ufunc: spec.function for spec in catalogue.specs().values() for ufunc in spec.ufuncs}


class Traced:
    """A value of the graph being traced (see the module docstring)."""

    __array_priority__ = 1000   # ndarray <op> Traced defers to Traced
    __slots__ = ("tracer", "name", "value")

    def __init__(self, tracer, name: str, value):
        self.tracer, self.name, self.value = tracer, name, value

    # --- what is known statically -------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self.value.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.value.dtype)

    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.value.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.value.shape:
            raise TypeError("len() of a 0-d traced value")
        return self.value.shape[0]

    def __repr__(self) -> str:
        return f"Traced(%{self.name}: {dt.short_name(self.dtype)}{list(self.shape)})"

    # --- operators ------------------------------------------------------------------------
    def __add__(self, other): return ops.add(self, other)
    def __radd__(self, other): return ops.add(other, self)
    def __sub__(self, other): return ops.sub(self, other)
    def __rsub__(self, other): return ops.sub(other, self)
    def __mul__(self, other): return ops.mul(self, other)
    def __rmul__(self, other): return ops.mul(other, self)
    def __truediv__(self, other): return ops.div(self, other)
    def __rtruediv__(self, other): return ops.div(other, self)
    def __pow__(self, other): return ops.pow(self, other)
    def __rpow__(self, other): return ops.pow(other, self)
    def __matmul__(self, other): return ops.matmul(self, other)
    def __rmatmul__(self, other): return ops.matmul(other, self)
    def __neg__(self): return self.tracer.numpy_node("np.negative", x=self)
    def __pos__(self): return self

    # comparisons record polyeng's (bool results, as numpy's operators give); hashing stays by identity
    def __eq__(self, other): return ops.equal(self, other)
    def __ne__(self, other): return ops.not_equal(self, other)
    def __lt__(self, other): return ops.less(self, other)
    def __le__(self, other): return ops.less_equal(self, other)
    def __gt__(self, other): return ops.greater(self, other)
    def __ge__(self, other): return ops.greater_equal(self, other)
    def __and__(self, other): return ops.logical_and(self, other)
    def __rand__(self, other): return ops.logical_and(other, self)
    def __or__(self, other): return ops.logical_or(self, other)
    def __ror__(self, other): return ops.logical_or(other, self)
    def __xor__(self, other): return ops.logical_xor(self, other)
    def __rxor__(self, other): return ops.logical_xor(other, self)
    def __invert__(self): return ops.logical_not(self)
    __hash__ = object.__hash__

    # --- movement ---------------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        if order != "C":
            raise TypeError(f"reshape(order={order!r}) cannot be traced: only order='C' is supported")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return ops.reshape(self, tuple(shape))

    @property
    def T(self):
        return self.tracer.numpy_node("np.transpose", x=self, axes=None)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        axes = None if axes is None or len(axes) == 0 else tuple(int(a) for a in axes)
        return self.tracer.numpy_node("np.transpose", x=self, axes=axes)

    def astype(self, dtype, *args, **kwargs):
        if args or kwargs:
            raise TypeError("astype() with arguments other than the dtype cannot be traced")
        target = dt.as_dtype(dtype, "dtype")
        if target in dt.FLOAT_DTYPES:
            return ops.cast(self, target)
        return self.tracer.numpy_node("np.astype", x=self, dtype=target)

    def __getitem__(self, key):
        return self.tracer.numpy_node("np.getitem", x=self, key=self.tracer.index_key(key))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # --- what cannot be traced ------------------------------------------------------------------
    def _refuse(self, what: str):
        raise TypeError(f"{what} of traced value %{self.name} cannot be traced: it would read the example's "
                        f"values, so the graph would not depend on its inputs; use polyeng ops instead")

    def __bool__(self): self._refuse("bool()")
    def __float__(self): self._refuse("float()")
    def __int__(self): self._refuse("int()")
    def __index__(self): self._refuse("use as an index")
    def __complex__(self): self._refuse("complex()")

    def __setitem__(self, key, value):
        raise TypeError(f"assignment into traced value %{self.name} cannot be traced (values are immutable "
                        f"in a graph); build the result with polyeng ops (select, concat) instead")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"numpy.asarray (or another conversion to a numpy array) of traced value %{self.name} "
                        f"cannot be traced: it would freeze a value computed from the inputs into a constant")

    def __getattr__(self, name):
        if hasattr(np.ndarray, name) and not name.startswith("__"):   # numpy probes dunders: AttributeError
            raise TypeError(f"numpy.ndarray.{name} of traced value %{self.name} cannot be traced; traced values "
                            f"support + - * / ** @, reshape, T, transpose, astype, indexing and the numpy "
                            f"functions {', '.join(sorted(set(UFUNCS) | set(FUNCTIONS)))}")
        raise AttributeError(f"'Traced' object has no attribute {name!r}")

    # --- numpy protocols ------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = getattr(ufunc, "__name__", str(ufunc))
        if method != "__call__":
            raise TypeError(f"numpy.{name}.{method} cannot be traced")
        if kwargs:
            raise TypeError(f"numpy.{name} with {', '.join(sorted(kwargs))}= cannot be traced")
        if name == "negative":
            return -inputs[0]
        if name == "positive":
            return inputs[0]
        op = UFUNCS.get(name)
        if op is None:
            raise TypeError(f"numpy.{name} cannot be traced; the numpy ufuncs a graph records are "
                            f"{', '.join(sorted(UFUNCS))}, negative and positive")
        return op(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        handler = FUNCTIONS.get(func.__name__)
        if handler is None:
            raise TypeError(f"numpy.{func.__name__} cannot be traced; the numpy functions a graph records are "
                            f"{', '.join(sorted(FUNCTIONS))}")
        return handler(*args, **kwargs)


def _only(name, given: dict, **allowed_defaults):
    for key, value in given.items():
        if key not in allowed_defaults or value is not allowed_defaults[key]:
            raise TypeError(f"numpy.{name} with {key}= cannot be traced")


def _concatenate(arrays, axis=0, **rest):
    _only("concatenate", rest, out=None, dtype=None)
    return ops.concat(list(arrays), axis=axis)


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    _only("mean", dict(rest, dtype=dtype, out=out), dtype=None, out=None)
    return ops.mean(a, axis=axis, keepdims=bool(keepdims))


def _reshape(a, shape=None, order="C", **rest):
    shape = rest.pop("newshape", shape)
    _only("reshape", rest, copy=None)
    return a.reshape(shape, order=order) if isinstance(a, Traced) else ops.reshape(a, shape)


def _transpose(a, axes=None):
    return a.transpose(axes)


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("numpy.where with one argument cannot be traced (its result's shape depends on values)")
    return ops.select(condition, x, y)


def _squeeze(a, axis=None):
    shape = a.shape
    if axis is None:
        target = tuple(d for d in shape if d != 1)
    else:
        axes = {ax % len(shape) for ax in ((axis,) if isinstance(axis, int) else axis)}
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError(f"cannot squeeze axis {ax} of size {shape[ax]}")
        target = tuple(d for i, d in enumerate(shape) if i not in axes)
    return ops.reshape(a, target)


def _expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = len(a.shape) + len(axes)
    axes = {ax % ndim for ax in axes}
    dims = iter(a.shape)
    return ops.reshape(a, tuple(1 if i in axes else next(dims) for i in range(ndim)))


FUNCTIONS = {"concatenate": _concatenate, "mean": _mean, "reshape": _reshape, "transpose": _transpose,
             "where": _where, "squeeze": _squeeze, "expand_dims": _expand_dims,
             "shape": lambda a: a.shape, "ndim": lambda a: a.ndim, "size": lambda a, axis=None: (
                 a.size if axis is None else a.shape[axis])}
