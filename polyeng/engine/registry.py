"""The registry: which engines exist, whether they can run, and which kernels they provide.

Plugins fill it through the ``polyeng_register`` hook (see ``hookspecs``); the selector
only reads it. It is rebuilt whenever a backend is registered or unregistered.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from .errors import PluginWarning, warn_once
from .names import Engine, engine_name
from .plan_cache import PlanCache

RESERVED = {Engine.RECOMMEND.value}


class DuplicateEngineError(ValueError):
    """Two plugins add an engine of the same name."""


@dataclass
class EngineRecord:
    name: str
    available_spec: Any = True          # bool, or a callable returning (bool, reason)
    reason_spec: str = ""
    native_type: Optional[type] = None
    to_host: Optional[Callable] = None   # device tensor -> numpy array
    to_device: Optional[Callable] = None   # numpy array -> device tensor
    details: Optional[Callable] = None   # () -> lines for `polyeng info` (devices, versions)
    plugin: str = ""
    call_note: Optional[Callable] = None   # () -> what the call this thread just ran used (verbose level 2)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _resolved: Optional[tuple] = None

    def status(self) -> tuple[bool, str]:
        """(available, reason), evaluating a lazy availability check once."""
        if self._resolved is None:
            with self._lock:
                if self._resolved is None:
                    self._resolved = self._evaluate()
        return self._resolved

    def _evaluate(self) -> tuple[bool, str]:
        spec = self.available_spec
        if callable(spec):
            try:
                result = spec()
            except Exception as exc:  # an availability probe must never break polyeng
                return False, f"availability check raised {type(exc).__name__}: {exc}"
            if isinstance(result, tuple):
                ok, reason = bool(result[0]), str(result[1] or "")
            else:
                ok, reason = bool(result), ""
        else:
            ok, reason = bool(spec), self.reason_spec
        if not ok and not reason:
            reason = "reported unavailable by its plugin"
        return ok, ("" if ok else reason)

    def mark_failed(self, reason: str) -> None:
        self._resolved = (False, reason)


@dataclass(frozen=True)
class KernelRecord:
    op: str
    engine: str
    fn: Callable
    accepts: Optional[Callable] = None   # call -> None (accept) or a reason string
    compute_types: Optional[tuple] = None   # e.g. ("f32", "bf16"); None: every type the mode allows
    native_storage: bool = False   # takes f16/bf16 arrays as stored and returns them so
    prepared: bool = False   # a built-in kernel: called as fn(prepared, **args), see backends/_loader.py
    # rounds f32 inputs to a down-conversion compute type itself (oneDNN's fpmath attribute), so
    # the dispatcher passes them unrounded; the kernel reads the mode (backends/onednn/_fpmath.py)
    own_fp_math: bool = False

    def compute_for(self, call) -> Optional[str]:
        """The most preferred compute type the fp math mode allows and this kernel supports."""
        if self.compute_types is None:
            return call.allowed_compute[0]
        for compute in call.allowed_compute:
            if compute in self.compute_types:
                return compute
        return None

    def rejection(self, call) -> Optional[str]:
        if self.compute_for(call) is None:
            return (f"computes {call.op} in {', '.join(self.compute_types)} only; fp math mode "
                    f"{call.fp_math_mode.value} allows {', '.join(call.allowed_compute)} for this call")
        if self.accepts is None:
            return None
        try:
            reason = self.accepts(call)
        except Exception as exc:
            return f"accepts() raised {type(exc).__name__}: {exc}"
        if reason is None or isinstance(reason, str):
            return reason or None
        # A plugin bug: True would read as a rejection and False as an acceptance. The engine is
        # left out (the call still runs elsewhere) and the plugin's author hears of it once.
        reason = f"accepts returned {reason!r}; it must return None (accept) or a str (the reason to reject)"
        # per accepts function (by id: it need not be hashable): a later plugin's is warned about anew
        warn_once((self.engine, self.op, id(self.accepts)),
                  PluginWarning(f"engine {self.engine!r} left out of {self.op}: {reason}"), stacklevel=2,
                  keep=self.accepts)
        return reason


@dataclass(frozen=True)
class EngineInfo:
    """What ``polyeng.engines()`` reports for one engine."""
    name: str
    available: bool
    reason: str
    ops: tuple


class Registry:
    """Engines in registration order and their kernels, keyed by (op, engine)."""

    def __init__(self, specs=None):
        self.engines: dict[str, EngineRecord] = {}
        self.kernels: dict[tuple[str, str], KernelRecord] = {}
        self.specs: dict = dict(specs) if specs is not None else {}   # the op catalogue: name -> OpSpec
        self._known_ops = set(self.specs) if specs is not None else None
        self._plugin = ""
        self.plans = PlanCache()   # decisions made with this registry, by call signature

    # -- the API plugins call -------------------------------------------------
    def add_engine(self, name, available=True, reason="", native_type=None, to_host=None, to_device=None,
                   details=None, call_note=None):
        name = engine_name(name)
        if name in RESERVED:
            raise ValueError(f"engine name {name!r} is reserved")
        if name in self.engines:
            owner = self.engines[name].plugin
            raise DuplicateEngineError(f"engine {name!r} is already registered"
                                       f"{f' (by plugin {owner!r})' if owner else ''}")
        where = f"add_engine({name!r})"
        if not (isinstance(available, (bool, np.bool_)) or callable(available)):
            raise TypeError(f"{where}: available={available!r} must be a bool or a callable returning "
                            f"(bool, reason)")
        if not isinstance(reason, str):
            raise TypeError(f"{where}: reason={reason!r} must be a str")
        if native_type is not None and not isinstance(native_type, type):
            raise TypeError(f"{where}: native_type={native_type!r} must be a type (the engine's device "
                            f"tensor class) or None")
        for arg, value in (("to_host", to_host), ("to_device", to_device), ("details", details),
                           ("call_note", call_note)):
            if value is not None and not callable(value):
                raise TypeError(f"{where}: {arg}={value!r} must be callable or None")
        self.engines[name] = EngineRecord(name, available, reason, native_type, to_host, to_device, details,
                                          self._plugin, call_note)
        return self.engines[name]

    def add_kernel(self, op, engine, fn, accepts=None, compute_types=None, native_storage=False):
        engine = engine_name(engine)
        where = f"add_kernel({op!r}, {engine!r})"
        if engine not in self.engines:
            raise ValueError(f"{where}: engine {engine!r} is not registered; call add_engine first")
        if self._known_ops is not None and op not in self._known_ops:
            raise ValueError(f"{where}: unknown op {op!r}; expected one of {', '.join(sorted(self._known_ops))}")
        if not callable(fn):
            raise TypeError(f"{where}: fn must be callable, got {fn!r}")
        if accepts is not None and not callable(accepts):
            raise TypeError(f"{where}: accepts={accepts!r} must be a callable (call -> None or a reason "
                            f"string) or None")
        if compute_types is not None:
            if not isinstance(compute_types, (tuple, list)) or not all(isinstance(t, str) for t in compute_types):
                raise TypeError(f"{where}: compute_types={compute_types!r} must be a tuple of compute "
                                f"type names such as ('f32', 'bf16'), or None")
            compute_types = tuple(compute_types)
        self.kernels[(op, engine)] = KernelRecord(op, engine, fn, accepts, compute_types, bool(native_storage))

    def add_kernel_record(self, record: KernelRecord) -> None:
        """A built-in kernel found by ``backends/_loader.py`` (same checks as ``add_kernel``)."""
        self.add_kernel(record.op, record.engine, record.fn, record.accepts, record.compute_types)
        self.kernels[(record.op, record.engine)] = record

    # -- queries ----------------------------------------------------------------
    def kernel(self, op: str, engine: str) -> Optional[KernelRecord]:
        return self.kernels.get((op, engine))

    def ops_of(self, engine: str) -> tuple:
        return tuple(sorted(op for (op, eng) in self.kernels if eng == engine))

    def owner_of(self, value) -> Optional[EngineRecord]:
        """The engine whose native device tensor type ``value`` is, if any."""
        for record in self.engines.values():
            if record.native_type is not None and isinstance(value, record.native_type):
                return record
        return None

    def native_types(self) -> tuple:
        """The device tensor types engines own (what validation passes through unconverted)."""
        return tuple(r.native_type for r in self.engines.values() if r.native_type is not None)

    def info(self) -> list[EngineInfo]:
        out = []
        for record in self.engines.values():
            ok, reason = record.status()
            out.append(EngineInfo(record.name, ok, reason, self.ops_of(record.name)))
        return out
