"""The data path of every op call, top to bottom:

validate arguments -> decide (selector) -> convert under fp math -> run kernel and check
its result (falling back when either fails) -> record (verbose).

``run`` validates and takes the call signature's ``BoundPlan`` (``plan_for``); the bound plan's
``execute`` does the rest, for direct calls and graph nodes alike. What the arguments need
before the kernel (conversion, transfers) is ``kernel_args``'s.
"""
from __future__ import annotations

import contextvars
import inspect
import sys
import time

import numpy as np

from ..ops import catalogue
from ..ops.catalogue import OpSpec
from . import dtypes as dt
from .signal_safe import error_state, quietly
from . import array_handlers, fpmath, memory, mixed_precision, plan_cache, trace_hook, verbose
from .call import Call, is_device_tensor, map_arrays, tensors_of
from .kernel_args import compute_arguments, conversion_type, host_arguments, needs_conversion, needs_host
from .errors import EngineError, FallbackWarning, warn_once
from .plugins import registry
from .selector import ACCEPTED, CHOSEN, NOT_PROBED, Decision, choose_engine, verdict
from .settings import current_scope


# numpy >= 2 keeps its error state in a context variable (``signal_safe.error_state``); setting
# it directly costs 0.3 µs where ``np.errstate`` costs 1.2 µs, a quarter of the dispatch budget
_error_state = error_state
if _error_state is not None:
    from numpy._core.umath import _make_extobj
    _IGNORE_ALL = _make_extobj(all="ignore")


def ignore_fp_errors() -> None:
    """numpy's floating-point warnings off in the current context (a graph run sets it once in
    its own context copy for all its nodes; IEEE results are the defined outcome)."""
    if _error_state is not None:
        _error_state.set(_IGNORE_ALL)
    else:
        np.seterr(all="ignore")


def call_quietly(kernel, prepared, kwargs):
    """The kernel called with numpy's floating-point warnings off: IEEE results (inf, nan) are
    the defined outcome, not kernel failures, whatever the caller's numpy settings are.
    Built-in kernels take the prepared facts first; plugin kernels the keyword arguments only."""
    if _error_state is None:
        with np.errstate(all="ignore"):
            return kernel.fn(prepared, **kwargs) if kernel.prepared else kernel.fn(**kwargs)
    # run in a copy of the context: the caller's error state is never changed, so no signal can
    # land between a change and its undoing (and this costs no more than setting and resetting)
    return contextvars.copy_context().run(_ignoring_errors, kernel, prepared, kwargs)


def _ignoring_errors(kernel, prepared, kwargs):
    _error_state.set(_IGNORE_ALL)
    return kernel.fn(prepared, **kwargs) if kernel.prepared else kernel.fn(**kwargs)


def make_call(spec: OpSpec, args: dict) -> Call:
    """The Call of validated ``args``: the op's prepared facts, the storage dtype, and the compute
    types the fp math mode allows under the op's mixed precision rule."""
    call = Call(spec, args)
    mode = fpmath.get_fp_math_mode()
    call.prepared = spec.prepare(args)
    call.storage_dtype = call.prepared.dtype
    call.fp_math_mode = mode
    # a rule's output dtype is for graphs converted ahead of time; a call returns its storage dtype
    call.category, call.accumulation_dtype, _ = mixed_precision.conversion_for(call, fpmath.MIXED_DTYPE[mode])
    call.allowed_compute = fpmath.allowed_compute(call.category, call.storage_dtype, mode, spec.exact)
    return call


def decide(call: Call, reg=None, *, probe_all: bool = False, scope=None) -> Decision:
    reg = reg or registry()
    decision = choose_engine(call, reg, scope or current_scope(), probe_all=probe_all)
    decision.fp_math_mode = call.fp_math_mode.value
    decision.compute_type = reg.kernel(call.op, decision.engine).compute_for(call)
    decision.compute_dtype = fpmath.compute_dtype(decision.compute_type)
    return decision


def _step(call: Call, engine: str, reg) -> plan_cache.Step:
    kernel = reg.kernel(call.op, engine)
    compute = kernel.compute_for(call)
    return plan_cache.Step(engine, kernel, compute, needs_conversion(call, compute, kernel),
                           needs_host(call, engine, reg))


def plan_for(spec: OpSpec, args: dict, reg) -> "BoundPlan":
    """The bound plan for validated ``args``: from the decision cache, else made by the selector."""
    mode = fpmath.get_fp_math_mode()
    scope = current_scope()
    key = plan_cache.key_for(spec.name, args, mode, scope)
    plan = reg.plans.get(key) if key is not None else None
    if plan is None:
        call = make_call(spec, args)
        decision = decide(call, reg, scope=scope)
        plan = BoundPlan(spec, reg, decision, call.prepared, mode.value, _step(call, decision.engine, reg))
        if key is not None:
            plan.cached = True
            reg.plans.put(key, plan)
    return plan


_UNPROBED = object()


class BoundPlan:
    """What the selector decided for one call signature, bound to everything running it needs: the
    op's prepared facts, the chosen engine's step, and the steps of fallback engines (probed when a
    failure first reaches them). ``execute(args)`` is the bottom half of every op call, for direct
    calls and graph nodes alike: convert under fp math -> run the kernel -> check its result ->
    record (verbose) -> fall back when the kernel fails."""

    __slots__ = ("spec", "registry", "decision", "prepared", "mode", "first", "fallbacks", "direct", "cached",
                 "kernel_fn", "takes_prepared")

    def __init__(self, spec: OpSpec, reg, decision: Decision, prepared, mode: str, first: plan_cache.Step):
        self.spec, self.registry = spec, reg
        self.decision = decision      # selector.Decision
        self.prepared = prepared      # call.Prepared
        self.mode = mode
        self.first = first
        self.fallbacks: dict = {}     # engine -> Step, or None when it does not accept the call
        # the chosen kernel takes the validated arguments as they are: no conversion, no transfer
        self.direct = not (first.to_host or first.convert)
        self.cached = False           # kept in the registry's decision cache for its call signature
        self.kernel_fn, self.takes_prepared = first.kernel.fn, first.kernel.prepared

    def execute(self, args: dict, quiet: bool = False, level=None):
        """Run the validated ``args``. ``quiet``: numpy's floating-point warnings are already off in
        this context; ``level``: the verbose level, when the caller read it already (a graph run
        does both once for all its nodes)."""
        if level is None:
            level = verbose.level()
        # The common case, with nothing to convert, move or record: the kernel call of ``_run_steps``
        # written out here, since a call more would cost a graph node a tenth of its overhead.
        if self.direct and not level:
            prepared = self.prepared
            try:
                if not quiet:
                    result = call_quietly(self.first.kernel, prepared, args)
                elif self.takes_prepared:
                    result = self.kernel_fn(prepared, **args)
                else:
                    result = self.kernel_fn(**args)
                if type(result) is not np.ndarray or result.dtype != prepared.dtype or result.shape != prepared.shape:
                    result = checked_result(result, prepared)
                return result
            except MemoryError:   # out of host memory is no engine's fault: the caller sees it as it is
                raise
            except Exception as exc:
                return self._run_steps(args, quiet, level, self._failed(args, self.first, exc, 6))
        return self._run_steps(args, quiet, level, self.first)

    def _run_steps(self, args: dict, quiet: bool, level: int, step):
        """The kernel of ``step`` and, when it fails, of each fallback step in turn, with conversion,
        transfers and verbose records; EngineError when none is left."""
        spec, decision, prepared = self.spec, self.decision, self.prepared
        if level >= 2 and step is self.first:
            for c in decision.candidates:
                if c.verdict not in (CHOSEN, ACCEPTED, NOT_PROBED):
                    verbose.dispatch_line(spec.name, c.engine, c.verdict, c.reason)
        while step is not None:
            kernel_args, moved = args, []
            if step.to_host:
                kernel_args, moved = host_arguments(kernel_args, step.engine, self.registry)
            if step.convert:
                kernel_args = compute_arguments(kernel_args, conversion_type(step.compute, step.kernel),
                                                step.kernel.native_storage)
            start = time.perf_counter() if level else 0.0
            try:
                kernel = step.kernel
                if not quiet:
                    result = call_quietly(kernel, prepared, kernel_args)
                elif kernel.prepared:
                    result = kernel.fn(prepared, **kernel_args)
                else:
                    result = kernel.fn(**kernel_args)
                if type(result) is not np.ndarray or result.dtype != prepared.dtype or result.shape != prepared.shape:
                    result = checked_result(result, prepared)
            except MemoryError:
                raise
            except Exception as exc:
                step = self._failed(args, step, exc, 7)
                continue
            if level >= 1:
                ms = (time.perf_counter() - start) * 1e3
                label = decision.step if step.engine == decision.engine else "fallback"
                note = f"transferred {','.join(moved)} to host" if moved else ""
                if level >= 2:
                    note = ";".join(filter(None, (note, _call_note(self.registry, step.engine))))
                verbose.exec_line(spec.name, step.engine, label, self.mode, step.compute, tensors_of(args), ms, note)
            return result
        raise AssertionError("unreachable: _failed raises when no step is left")

    def _failed(self, args: dict, step, exc, stacklevel: int):
        """The step to try after ``step``'s kernel raised ``exc`` (with one FallbackWarning pointing
        ``stacklevel`` frames up: at the op's caller for a direct call), or EngineError when the
        engine is pinned or no engine is left."""
        reason = str(exc) if type(exc) is WrongResult else f"{type(exc).__name__}: {exc}"
        if not self.decision.fallback:
            raise EngineError(step.engine, self.spec.name, f"kernel failed: {reason}") from exc
        following = self._fallback_step(args, step.engine)
        if following is None:
            raise EngineError(step.engine, self.spec.name, f"every candidate failed; last: {reason}") from exc
        _warn_fallback(self.spec.name, step.engine, reason, following.engine, stacklevel)
        return following

    def _fallback_step(self, args: dict, failed: str):
        """The step of the first engine after ``failed`` in the plan that accepts the call (probed now:
        the selector stopped at the chosen engine), or None when none is left."""
        order, reg, call = self.decision.plan, self.registry, None
        for engine in order[order.index(failed) + 1:]:
            step = self.fallbacks.get(engine, _UNPROBED)   # one look-up: another thread may fill it
            if step is _UNPROBED:
                call = call or make_call(self.spec, args)
                verdict_, reason = verdict(call, reg, engine)
                step = _step(call, engine, reg) if verdict_ == ACCEPTED else None
                if step is None and verbose.level() >= 2:
                    verbose.dispatch_line(self.spec.name, engine, verdict_, reason)
                self.fallbacks[engine] = step
            if step is not None:
                return step
        return None


def _call_note(reg, engine: str) -> str:
    """What the engine says of the call it just ran on this thread (oneDNN's implementation name)."""
    record = reg.engines.get(engine)
    if record is None or record.call_note is None:
        return ""
    try:
        return str(record.call_note() or "").replace(",", ";")
    except Exception as exc:   # a plugin's bug must not break the call it describes
        return f"call_note raised {type(exc).__name__}"


def run(spec: OpSpec, **kwargs):
    """Run one op call; what every public op function calls: validate -> plan (decide) -> execute."""
    if trace_hook.active:
        tracer = trace_hook.current.get()
        if tracer is not None:
            return tracer.record(spec, kwargs)
    for library in array_handlers.LIBRARIES:   # one dict look-up unless such a library is imported
        if library in sys.modules:
            handler = array_handlers.handler_for(kwargs)
            if handler is not None:
                return handler.run_op(spec, kwargs)
            break
    if not memory.applied:   # once per process: later calls reuse the pages earlier ones freed
        memory.keep_freed_memory()
    reg = registry()   # one snapshot per call, even if a plugin registers meanwhile
    args = spec.validate(**kwargs)
    return plan_for(spec, args, reg).execute(args)


class WrongResult(Exception):
    """A kernel returned something other than the op's result: a kernel failure like any other."""


def checked_result(result, prepared):
    """``result`` as the caller gets it (see ``_to_storage``), or WrongResult when it is not what
    the op returns: the first result (the only one, or the first of a tuple) must be an array of
    the prepared shape in the storage dtype (any float dtype for float storage: it is converted),
    and any further results arrays."""
    first = result
    while type(first) is tuple and first:
        first = first[0]
    if not _is_array(first):
        raise WrongResult(f"returned {_described(result)}; expected an array of shape {prepared.shape}")
    if tuple(first.shape) != prepared.shape:
        raise WrongResult(f"returned a result of shape {tuple(first.shape)}; expected {prepared.shape}")
    got, want = np.dtype(first.dtype), prepared.dtype
    if got != want and not (got in dt.FLOAT_DTYPES and want in dt.FLOAT_DTYPES):
        raise WrongResult(f"returned a result of dtype {got.name}; expected {want.name}")
    if first is not result:
        others = []
        map_arrays(result, others.append, lambda v: type(v) is not tuple)
        for other in others:
            if not _is_array(other):
                raise WrongResult(f"returned {_described(other)} among its results; expected arrays")
    return _to_storage(result, want)


def _is_array(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) or (is_device_tensor(value) and hasattr(value, "dtype"))


def _described(value) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return f"a {value.dtype.name} array"
    return f"a {type(value).__name__}" if value is not None else "None"


def _to_storage(result, storage):
    """Results as numpy arrays (never numpy scalars) with float results in the caller's storage
    dtype: down-conversion stays hidden, and a kernel's f32 work comes back as f16/bf16."""
    def fix(a):
        if is_device_tensor(a):
            return a   # stays on its device; its engine wrote it in the storage dtype
        a = np.asarray(a)
        if a.dtype != storage and a.dtype in dt.FLOAT_DTYPES and storage in dt.FLOAT_DTYPES:
            return quietly(a.astype, storage, over="ignore")   # beyond the 16-bit range is inf, as in the kernel
        return a
    return map_arrays(result, fix)


def _warn_fallback(op: str, engine: str, reason: str, next_engine: str, stacklevel: int) -> None:
    warn_once((op, engine, reason), FallbackWarning(f"{op}: engine {engine!r} failed at run time ({reason}); "
                                                    f"running it on {next_engine!r}"), stacklevel=stacklevel)


def explain(op, *args, **kwargs) -> Decision:
    """The decision for ``op(*args, **kwargs)`` without running it. ``op`` is a name or the op
    function. Every engine is probed, so each candidate shows its verdict."""
    spec = catalogue.lookup(op)
    registry()   # built first: validation tells the engines' device tensors from array-likes by it
    try:
        bound = inspect.signature(spec.function).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"explain({spec.name}): {exc}") from None
    bound.apply_defaults()
    arguments = bound.arguments
    handler = array_handlers.handler_for(arguments)
    if handler is not None:   # shapes and dtypes only: nothing computed
        arguments = handler.placeholders(arguments)
    return decide(make_call(spec, spec.validate(**arguments)), probe_all=True)
