"""Kernels whose module is imported on first call: engines with heavy libraries (numba,
pyopencl) register every kernel at start-up without importing them."""
from __future__ import annotations

import importlib
import threading


class LazyKernel:
    """Imports the kernel's module on first call; afterwards calls the kernel directly."""

    __slots__ = ("op", "module", "package", "fn", "_lock")

    def __init__(self, op: str, module: str, package: str):
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
