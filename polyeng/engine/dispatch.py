"""The data path of every op call, top to bottom:

validate arguments -> decide (selector) -> convert under fp math -> run kernel
(falling back on run-time failure) -> record (verbose).
"""
from __future__ import annotations

import inspect
import threading
import time
import warnings

import numpy as np

from . import dtypes as dt
from . import fpmath, mixed_precision, verbose
from . import plan_cache
from .call import Call, OpSpec, map_arrays, op_spec, tensors_of
from .plan_cache import Plan
from .errors import EngineError, FallbackWarning
from .plugins import registry
from .selector import ACCEPTED, CHOSEN, NOT_PROBED, Decision, choose_engine, verdict
from .settings import current_scope

try:   # numpy >= 2 keeps its error state in a context variable; setting it directly costs
    # 0.3 µs where ``np.errstate`` costs 1.2 µs, a quarter of the dispatch budget
    from numpy._core._ufunc_config import _extobj_contextvar as _error_state
    from numpy._core.umath import _make_extobj
    _IGNORE_ALL = _make_extobj(all="ignore")
except Exception:   # another numpy: the public context manager
    _error_state = None

_warned: set = set()
_warned_lock = threading.Lock()


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


def decide(call: Call, reg=None, *, probe_all: bool = False) -> Decision:
    reg = reg or registry()
    decision = choose_engine(call, reg, current_scope(), probe_all=probe_all)
    decision.fp_math_mode = call.fp_math_mode.value
    decision.compute_dtype = reg.kernel(call.op, decision.engine).compute_for(call)
    return decision


def _step(call: Call, engine: str, reg) -> plan_cache.Step:
    kernel = reg.kernel(call.op, engine)
    compute = kernel.compute_for(call)
    return plan_cache.Step(engine, kernel, compute, _needs_conversion(call, compute, kernel),
                           _needs_host(call, engine, reg))


def plan_for(spec: OpSpec, args: dict, reg) -> Plan:
    """The plan for validated ``args``: from the decision cache, else made by the selector."""
    mode = fpmath.get_fp_math_mode()
    scope = current_scope()
    key = plan_cache.key_for(spec.name, args, mode, scope)
    plan = reg.plans.get(key) if key is not None else None
    if plan is None:
        call = make_call(spec, args)
        decision = decide(call, reg)
        plan = Plan(decision, call.prepared, mode.value, _step(call, decision.engine, reg))
        if key is not None:
            reg.plans.put(key, plan)
    return plan


def _fallback_step(spec: OpSpec, args: dict, plan: Plan, failed: str, reg):
    """The step of the first engine after ``failed`` in the plan that accepts the call (probed now:
    the selector stopped at the chosen engine), or None when none is left."""
    order = plan.decision.plan
    call = None
    for engine in order[order.index(failed) + 1:]:
        step = plan.fallbacks.get(engine, _UNPROBED)   # one look-up: another thread may fill it
        if step is _UNPROBED:
            call = call or make_call(spec, args)
            verdict_, reason = verdict(call, reg, engine)
            step = _step(call, engine, reg) if verdict_ == ACCEPTED else None
            if step is None and verbose.level() >= 2:
                verbose.dispatch_line(spec.name, engine, verdict_, reason)
            plan.fallbacks[engine] = step
        if step is not None:
            return step
    return None


_UNPROBED = object()


def run(spec: OpSpec, **kwargs):
    """Run one op call; what every public op function calls."""
    reg = registry()   # one snapshot per call, even if a plugin registers meanwhile
    args = spec.validate(**kwargs)
    plan = plan_for(spec, args, reg)
    decision = plan.decision
    level = verbose.level()
    if level >= 2:
        for c in decision.candidates:
            if c.verdict not in (CHOSEN, ACCEPTED, NOT_PROBED):
                verbose.dispatch_line(spec.name, c.engine, c.verdict, c.reason)
    step, last_failure = plan.first, None
    while step is not None:
        kernel_args, moved = args, []
        if step.to_host:
            kernel_args, moved = _to_host(kernel_args, step.engine, reg)
        if step.convert:
            kernel_args = _to_compute(kernel_args, step.compute, step.kernel.native_storage)
        start = time.perf_counter() if level else 0.0
        try:
            result = _call_quietly(step.kernel, plan.prepared, kernel_args)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            if not decision.fallback:
                raise EngineError(step.engine, spec.name, f"kernel failed: {reason}") from exc
            last_failure = (step.engine, reason, exc)
            step = _fallback_step(spec, args, plan, step.engine, reg)
            if step is not None:
                _warn_fallback(spec.name, last_failure[0], reason, step.engine)
            continue
        if type(result) is not np.ndarray or result.dtype != plan.prepared.dtype:
            result = _to_storage(result, plan.prepared.dtype)
        if level >= 1:
            ms = (time.perf_counter() - start) * 1e3
            label = decision.step if step.engine == decision.engine else "fallback"
            note = f"transferred {','.join(moved)} to host" if moved else ""
            verbose.exec_line(spec.name, step.engine, label, plan.mode, step.compute, tensors_of(args), ms, note)
        return result
    engine, reason, exc = last_failure
    raise EngineError(engine, spec.name, f"every candidate failed; last: {reason}") from exc


def _call_quietly(kernel, prepared, kwargs):
    """The kernel called with numpy's floating-point warnings off: IEEE results (inf, nan) are
    the defined outcome, not kernel failures, whatever the caller's numpy settings are.
    Built-in kernels take the prepared facts first; plugin kernels the keyword arguments only."""
    fn = kernel.fn
    if _error_state is None:
        with np.errstate(all="ignore"):
            return fn(prepared, **kwargs) if kernel.prepared else fn(**kwargs)
    token = _error_state.set(_IGNORE_ALL)
    try:
        return fn(prepared, **kwargs) if kernel.prepared else fn(**kwargs)
    finally:
        _error_state.reset(token)


def _needs_conversion(call: Call, compute: str, kernel) -> bool:
    """Whether some float argument is not already what the kernel computes on."""
    if call.spec.exact or compute is None:
        return False
    target = fpmath.arithmetic_dtype(compute)
    down = compute in fpmath.DOWN_CONVERSIONS
    found = []

    def check(a):
        if a.dtype in dt.FLOAT_DTYPES and not (kernel.native_storage and _stays_stored(a.dtype, compute)):
            if down or a.dtype != target:
                found.append(a)
        return a
    for value in call.args.values():
        map_arrays(value, check, _has_dtype)
    return bool(found)


def _needs_host(call: Call, engine: str, reg) -> bool:
    if not reg.native_types():
        return False
    return any(owner is not None and owner.name != engine
               for owner in map(reg.owner_of, call.tensors().values()))


def _to_host(args: dict, engine: str, reg) -> tuple[dict, list]:
    """Device tensors of other engines brought to the host (named in ``moved`` for verbose)."""
    moved = []

    def to_host(value, name):
        owner = reg.owner_of(value)
        if owner is None or owner.name == engine:
            return value
        moved.append(name)
        return owner.to_host(value) if owner.to_host else np.asarray(value)
    args = {name: map_arrays(value, lambda v, n=name: to_host(v, n), _is_device_tensor)
            for name, value in args.items()}
    return args, moved


def _to_compute(args: dict, compute: str, native_storage: bool) -> dict:
    """Float arrays converted to the compute type: widened to its arithmetic dtype and, for a
    down-conversion (bf16, f16, tf32), rounded to it. A kernel with ``native_storage`` reads
    16-bit arrays itself, so those are passed as stored."""
    target = fpmath.arithmetic_dtype(compute)

    def convert(a):
        if a.dtype not in dt.FLOAT_DTYPES or (native_storage and _stays_stored(a.dtype, compute)):
            return a
        return fpmath.down_convert(a.astype(target, copy=False), compute)
    return {name: map_arrays(value, convert) for name, value in args.items()}


def _stays_stored(dtype, compute: str) -> bool:
    """A native-storage kernel reads a 16-bit array as stored when it computes in f32 or in that
    very type; a down-conversion to another type (f16 storage under bf16) is done here."""
    return dtype in dt.SIXTEEN_BIT_FLOATS and (compute == "f32" or dt.short_name(dtype) == compute)


def _has_dtype(value) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "shape") or isinstance(value, np.generic)


def _is_device_tensor(value) -> bool:
    return hasattr(value, "shape") and not isinstance(value, (np.ndarray, np.generic))


def _to_storage(result, storage):
    """Results as numpy arrays (never numpy scalars) with float results in the caller's storage
    dtype: down-conversion stays hidden, and a kernel's f32 work comes back as f16/bf16."""
    def fix(a):
        if _is_device_tensor(a):
            return a   # stays on its device; its engine wrote it in the storage dtype
        a = np.asarray(a)
        if a.dtype != storage and a.dtype in dt.FLOAT_DTYPES and storage in dt.FLOAT_DTYPES:
            with np.errstate(over="ignore"):   # beyond the 16-bit range is inf, as in the kernel
                return a.astype(storage)
        return a
    return map_arrays(result, fix)


def _warn_fallback(op: str, engine: str, reason: str, next_engine: str) -> None:
    key = (op, engine, reason)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(FallbackWarning(f"{op}: engine {engine!r} failed at run time ({reason}); "
                                  f"running it on {next_engine!r}"), stacklevel=4)


def explain(op, *args, **kwargs) -> Decision:
    """The decision for ``op(*args, **kwargs)`` without running it. ``op`` is a name or the op
    function. Every engine is probed, so each candidate shows its verdict."""
    spec = op_spec(op)
    registry()   # built first: validation tells the engines' device tensors from array-likes by it
    try:
        bound = inspect.signature(spec.function).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"explain({spec.name}): {exc}") from None
    bound.apply_defaults()
    return decide(make_call(spec, spec.validate(**bound.arguments)), probe_all=True)
