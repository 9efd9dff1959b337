"""BASIC: vectorised numpy kernels for every op; the reference every other engine is tested against.

The kernel of an op is the function named after it in the module of its family (see
``backends/_loader.py``).
"""
from ...engine.hookspecs import hookimpl
from .._loader import register_kernels

NAME = "basic"


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=True)
    register_kernels(registry, NAME, __name__, lazy=False)
