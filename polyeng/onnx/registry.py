"""The ONNX converter registry: which function converts each (domain, op type) at which opsets,
and which fusion patterns are tried on a node before its converter.

A converter module registers on import::

    @converter("Softmax", opsets=(13, None))      # None: up to the newest opset onnx knows
    def softmax(n: OnnxNode) -> None: ...

    @pattern("MatMul", name="matmul_add_to_linear")
    def matmul_add_to_linear(plan, i, n) -> bool: ...   # True when it took the node

``polyeng.onnx.loader`` imports the converter modules (the one place that lists them) and then
asks ``find`` for each node's converter and ``patterns`` for the fusions to try first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .builder import Unsupported
from .model import FIRST_OPSET, newest_opset

DEFAULT_DOMAIN = ""     # "ai.onnx" is the same domain; lookups take either name


@dataclass(frozen=True)
class Registration:
    """One converter: ``function`` converts ``op_type`` of ``domain`` at opsets ``first`` to ``last``."""
    domain: str
    op_type: str
    first: int
    last: int | None            # None: the newest opset onnx knows, whichever that is
    function: Callable

    @property
    def last_opset(self) -> int:
        return newest_opset() if self.last is None else self.last

    def covers(self, opset: int) -> bool:
        return self.first <= opset <= self.last_opset


@dataclass(frozen=True)
class Pattern:
    """A fusion: ``function(plan, i, node)`` tried on every node of ``op_type`` before its converter."""
    name: str
    domain: str
    op_type: str
    function: Callable


_converters: dict = {}          # (domain, op_type) -> [Registration], in registration order
_patterns: dict = {}            # (domain, op_type) -> [Pattern], tried in registration order


def _domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain == "ai.onnx" else domain


def converter(op_type: str, opsets: tuple = (FIRST_OPSET, None), domain: str = DEFAULT_DOMAIN):
    """Register the decorated function as ``op_type``'s converter at ``opsets`` (first, last or None)."""
    first, last = opsets
    if last is not None and last < first:
        raise ValueError(f"opsets={opsets}: the last opset is before the first")

    def register(function):
        new = Registration(_domain(domain), op_type, int(first), None if last is None else int(last), function)
        taken = _converters.setdefault((new.domain, op_type), [])
        for old in taken:   # two converters for one opset would make the choice depend on import order
            if old.first <= (new.last if new.last is not None else float("inf")) and \
                    new.first <= (old.last if old.last is not None else float("inf")):
                raise ValueError(f"{op_type}: opsets {_span(new)} overlap {old.function.__qualname__}'s "
                                 f"{_span(old)}")
        taken.append(new)
        return function
    return register


def pattern(op_type: str, name: str, domain: str = DEFAULT_DOMAIN):
    """Register the decorated function as fusion ``name``, tried on nodes of ``op_type``."""
    def register(function):
        if any(p.name == name for ps in _patterns.values() for p in ps):
            raise ValueError(f"a fusion named {name!r} is registered already")
        _patterns.setdefault((_domain(domain), op_type), []).append(Pattern(name, _domain(domain), op_type, function))
        return function
    return register


def unregister(function) -> None:
    """Remove every registration of ``function``, converter or pattern (tests add throwaway ones)."""
    for table in (_converters, _patterns):
        for key in list(table):
            table[key] = [r for r in table[key] if r.function is not function]
            if not table[key]:
                del table[key]


def find(domain: str, op_type: str, opset: int) -> Callable:
    """The converter of ``op_type`` at ``opset``; Unsupported naming the opsets it has when none fits."""
    domain = _domain(domain)
    found = _converters.get((domain, op_type))
    if not found:
        if domain != DEFAULT_DOMAIN:
            raise Unsupported(f"an op of domain {domain!r} (polyeng runs the default ONNX domain)")
        raise Unsupported("polyeng has no op for it")
    for registration in found:
        if registration.covers(opset):
            return registration.function
    spans = " and ".join(_span(r) for r in sorted(found, key=lambda r: r.first))
    raise Unsupported(f"polyeng converts {op_type} at opsets {spans}, not at the model's opset {opset}")


def patterns(domain: str, op_type: str, disabled=frozenset()) -> list:
    """The fusions to try on a node of ``op_type``, in order, less those ``disabled`` names (or "all")."""
    if "all" in disabled:
        return []
    return [p.function for p in _patterns.get((_domain(domain), op_type), ()) if p.name not in disabled]


def fusions() -> dict:
    """``{name: op_type}`` of every registered fusion, the op type being the node it starts from."""
    return {p.name: p.op_type for ps in _patterns.values() for p in ps}


def registered() -> list:
    """Every converter (``Registration``) and fusion (``Pattern``) registered, in registration order."""
    return [r for table in (_converters, _patterns) for rs in table.values() for r in rs]


def supported_ops(domain: str = DEFAULT_DOMAIN) -> dict:
    """``{op_type: (first_opset, last_opset)}`` for ``domain``: the first and last opsets any of the
    op's converters reads (an op whose form changed has one converter per form, end to end)."""
    domain = _domain(domain)
    found = {}
    for (d, op_type), registrations in _converters.items():
        if d == domain and registrations:
            found[op_type] = (min(r.first for r in registrations), max(r.last_opset for r in registrations))
    return dict(sorted(found.items()))


def _span(registration: Registration) -> str:
    return f"{registration.first} to {registration.last_opset}"
