"""BASIC: vectorised numpy kernels for every op; the reference every other engine is tested against."""
import importlib

from ...engine.hookspecs import hookimpl

NAME = "basic"
MODULES = ("concat", "permute", "select", "pooling", "upsample", "lstm", "normalization",
           "softmax", "matmul", "activation", "cast")


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=True)
    for module_name in MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        for op, fn in module.KERNELS.items():
            registry.add_kernel(op, NAME, fn)
