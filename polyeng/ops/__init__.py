"""The ops: one module per op family, each holding signature, validation, output shape,
AMP category and recommended engine. ``OPS`` maps op name -> ``OpSpec``."""
import importlib

MODULES = ("concat", "permute", "select", "pooling", "upsample", "lstm", "normalization",
           "softmax", "matmul", "activation", "cast")

OPS = {}
for _name in MODULES:
    _module = importlib.import_module(f"{__name__}.{_name}")
    for _spec in getattr(_module, "SPECS", None) if hasattr(_module, "SPECS") else [_module.SPEC]:
        OPS[_spec.name] = _spec
        globals()[_spec.name] = _spec.function

__all__ = sorted(OPS)
