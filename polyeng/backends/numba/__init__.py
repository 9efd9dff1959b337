"""NUMBA: JIT-compiled CPU kernels, one module per op family (same file names as ``basic``).

numba is imported on first use, not when polyeng is imported: registration only records
lazy kernels, and the first call of an op imports its module (and compiles or loads its
machine code from the on-disk cache).
"""
from __future__ import annotations

import importlib
import importlib.util

from ...engine.hookspecs import hookimpl
from ..lazy import LazyKernel

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


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(f"{__name__}.{module}") is not None


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability)
    for op, module in OPS.items():
        if _module_exists(module):
            registry.add_kernel(op, NAME, LazyKernel(op, module, __name__), native_storage=True)
