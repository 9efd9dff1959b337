"""Finding built-in kernels: the kernel of op ``name`` on an engine is the function called
``name`` in ``polyeng/backends/<engine>/<family>.py``, where ``family`` is the name of the
op's module in ``polyeng/ops``. Adding a kernel is adding that function; nothing else lists it.

Built-in kernels are called as ``kernel(prepared, **args)``: ``prepared`` holds what the op's
module derived once for the call signature (output shape and dtype, windows, tables), the
keyword arguments are the validated ones. A kernel may carry ``kernel.accepts = rule``, a
``rule(call) -> None | reason`` for a limit of that kernel alone (see :func:`limit`).

Engines whose library is heavy (numba, pyopencl) register lazy kernels: whether a family file
defines an op is read from its source, and the module is imported when the kernel is first
needed, so registering an engine imports nothing of it.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import threading

from ..engine.call import OPS
from ..engine.registry import KernelRecord


def limit(rule):
    """Decorator: the kernel rejects a call for which ``rule(call)`` returns a reason (an
    engine limit the selector shows as a special-argument rejection, never a run-time error)."""
    def mark(kernel):
        kernel.accepts = rule
        return kernel
    return mark


@functools.lru_cache(maxsize=None)
def _top_level_names(module_name: str) -> frozenset:
    """Names a module defines at top level (``def name(`` or ``name =``), read from its source."""
    spec = importlib.util.find_spec(module_name)
    if spec is None:
        return frozenset()
    origin = spec.origin or ""
    if not origin.endswith(".py"):   # no source to read (compiled only): import it
        return frozenset(vars(importlib.import_module(module_name)))
    with open(origin, encoding="utf-8") as f:
        source = f.read()
    return frozenset(m.group(1) or m.group(2) for m in _DEFINITION.finditer(source))


_DEFINITION = re.compile(r"^(?:def\s+(\w+)\s*\(|(\w+)\s*(?::[^=\n]*)?=(?!=))", re.MULTILINE)


class LazyKernel:
    """A kernel whose module is imported on first use; afterwards it calls the function directly."""

    __slots__ = ("module", "op", "fn", "_lock")

    def __init__(self, module: str, op: str):
        self.module, self.op, self.fn, self._lock = module, op, None, threading.Lock()

    def __call__(self, prepared, **kwargs):
        fn = self.fn
        if fn is None:
            fn = self.load()
        return fn(prepared, **kwargs)

    def load(self):
        with self._lock:
            if self.fn is None:
                self.fn = getattr(importlib.import_module(self.module), self.op)
        return self.fn

    def rejection(self, call):
        rule = getattr(self.load(), "accepts", None)
        return rule(call) if rule is not None else None

    def __repr__(self) -> str:
        return f"<kernel {self.op} from {self.module}>"


def register_kernels(registry, engine: str, package: str, *, lazy: bool = True, native_storage: bool = False,
                     engine_rule=None, compute_types=None, wrap=None) -> None:
    """Register every kernel ``package`` defines for ``engine``.

    ``engine_rule(spec)``: a ``rule(call)`` every kernel of that op shares (or None);
    ``compute_types(spec)``: the compute types of that op's kernel (None: whatever the mode
    allows); ``wrap(kernel)``: what the engine puts around each kernel.
    """
    for spec in OPS.values():
        module = f"{package}.{spec.family}"
        if spec.name not in _top_level_names(module):
            continue
        if lazy:
            kernel = LazyKernel(module, spec.name)
            own_rule = kernel.rejection
        else:
            kernel = getattr(importlib.import_module(module), spec.name)
            own = getattr(kernel, "accepts", None)
            own_rule = own if own is not None else _accept
        shared = engine_rule(spec) if engine_rule is not None else None
        record = KernelRecord(spec.name, engine, wrap(kernel) if wrap is not None else kernel,
                              accepts=_both(shared, own_rule), prepared=True,
                              compute_types=compute_types(spec) if compute_types is not None else None,
                              native_storage=native_storage)
        registry.add_kernel_record(record)


def _accept(call):
    return None


def _both(first, second):
    if first is None:
        return None if second is _accept else second

    def rule(call):
        return first(call) or second(call)
    return rule
