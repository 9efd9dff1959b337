"""ONEDNN: oneDNN's primitives through its C API (ctypes), from the ``onednn-cpu-gomp`` wheel.

Kernel modules (same file names as ``basic``) are imported on first call, like NUMBA's. Each
kernel builds its primitive once per call signature (``_primitive.cached``) and reads 16-bit
storage as stored. ALLOW ops take f32 data unrounded and hand the fp math mode to oneDNN as its
fpmath attribute (``_fpmath.py``), so a bf16 mode runs f32 products on the CPU's bf16 units.
Each kernel's ``accepts`` turns down what oneDNN lacks (dtypes, ranks, options), with the reason.
Modules with a leading underscore are the engine's own support code, not op families.
"""
from ...engine.hookspecs import hookimpl
from .._loader import register_kernels
from . import _fpmath

NAME = "onednn"


def availability():
    from . import _lib
    reason = _lib.platform_reason()
    if reason:
        return False, reason
    try:
        _lib.lib()
        _lib.engine()
    except Exception as exc:
        return False, f"oneDNN cannot be loaded: {type(exc).__name__}: {exc}"
    return True, ""


def describe():
    from . import _lib
    native = ", ".join(_fpmath.native_types()) or "none"
    return _lib.details() + [f"fp math down-conversions this CPU computes natively: {native}", _programs_loop()]


def _programs_loop() -> str:
    """How graphs' oneDNN programs run: in llvmlite's compiled loop (its machine code in the cache
    folder), or from Python and why."""
    from . import _native
    if not _native.available():
        return f"programs' compiled loop: none, programs run from Python ({_native._loop.get('error')})"
    import llvmlite
    from . import _llvm
    return (f"programs' compiled loop: llvmlite {llvmlite.__version__}, machine code kept in "
            f"{_llvm.cache_folder()}")


def _last_impl() -> str:
    from ._primitive import last_impl
    return last_impl()


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability, details=describe, call_note=_last_impl)
    register_kernels(registry, NAME, __name__, native_storage=True, compute_types=_fpmath.compute_types,
                     own_fp_math=True, engine_rule=_engine_rule)


MAX_RANK = 12   # DNNL_MAX_NDIMS


def _engine_rule(spec):
    return _layout_rejection


def _layout_rejection(call):
    """What no kernel here takes: arrays of more than 12 dimensions (oneDNN's limit), and strides
    that are not whole elements (a field of a structured array), which oneDNN cannot describe."""
    for name, a in call.tensors().items():
        if not hasattr(a, "strides"):
            continue
        if a.ndim > MAX_RANK:
            return f"{name} has {a.ndim} dimensions; oneDNN takes at most {MAX_RANK}"
        if any(s % a.itemsize for s in a.strides):
            return f"{name} has strides {a.strides} that are not whole {a.itemsize}-byte elements"
    return None
