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
from . import amp, fpmath, verbose
from .call import Call, OpSpec, map_arrays
from .errors import EngineError, FallbackWarning
from .plugins import registry
from .selector import ACCEPTED, Decision, choose_engine
from .settings import current_scope

_warned: set = set()
_warned_lock = threading.Lock()


def prepare(spec: OpSpec, kwargs: dict) -> Call:
    """Validate the arguments, then settle the storage dtype and the compute types the fp math
    mode allows under the op's mixed precision rule."""
    call = Call(spec, spec.validate(**kwargs))
    mode = fpmath.get_fp_math_mode()
    call.storage_dtype = np.dtype(spec.output_dtype(call.args))
    call.fp_math_mode = mode
    call.category, call.accumulation_dtype, _ = amp.conversion_for(call, fpmath.MIXED_DTYPE[mode])
    call.allowed_compute = fpmath.allowed_compute(call.category, call.storage_dtype, mode, spec.exact)
    return call


def decide(call: Call, reg=None) -> Decision:
    reg = reg or registry()
    decision = choose_engine(call, reg, current_scope())
    decision.fp_math_mode = call.fp_math_mode.value
    decision.compute_dtype = reg.kernel(call.op, decision.engine).compute_for(call)
    return decision


def run(spec: OpSpec, **kwargs):
    """Run one op call; what every public op function calls."""
    reg = registry()   # one snapshot per call, even if a plugin registers meanwhile
    call = prepare(spec, kwargs)
    decision = decide(call, reg)
    level = verbose.level()
    if level >= 2:
        for c in decision.candidates:
            if c.verdict not in ("chosen", ACCEPTED):
                verbose.dispatch_line(call.op, c.engine, c.verdict, c.reason)
    failures = []
    for position, engine in enumerate(decision.plan):
        kernel = reg.kernel(call.op, engine)
        compute = kernel.compute_for(call)
        args, moved = _to_engine(call, engine, reg, compute, kernel.native_storage)
        start = time.perf_counter()
        try:
            # IEEE results (inf, nan) are the defined outcome, not kernel failures, whatever
            # the caller's numpy error settings are.
            with np.errstate(all="ignore"):
                result = kernel.fn(**args)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            if not decision.fallback:
                raise EngineError(engine, call.op, f"kernel failed: {reason}") from exc
            failures.append((engine, reason, exc))
            if position + 1 < len(decision.plan):
                _warn_fallback(call.op, engine, reason, decision.plan[position + 1])
            continue
        result = _to_storage(result, call)
        if level >= 1:
            ms = (time.perf_counter() - start) * 1e3
            step = decision.step if engine == decision.engine else "fallback"
            note = f"transferred {','.join(moved)} to host" if moved else ""
            verbose.exec_line(call.op, engine, step, call.fp_math_mode.value, compute, call.tensors(), ms, note)
        return result
    engine, reason, exc = failures[-1]
    raise EngineError(engine, call.op, f"every candidate failed; last: {reason}") from exc


def _to_engine(call: Call, engine: str, reg, compute: str, native_storage: bool = False) -> tuple[dict, list]:
    """The kernel's arguments: device tensors of other engines brought to the host, then
    float arrays converted to the compute type (unless the op is exact): widened to its
    arithmetic dtype and, for a down-conversion (bf16, f16, tf32), rounded to it. A kernel
    with ``native_storage`` reads 16-bit arrays itself, so those are passed as stored."""
    moved = []

    def to_host(value, name):
        owner = reg.owner_of(value)
        if owner is None or owner.name == engine:
            return value
        moved.append(name)
        return owner.to_host(value) if owner.to_host else np.asarray(value)

    args = call.args
    if reg.native_types():   # only when some engine owns device tensors
        args = {name: map_arrays(value, lambda v, n=name: to_host(v, n), _is_device_tensor)
                for name, value in args.items()}
    if not call.spec.exact:
        target = fpmath.arithmetic_dtype(compute)

        def convert(a):
            if a.dtype not in dt.FLOAT_DTYPES or (native_storage and a.dtype in dt.SIXTEEN_BIT_FLOATS):
                return a
            return fpmath.down_convert(a.astype(target, copy=False), compute)
        args = {name: map_arrays(value, convert) for name, value in args.items()}
    return args, moved


def _is_device_tensor(value) -> bool:
    return hasattr(value, "shape") and not isinstance(value, (np.ndarray, np.generic))


def _to_storage(result, call: Call):
    """Results as numpy arrays (never numpy scalars) with float results in the caller's storage
    dtype: down-conversion stays hidden, and a kernel's f32 work comes back as f16/bf16."""
    storage = call.storage_dtype

    def fix(a):
        a = np.asarray(a)
        if a.dtype != storage and a.dtype in dt.FLOAT_DTYPES and storage in dt.FLOAT_DTYPES:
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
    """The decision for ``op(*args, **kwargs)`` without running it. ``op`` is a name or the op function."""
    from ..ops import OPS
    name = op if isinstance(op, str) else getattr(op, "__name__", op)
    spec = OPS.get(name)
    if spec is None:
        raise ValueError(f"op={op!r} is not a polyeng op; expected one of {', '.join(sorted(OPS))}")
    try:
        bound = inspect.signature(spec.function).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"explain({name}): {exc}") from None
    bound.apply_defaults()
    return decide(prepare(spec, dict(bound.arguments)))
