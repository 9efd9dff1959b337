"""The ops: one module per op family, each holding signature, validation, prepared facts
(output shape and dtype, what kernels share), AMP category, recommended engine, dask chunking,
an example call and its test tolerance, all on the family's ``OpSpec``s (``catalogue.OpSpec``).

Nothing lists the families: ``catalogue.specs()`` finds them. ``polyeng.ops.OPS`` is that table
(op name -> OpSpec) and ``polyeng.ops.<op>`` each op's function; both are read on first use, so
importing this package imports no family module (the engine reads the catalogue without a circle).
"""
from . import catalogue


def __getattr__(name):
    if name.startswith("_") or catalogue.loading():   # a submodule being imported, not an op
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "OPS":
        return catalogue.specs()
    if name == "__all__":
        return list(catalogue.specs())
    spec = catalogue.specs().get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return spec.function
