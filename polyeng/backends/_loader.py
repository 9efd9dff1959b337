"""Finding built-in kernels: the kernel of op ``name`` on an engine is the function called
``name`` in ``polyeng/backends/<engine>/<family>.py``, where ``family`` is the name of the
op's module in ``polyeng/ops``. Adding a kernel is adding that function; nothing else lists it.

Built-in kernels are called as ``kernel(prepared, **args)``: ``prepared`` holds what the op's
module derived once for the call signature (output shape and dtype, windows, tables), the
keyword arguments are the validated ones. A kernel may carry ``kernel.accepts = rule``, a
``rule(call) -> None | reason`` for a limit of that kernel alone (see :func:`limit`).

Engines whose library is heavy (numba, pyopencl) register lazy kernels: whether a family file
defines an op is read from its code (compiled, never run), and the module is imported when the kernel is
first needed, so registering an engine imports nothing of it.
"""
from __future__ import annotations

import dis
import functools
import importlib
import importlib.util
import threading

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
    """Names a module binds at top level (functions, classes, assignments, imports, also inside
    top-level ``if``/``try``/``for``/``with`` blocks), read from its code without running it: the
    names its module-level code stores (``STORE_NAME``). The code comes from the import system's
    bytecode cache where it is current (the ``.pyc`` next to the source, as an installed wheel
    has), else from compiling the source, which writes that cache as an import would; parsing the
    ~80 family files on every start had taken 0.1 s of a process's first call."""
    spec = importlib.util.find_spec(module_name)
    if spec is None:
        return frozenset()
    get_code = getattr(spec.loader, "get_code", None)
    try:
        code = get_code(module_name) if get_code is not None else None
    except Exception:
        code = None
    if code is None:   # a loader that gives no code object: import it
        return frozenset(vars(importlib.import_module(module_name)))
    return frozenset(_stored_names(code))


_STORES = frozenset(dis.opmap[name] for name in ("STORE_NAME", "STORE_GLOBAL"))
_EXTENDED_ARG = dis.EXTENDED_ARG


def _stored_names(code) -> set:
    """The names ``code`` (a module's code object) stores, from its instructions (nested function
    and class bodies are separate code objects, not read)."""
    names, raw, arg = set(), code.co_code, 0
    for i in range(0, len(raw), 2):
        op = raw[i]
        arg = (arg << 8) | raw[i + 1]
        if op == _EXTENDED_ARG:
            continue
        if op in _STORES:
            names.add(code.co_names[arg])
        arg = 0
    return names


class LazyKernel:
    """A kernel whose module is imported on first use; afterwards it calls the function directly."""

    __slots__ = ("module", "op", "fn", "_lock", "before_load")

    def __init__(self, module: str, op: str, before_load=None):
        self.module, self.op, self.fn, self._lock = module, op, None, threading.Lock()
        self.before_load = before_load   # called once before the module is imported (engine setup)

    def __call__(self, prepared, **kwargs):
        fn = self.fn
        if fn is None:
            fn = self.load()
        return fn(prepared, **kwargs)

    def load(self):
        with self._lock:
            if self.fn is None:
                if self.before_load is not None:
                    self.before_load()
                self.fn = getattr(importlib.import_module(self.module), self.op)
        return self.fn

    def rejection(self, call):
        try:
            fn = self.load()
        except Exception:
            # a module that fails to import is a run-time failure of the kernel, not a limit:
            # accepted here, the call fails when run and falls back with a FallbackWarning
            return None
        rule = getattr(fn, "accepts", None)
        return rule(call) if rule is not None else None

    def __repr__(self) -> str:
        return f"<kernel {self.op} from {self.module}>"


def register_kernels(registry, engine: str, package: str, *, lazy: bool = True, native_storage: bool = False,
                     engine_rule=None, compute_types=None, wrap=None, before_load=None,
                     own_fp_math: bool = False) -> None:
    """Register every kernel ``package`` defines for ``engine``.

    ``engine_rule(spec)``: a ``rule(call)`` every kernel of that op shares (or None);
    ``compute_types(spec)``: the compute types of that op's kernel (None: whatever the mode
    allows); ``wrap(kernel)``: what the engine puts around each kernel; ``before_load()``: what
    the engine sets up before a lazy kernel's module is first imported (no cost per call);
    ``own_fp_math``: the kernels round f32 inputs to a down-conversion type themselves.
    """
    for spec in registry.specs.values():
        module = f"{package}.{spec.family}"
        if lazy:
            if spec.name not in _top_level_names(module):
                continue
            kernel = LazyKernel(module, spec.name, before_load)
            own_rule = kernel.rejection
        else:   # imported now: the module itself says what it binds
            kernel = getattr(_imported(module), spec.name, None)
            if kernel is None:
                continue
            own = getattr(kernel, "accepts", None)
            own_rule = own if own is not None else _accept
        shared = engine_rule(spec) if engine_rule is not None else None
        record = KernelRecord(spec.name, engine, wrap(kernel) if wrap is not None else kernel,
                              accepts=_both(shared, own_rule), prepared=True,
                              compute_types=compute_types(spec) if compute_types is not None else None,
                              native_storage=native_storage, own_fp_math=own_fp_math)
        registry.add_kernel_record(record)


def _imported(module_name: str):
    """The module, or None when the package has no such family file."""
    return importlib.import_module(module_name) if importlib.util.find_spec(module_name) is not None else None


def _accept(call):
    return None


def _both(first, second):
    if first is None:
        return None if second is _accept else second

    def rule(call):
        return first(call) or second(call)
    return rule
