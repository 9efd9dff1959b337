"""NUMBA: JIT-compiled CPU kernels, one module per op family (same file names as ``basic``).

numba is imported on first use, not when polyeng is imported: registration only records
lazy kernels, and the first call of an op imports its module (and compiles or loads its
machine code from the on-disk cache).
"""
from __future__ import annotations

import importlib
import importlib.util
import threading

from ...engine.hookspecs import hookimpl

NAME = "numba"

# op -> module holding its kernel (the module's KERNELS dict maps op -> function).
OPS = {
    "concat": "concat", "permute_contiguous": "permute", "select": "select",
    "avg_pool2d": "pooling", "avg_pool3d": "pooling", "max_pool2d": "pooling", "max_pool3d": "pooling",
    "upsample_bilinear2d": "upsample", "upsample_nearest": "upsample",
    "lstm": "lstm", "layer_norm": "normalization", "softmax": "softmax", "log_softmax": "softmax",
    "matmul": "matmul", "linear": "matmul", "gelu": "activation", "cast": "cast",
}
# Every kernel reads and writes float16/bfloat16 storage itself (native_storage): the
# dispatcher's numpy conversions of f16 cost more than the JIT ones (widen.py).


def availability():
    try:
        import numba  # noqa: F401  (heavy import, done only when availability is asked)
    except Exception as exc:
        return False, f"numba cannot be imported: {type(exc).__name__}: {exc}"
    return True, ""


class LazyKernel:
    """Imports the kernel's module on first call; afterwards calls the kernel directly."""

    __slots__ = ("op", "module", "package", "fn", "_lock")

    def __init__(self, op: str, module: str, package: str = __name__):
        self.op, self.module, self.package, self.fn, self._lock = op, module, package, None, threading.Lock()

    def __call__(self, **kwargs):
        fn = self.fn
        if fn is None:
            fn = self.load()
        return fn(**kwargs)

    def load(self):
        with self._lock:
            if self.fn is None:
                module = importlib.import_module(f"{self.package}.{self.module}")
                self.fn = module.KERNELS[self.op]
        return self.fn

    def __repr__(self) -> str:
        return f"<kernel {self.op} from {self.package}.{self.module}>"


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(f"{__name__}.{module}") is not None


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability)
    for op, module in OPS.items():
        if _module_exists(module):
            registry.add_kernel(op, NAME, LazyKernel(op, module), native_storage=True)
