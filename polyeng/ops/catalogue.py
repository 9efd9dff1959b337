"""The op catalogue: every op's ``OpSpec``, found in the family modules of ``polyeng/ops``.

A family module (``polyeng/ops/<family>.py``, no leading underscore) declares ``SPECS``, a list
of ``OpSpec``; the catalogue imports every such module the first time anything asks for it, so
adding an op is adding its family file (or a spec to one): nothing else lists the ops. Everything
a consumer needs about an op is on its spec: the engine reads validation, preparation, AMP
category and recommendation; ``polyeng`` exports ``function``; dask reads ``chunking``; the
examples and the engine test suite read ``example``, ``zero_size`` and ``tolerance``.

This module imports nothing of polyeng, so the engine, the backends' loader, graphs and dask can
all read the catalogue without an import circle; the family modules (which call the engine) are
imported only when the catalogue is first read.
"""
from __future__ import annotations

import importlib
import pkgutil
import threading
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class OpSpec:
    """Everything polyeng knows about one op.

    - ``validate(**kwargs)`` returns the validated keyword arguments (same names as the public
      function) or raises ValueError/TypeError naming the argument; ``prepare(args)`` returns the
      ``Prepared`` facts of validated ``args`` (``polyeng.engine.call``).
    - ``category``: the op's AMP category (``polyeng.amp.Category``). ``exact`` ops only move or
      compare data, so they run in their storage dtype, are never converted, and must match the
      reference bit for bit.
    - ``recommend(call)`` names the engine to prefer for these arguments; ``preference`` is the
      documented order tried after it.
    - ``chunking``: the name of the dask rule that splits a call into blocks (``polyeng.dask``).
    - ``example(t, rng)`` -> ``(args, kwargs)``: a small typical call, ``t(*shape)`` making a float
      array of the dtype under test; ``zero_size(z)`` -> ``(args, kwargs, result shape)``: a call
      on zero-size arrays, ``z(*shape)`` making float32 zeros; ``tolerance``: the error the engine
      test suite allows, in units of the storage dtype's epsilon relative to max(1, |reference|).
    - ``host``: the op is plumbing that runs on the host with numpy (a graph's ``np.*`` and
      ``onnx.*`` nodes): no engine, no selector, no fp math; ``function`` is called as it is.
      ``result_type(args, dtype)`` gives its result's dtype when its first input has ``dtype``;
      a host op with a ``category`` (FOLLOW: it only moves data) needs no mixed precision rule.
    - ``ufuncs``: the numpy ufuncs the op is (same arguments, same result), which a graph trace
      records as this op when they are applied to traced values.
    - ``warmup(t, rng)`` -> ``[(args, kwargs)]``: calls beyond ``example`` whose compiled kernels
      differ from its (other axes, options or targets), which ``polyeng warmup`` also makes.
    """
    name: str
    function: Callable
    validate: Optional[Callable[..., dict]] = None
    prepare: Optional[Callable] = None
    category: object = None
    exact: bool = False
    preference: tuple = ("basic",)
    recommend: Optional[Callable] = None
    chunking: str = ""
    example: Optional[Callable] = None
    zero_size: Optional[Callable] = None
    tolerance: int = 4
    host: bool = False
    result_type: Optional[Callable] = None
    ufuncs: tuple = ()
    warmup: Optional[Callable] = None

    @property
    def family(self) -> str:
        """The name of the file holding each engine's kernels: the op's module in ``polyeng/ops``."""
        return self.function.__module__.rsplit(".", 1)[-1]


_lock = threading.RLock()
_specs: dict[str, OpSpec] = {}
_host: dict[str, OpSpec] = {}
_state = {"loaded": False, "loading": None}   # loading: the id of the thread importing the families
# Host ops of other packages, by name prefix: their module is imported when one is first asked for
# (a saved graph of an imported model names ``onnx.*`` nodes before anything imported polyeng.onnx).
HOST_PROVIDERS = {"np.": "polyeng.graph.numpy_nodes", "onnx.": "polyeng.onnx.host_ops"}


def _discover() -> None:
    with _lock:
        if _state["loaded"]:
            return
        if _state["loading"] == threading.get_ident():
            raise RuntimeError("the op catalogue was read while its family modules were being imported; "
                               "a family module must not read the catalogue at import time")
        _state["loading"] = threading.get_ident()
        try:
            package = importlib.import_module(__package__)
            found = {}
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                if info.name.startswith("_") or info.name == "catalogue":
                    continue
                module = importlib.import_module(f"{__package__}.{info.name}")
                for spec in getattr(module, "SPECS", ()):
                    if spec.name in found:
                        raise RuntimeError(f"op {spec.name!r} is declared by two family modules")
                    found[spec.name] = spec
            _specs.update(found)   # family modules by name, each op in the order its module declares
            # polyeng.ops.<op> is the op's function, also where a family module has the op's name
            for name, spec in _specs.items():
                setattr(package, name, spec.function)
            _state["loaded"] = True
        finally:
            _state["loading"] = None


def loading() -> bool:
    """Whether this thread is importing the family modules right now (another thread reading the
    catalogue meanwhile waits for it)."""
    return _state["loading"] == threading.get_ident()


def specs() -> dict[str, OpSpec]:
    """op name -> OpSpec for every engine op (host ops are not listed; see ``host_spec``)."""
    if not _state["loaded"]:
        _discover()
    return _specs


def register_host(spec: OpSpec) -> OpSpec:
    """Add a host op (``host=True``) under its prefixed name (``np.getitem``, ``onnx.shape``)."""
    if not spec.host or "." not in spec.name:
        raise ValueError(f"{spec.name!r}: host ops are registered with host=True under a prefixed name")
    _host[spec.name] = spec
    return spec


def host_spec(name: str) -> Optional[OpSpec]:
    """The host op called ``name``, importing the package that provides it if need be; None if none."""
    spec = _host.get(name)
    if spec is None:
        module = next((m for prefix, m in HOST_PROVIDERS.items() if name.startswith(prefix)), None)
        if module is not None:
            importlib.import_module(module)
            spec = _host.get(name)
    return spec


def lookup(op, where: str = "op") -> OpSpec:
    """The OpSpec of an op given by name (host ops included) or as the op function; ValueError
    listing the ops otherwise."""
    name = op if isinstance(op, str) else getattr(op, "__name__", op)
    spec = specs().get(name) if isinstance(name, str) else None
    if spec is None and isinstance(name, str) and "." in name:
        spec = host_spec(name)
    if spec is None:
        raise ValueError(f"{where}={op!r} is not a polyeng op; expected one of {', '.join(sorted(specs()))}")
    return spec
