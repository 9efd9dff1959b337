"""Test helpers: a fake engine plugin and a fake device tensor type."""
from __future__ import annotations

import numpy as np

import polyeng


class FakeTensor:
    """A device tensor native to the fake engine: a numpy array in a box."""

    def __init__(self, array):
        self.array = np.asarray(array)
        self.shape, self.dtype = self.array.shape, self.array.dtype

    def __array__(self, dtype=None, copy=None):
        return self.array if dtype is None else self.array.astype(dtype)


class FakeEngine:
    """A plugin engine whose kernels run BASIC underneath and count their calls.

    ``reject``: op -> accepts() callable; ``fail``: ops whose kernel raises at run time;
    ``native``: return FakeTensor results and own FakeTensor inputs.
    """

    def __init__(self, name="fake", ops=("concat", "upsample_bilinear2d", "softmax"), *, reject=None,
                 fail=(), available=True, native=False):
        self.name, self.ops, self.reject, self.fail = name, ops, reject or {}, set(fail)
        self.available, self.native = available, native
        self.calls = []

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name, available=self.available,
                            reason="" if self.available is True else "fake engine switched off",
                            native_type=FakeTensor if self.native else None)
        for op in self.ops:
            registry.add_kernel(op, self.name, self._kernel(op), accepts=self.reject.get(op))

    def _kernel(self, op):
        def kernel(**kwargs):
            self.calls.append(op)
            if op in self.fail:
                raise RuntimeError(f"fake {op} kernel crashed")
            plain = {k: (np.asarray(v) if isinstance(v, FakeTensor) else
                         [np.asarray(t) for t in v] if isinstance(v, list) else v) for k, v in kwargs.items()}
            with polyeng.compute_eng("basic"):
                result = getattr(polyeng, op)(**plain)
            return FakeTensor(result) if self.native else result
        return kernel


def align_corners_unsupported(call):
    return "align_corners=True unsupported" if call.args["align_corners"] else None


def random_values(rng, shape, dtype):
    """Random values of ``dtype``: NaN, +-Inf and -0.0 first among the floats, the whole range
    (extremes included) for the ints, both values for bool."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(shape) * 100).astype(np.float32).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).astype(dtype)
    flat = a.reshape(-1)
    flat[: min(4, flat.size)] = special[: min(4, flat.size)]
    return a
