"""What a kernel's arguments and results need around the call, for ``dispatch``'s bound plans:
floats converted to the compute type under fp math, device tensors of other engines brought to
the host, numpy's floating-point warnings off during the kernel, and the result checked and
returned in the caller's storage dtype."""
from __future__ import annotations

import contextvars

import numpy as np

from . import dtypes as dt
from . import fpmath
from .call import Call, map_arrays

try:   # numpy >= 2 keeps its error state in a context variable; setting it directly costs
    # 0.3 µs where ``np.errstate`` costs 1.2 µs, a quarter of the dispatch budget
    from numpy._core._ufunc_config import _extobj_contextvar as _error_state
    from numpy._core.umath import _make_extobj
    _IGNORE_ALL = _make_extobj(all="ignore")
except Exception:   # another numpy: the public context manager
    _error_state = None


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
    return isinstance(value, (np.ndarray, np.generic)) or (_is_device_tensor(value) and hasattr(value, "dtype"))


def _described(value) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return f"a {value.dtype.name} array"
    return f"a {type(value).__name__}" if value is not None else "None"


def needs_conversion(call: Call, compute: str, kernel) -> bool:
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


def needs_host(call: Call, engine: str, reg) -> bool:
    if not reg.native_types():
        return False
    return any(owner is not None and owner.name != engine
               for owner in map(reg.owner_of, call.tensors().values()))


def host_arguments(args: dict, engine: str, reg) -> tuple[dict, list]:
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


def compute_arguments(args: dict, compute: str, native_storage: bool) -> dict:
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
