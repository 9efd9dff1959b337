"""NUMBA: JIT-compiled CPU kernels, one module per op family (same file names as ``basic``).

numba is imported on first use, not when polyeng is imported: registration reads which
kernels each family file defines from its source, and the first call of an op imports its
module (and compiles or loads its machine code from the on-disk cache). Modules with a
leading underscore are the engine's own support code, not op families.

Every kernel reads and writes float16/bfloat16 storage itself (native_storage): the
dispatcher's numpy conversions of f16 cost more than the JIT ones (``_f32_path.py``).

A first call that really compiles (seconds, not a load from the disk cache) is announced once
per op family on the ``polyeng.compile`` logger at INFO; ``polyeng warmup`` compiles ahead.
"""
from __future__ import annotations

import logging
import threading

from ...engine import dtypes as dt
from ...engine import fpmath
from ...engine.hookspecs import hookimpl
from ...engine.mixed_precision import Category
from .._loader import register_kernels

NAME = "numba"
# INFO, not WARNING: a compile is normal work an application did not ask to hear about (a
# WARNING would reach every unconfigured program's stderr); the command line shows it.
notice_logger = logging.getLogger("polyeng.compile")


def availability():
    try:
        import numba  # noqa: F401  (heavy import, done only when availability is asked)
    except Exception as exc:
        return False, f"numba cannot be imported: {type(exc).__name__}: {exc}"
    return True, ""


def _compute_types(spec):
    """ALLOW ops (matmul, linear, conv, lstm, gru) compute f32 work in f32 under every fp math mode,
    which each mode allows: the dispatcher would round their f32 inputs to the mode's type and the
    kernels would compute in f32 all the same (only bf16 storage reaches ``vdpbf16ps``), so the
    rounding cost time and accuracy and bought nothing (the LSTM LM under the bf16 hint: 13-35%
    slower, 1.5e-3 off). Integer and bool work computes in its own type; other ops as the mode says."""
    if spec.category is not Category.ALLOW:
        return None
    return tuple(dt.SHORT_NAMES[t] for t in dt.SUPPORTED_DTYPES if dt.SHORT_NAMES[t] not in fpmath.DOWN_CONVERSIONS)


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability)
    register_kernels(registry, NAME, __name__, native_storage=True, before_load=_before_first_kernel,
                     compute_types=_compute_types)


def _before_first_kernel() -> None:
    """What the engine sets up before its first kernel module loads: the compile notice, and
    numba's pool under polyeng's thread policy (before any kernel could start numba's own)."""
    listen_for_compiles()
    from ._runtime import start_pool
    start_pool()


_announced: set = set()   # op families whose compile this process has announced
_listening = threading.Lock()
_listener = None
_nesting = threading.local()


def listen_for_compiles() -> None:
    """Announce the first real compile of each op family's kernels, once per process.

    numba signals ``numba:compile`` only when it compiles, not when it loads machine code
    from its on-disk cache, so a warm cache stays silent.
    """
    global _listener
    with _listening:
        if _listener is not None:
            return
        try:
            from numba.core import event
        except Exception:   # a numba without the event API: no notice, kernels still work
            _listener = False
            return

        class CompileNotice(event.Listener):
            # A kernel's compile compiles the helpers it calls (nested events): only the
            # outermost one, the kernel called from Python, names the family.
            def on_start(self, ev):
                depth = getattr(_nesting, "depth", 0)
                _nesting.depth = depth + 1
                if depth == 0:
                    _announce(ev.data.get("dispatcher") if isinstance(ev.data, dict) else None)

            def on_end(self, ev):
                _nesting.depth = max(getattr(_nesting, "depth", 1) - 1, 0)
        _listener = CompileNotice()
        event.register("numba:compile", _listener)


def _announce(dispatcher) -> None:
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    package, _, family = module.rpartition(".")
    if package != __name__:
        return
    family = family.lstrip("_")   # support modules are named for the family they serve (_cast)
    with _listening:
        if family in _announced:
            return
        _announced.add(family)
    from ...engine.plugins import registry
    ops = [spec.name for spec in registry().specs.values() if spec.family == family] or [family]
    cached = type(getattr(dispatcher, "_cache", None)).__name__ != "NullCache"
    notice_logger.info(f"compiling numba kernels for {', '.join(ops)}"
                       + (" (first use; cached on disk for later runs)" if cached else " (not cached on disk)"))
