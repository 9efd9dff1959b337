"""The ops: one module per op family, each holding signature, validation, prepared facts
(output shape and dtype, what kernels share), AMP category and recommended engine.
``OPS`` maps op name -> ``OpSpec``; the kernels of an op live in ``backends/<engine>/<family>.py``,
the family being the op's module name here."""
import importlib

from ..engine.call import OPS

MODULES = ("concat", "permute", "select", "pooling", "upsample", "lstm", "normalization",
           "softmax", "matmul", "activation", "cast", "arithmetic", "reduction", "reshape", "embedding")

for _name in MODULES:
    _module = importlib.import_module(f"{__name__}.{_name}")
    for _spec in _module.SPECS:
        OPS[_spec.name] = _spec
        globals()[_spec.name] = _spec.function

__all__ = sorted(OPS)
