"""Per-op mixed precision rules: each op's AMP category, accumulation and output dtypes.

The default rule of an op comes from its ``OpSpec.category`` at level 0. Users register
their own with ``register_mixed_precision_conversion`` (the highest level wins) or change
one op's rule inside a ``with conversion_override(...)`` block without touching the table.
"""
from __future__ import annotations

import contextvars
import threading
from typing import Callable

from ..ops import catalogue
from .names import NameEnum
from .scopes import Scoped


class Category(NameEnum):
    ALLOW = "allow"     # may compute in a lower-precision type (matmul, linear, lstm)
    FOLLOW = "follow"   # computes in its input dtype (data movement, pooling, gelu...)
    DENY = "deny"       # always computes in at least f32 (softmax, layer_norm)


# The integer codes of the mixed precision proposal, accepted as a rule's first element.
_CODES = {0: Category.ALLOW, 1: Category.FOLLOW, 2: Category.DENY}
_ACCUMULATION = ("float32", "float64", "bfloat16", "float16")

_lock = threading.Lock()
# Read directly by the decision cache, which must not reuse a plan while a user rule may apply.
user_rules: dict[str, dict[int, Callable]] = {}   # op -> level -> func
override: contextvars.ContextVar[tuple] = contextvars.ContextVar("polyeng_amp_override", default=())


def _check_op(op_name) -> str:
    return catalogue.lookup(op_name, "op_name").name


def register_mixed_precision_conversion(op_name, func=None, level=10):
    """Register ``func(call, mixed_dtype) -> (category, accumulation_dtype, output_dtype)`` for ``op_name``.

    ``category`` is a ``Category`` (or the codes 0 ALLOW, 1 FOLLOW, 2 DENY); dtypes are names such
    as ``"float32"``. The function with the highest ``level`` decides; registering again at the
    same level replaces it. Without ``func`` this returns a decorator.
    """
    _check_op(op_name)
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level={level!r}: expected an int")
    if func is None:
        return lambda f: register_mixed_precision_conversion(op_name, f, level)
    if not callable(func):
        raise TypeError(f"func={func!r}: expected a callable (call, mixed_dtype) -> (category, acc, out)")
    with _lock:
        user_rules.setdefault(op_name, {})[level] = func
    return func


def unregister_mixed_precision_conversion(op_name, level=10) -> None:
    """Remove the rule registered for ``op_name`` at ``level`` (the built-in level 0 stays)."""
    _check_op(op_name)
    with _lock:
        if level == 0 or level not in user_rules.get(op_name, {}):
            raise ValueError(f"no user rule for {op_name!r} at level={level}")
        del user_rules[op_name][level]


class conversion_override(Scoped):
    """Use ``func`` as ``op_name``'s rule inside the ``with`` block only (above every level)."""

    _var = override

    def __init__(self, op_name, func):
        _check_op(op_name)
        if not callable(func):
            raise TypeError(f"func={func!r}: expected a callable (call, mixed_dtype) -> (category, acc, out)")
        self.op_name, self.func = op_name, func

    def _entered_value(self):
        # stacked on what is in effect at entry, so overrides of different ops compose
        return override.get() + ((self.op_name, self.func),)


def default_rule(category: Category) -> Callable:
    def rule(call, mixed_dtype):
        if category is Category.DENY:
            return category, "float32", "float32"
        return category, "float32", mixed_dtype
    rule.__name__ = f"default_{category.value}"
    return rule


def conversion_for(call, mixed_dtype: str) -> tuple:
    """``(Category, accumulation_dtype, output_dtype)`` for ``call``: override, else highest level."""
    func = None
    for op_name, candidate in reversed(override.get()):
        if op_name == call.op:
            func = candidate
            break
    if func is None:
        levels = user_rules.get(call.op)
        func = levels[max(levels)] if levels else default_rule(call.spec.category)
    result = func(call, mixed_dtype)
    if not (isinstance(result, tuple) and len(result) == 3):
        raise TypeError(f"the mixed precision rule for {call.op} returned {result!r}; expected "
                        f"(category, accumulation_dtype, output_dtype)")
    category, accumulation, output = result
    if isinstance(category, int) and not isinstance(category, bool) and category in _CODES:
        category = _CODES[category]
    try:
        category = Category(category)
    except ValueError:
        raise ValueError(f"the mixed precision rule for {call.op} returned category {category!r}; expected "
                         f"one of {', '.join(c.name for c in Category)} (or 0, 1, 2)") from None
    if accumulation not in _ACCUMULATION:
        raise ValueError(f"the mixed precision rule for {call.op} returned accumulation dtype {accumulation!r}; "
                         f"expected one of {', '.join(_ACCUMULATION)}")
    return category, accumulation, output
