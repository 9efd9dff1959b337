"""Engine-level public functions that are not ops: the engine list and device tensors."""
from __future__ import annotations

import reprlib

import numpy as np

from .dtypes import SUPPORTED_DTYPES
from .errors import EngineError
from .plugins import registry
from .registry import EngineInfo


def engines() -> list[EngineInfo]:
    """One record per registered engine: ``.name``, ``.available``, ``.reason``, ``.ops``."""
    return registry().info()


def to_device(x, engine="opencl"):
    """``x`` copied to a device tensor native to ``engine``. Ops on device tensors
    run on their engine through the layout step of the selection."""
    from ..ops import _checks as check
    from .settings import check_engine
    name = check_engine(engine, "engine")
    record = registry().engines.get(name)
    if record is None or record.to_device is None:
        owners = [r.name for r in registry().engines.values() if r.to_device is not None]
        raise ValueError(f"engine={engine!r} has no device tensors; engines with device tensors: "
                         f"{', '.join(owners) or 'none'}")
    ok, reason = record.status()
    if not ok:
        raise EngineError(name, "to_device", f"unavailable: {reason}")
    owner = registry().owner_of(x)
    if owner is not None:
        if owner.name == name:
            return x
        x = to_numpy(x)
    return record.to_device(check.tensor(x, "x"))


def to_numpy(t) -> np.ndarray:
    """A device tensor's contents as a numpy array (numpy arrays and numeric array-likes pass
    through; anything else, such as a string or an arbitrary object, is a TypeError)."""
    owner = registry().owner_of(t)
    if owner is not None:
        return owner.to_host(t) if owner.to_host else np.asarray(t)
    array = np.asarray(t)
    if isinstance(t, np.ndarray):
        return array
    if array.dtype.kind not in "biufc" and array.dtype not in SUPPORTED_DTYPES:   # bfloat16 is kind "V"
        raise TypeError(f"t={reprlib.repr(t)} ({type(t).__name__}) is not a tensor; expected a device tensor, "
                        f"a numpy array or a numeric array-like")
    return array


def call_op(name: str, *args, **kwargs):
    """The op called ``name`` (from the op catalogue) called with these arguments: how engine code
    that is not an op (a device tensor's methods) runs an op without importing the ops."""
    from ..ops.catalogue import lookup
    return lookup(name).function(*args, **kwargs)


def host_array(x) -> np.ndarray:
    """``x`` as a numpy array on the host: numpy arrays as they are (numpy scalars as 0-d arrays),
    device tensors brought back by their engine."""
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    return to_numpy(x)
