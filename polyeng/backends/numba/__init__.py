"""NUMBA: JIT-compiled CPU kernels, one module per op family (same file names as ``basic``).

numba is imported on first use, not when polyeng is imported: registration reads which
kernels each family file defines from its source, and the first call of an op imports its
module (and compiles or loads its machine code from the on-disk cache). Modules with a
leading underscore are the engine's own support code, not op families.

Every kernel reads and writes float16/bfloat16 storage itself (native_storage): the
dispatcher's numpy conversions of f16 cost more than the JIT ones (``_f32_path.py``).
"""
from __future__ import annotations

from ...engine.hookspecs import hookimpl
from .._loader import register_kernels

NAME = "numba"


def availability():
    try:
        import numba  # noqa: F401  (heavy import, done only when availability is asked)
    except Exception as exc:
        return False, f"numba cannot be imported: {type(exc).__name__}: {exc}"
    return True, ""


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability)
    register_kernels(registry, NAME, __name__, native_storage=True)
