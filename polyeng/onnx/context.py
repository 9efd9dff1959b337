"""What a converter sees of the ONNX node it converts, and the small checks every converter makes."""
from __future__ import annotations

import numpy as np

from .builder import Builder, Unsupported, Val, const


class OnnxNode:
    """One ONNX node being converted, with its builder: inputs as Vals, outputs by position."""

    def __init__(self, proto, name: str, attrs: dict, builder: Builder, opset: int):
        self.proto = proto
        self.op_type = proto.op_type
        self.name = name
        self.attrs = attrs
        self.b = builder
        self.opset = opset
        self.input_names = list(proto.input)
        self.output_names = list(proto.output)

    # --- inputs ----------------------------------------------------------------------------------
    def has(self, i: int) -> bool:
        return i < len(self.input_names) and self.input_names[i] != ""

    def val(self, i: int) -> Val | None:
        return self.b.get(self.input_names[i]) if self.has(i) else None

    def need(self, i: int, what: str) -> Val:
        v = self.val(i)
        if v is None:
            raise Unsupported(f"input {i} ({what}) is missing")
        return v

    def const(self, i: int, what: str) -> np.ndarray | None:
        """Input ``i``'s value, which must be known at load time (None when the input is absent)."""
        v = self.val(i)
        if v is None:
            return None
        if not v.is_const:
            raise Unsupported(f"{what} (input {i}) is computed at run time; polyeng needs it fixed at load time")
        return v.array

    def ints(self, i: int, what: str) -> list | None:
        array = self.const(i, what)
        return None if array is None else [int(x) for x in array.reshape(-1)]

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def sizes(self, name: str, count: int, default: int | None = None, minimum: int = 1) -> tuple:
        """An ints attribute of ``count`` values >= ``minimum`` (one per spatial dim: ``kernel_shape``,
        ``strides``, ``dilations``; ``pads`` has two); ``default`` each when it is absent, and a
        required attribute when ``default`` is None."""
        value = self.attr(name)
        if value is None:
            if default is None:
                raise ValueError(f"required attribute {name!r} is missing")
            return (default,) * count
        sizes = tuple(int(v) for v in value)
        if len(sizes) != count:
            raise ValueError(f"{name}={list(sizes)}: expected {count} sizes, one per spatial dim")
        if any(v < minimum for v in sizes):
            raise ValueError(f"{name}={list(sizes)}: each size must be >= {minimum}")
        return sizes

    # --- outputs ---------------------------------------------------------------------------------
    def used(self, i: int) -> bool:
        return i < len(self.output_names) and self.output_names[i] != ""

    def out_type(self, i: int = 0, dtype=None) -> tuple:
        """(dtype, shape) of output ``i`` as inference gave it; ``dtype`` when inference has none."""
        name = self.output_names[i]
        found_dtype, shape = self.b.types.dtype(name), self.b.types.shape(name)
        if found_dtype is None:
            found_dtype = dtype
        if found_dtype is None and self.has(0):   # inference gave up: most ops keep their input's dtype
            found_dtype = self.val(0).dtype
        if found_dtype is None:
            raise Unsupported(f"the dtype of output {name!r} is unknown (ONNX type inference could not give it)")
        return np.dtype(found_dtype), shape

    def emit(self, op: str, args: dict, i: int = 0, dtype=None, shape=..., **kwargs) -> Val:
        """Add a node computing output ``i`` (its ONNX name and inferred type) and bind it."""
        inferred_dtype, inferred_shape = self.out_type(i, dtype)
        if dtype is not None and op.startswith("onnx."):
            inferred_dtype = np.dtype(dtype)
        (val,) = self.b.emit(op, args, [(inferred_dtype, inferred_shape if shape is ... else shape)],
                             names=[self.output_names[i]], node_name=self.name if i == 0 else None, **kwargs)
        self.set(i, val)
        return val

    def set(self, i: int, val: Val) -> None:
        if self.used(i):
            self.b.set(self.output_names[i], val)

    def set_const(self, i: int, array) -> None:
        self.set(i, const(np.asarray(array), name=self.output_names[i]))

    def refuse_attrs(self, **allowed) -> None:
        """Unsupported for any attribute whose value differs from the one polyeng computes."""
        for name, ok in allowed.items():
            if name in self.attrs:
                value = self.attrs[name]
                good = ok(value) if callable(ok) else value == ok
                if not good:
                    raise Unsupported(f"{name}={value!r} is not supported")


def positive_axis(axis: int, rank, what="axis") -> int:
    if rank is None:
        if axis < 0:
            raise Unsupported(f"{what}={axis} on a tensor of unknown rank")
        return axis
    if not -rank <= axis < rank:
        raise Unsupported(f"{what}={axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
