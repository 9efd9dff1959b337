"""Choosing the engine for one call: the whole priority order lives in ``choose_engine``.

1. special-argument: engines whose ``accepts(call)`` rejects the arguments are out;
2. layout: an input that is a device tensor native to an accepting engine picks it;
3. user: the engine from ``compute_eng`` (innermost) or the process default;
4. recommend: the op's recommendation for these arguments, then its preference list,
   BASIC last.
The step reported is "special-argument" when an engine that outranked the chosen one
was ruled out by its argument constraints. Nothing here runs a kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import EngineError
from .names import Engine
from .registry import Registry
from .settings import EngineScope

CHOSEN, ACCEPTED, REJECTED, UNAVAILABLE, MISSING = "chosen", "accepted", "rejected", "unavailable", "not implemented"
STEPS = ("special-argument", "layout", "user", "recommend")


@dataclass(frozen=True)
class Candidate:
    engine: str
    verdict: str
    reason: str = ""


@dataclass
class Decision:
    """What the selector decided for a call, and why; ``str()`` is a readable table."""
    op: str
    engine: str
    step: str
    candidates: list
    fp_math_mode: str = ""
    compute_dtype: str = ""
    plan: list = field(default_factory=list)   # engines to try in order (chosen first)
    user_engine: str = "recommend"
    fallback: bool = True

    def __str__(self) -> str:
        head = (f"{self.op}: engine={self.engine} step={self.step} fpm:{self.fp_math_mode} "
                f"compute={self.compute_dtype} user={self.user_engine}"
                f"{'' if self.fallback else ' (fallback off)'}")
        width = max([len("engine")] + [len(c.engine) for c in self.candidates])
        rows = [f"  {'engine':<{width}}  {'verdict':<15}  reason"]
        for c in self.candidates:
            rows.append(f"  {c.engine:<{width}}  {c.verdict:<15}  {c.reason}")
        return "\n".join([head] + rows)


def _verdicts(call, registry: Registry) -> dict:
    verdicts = {}
    for name, record in registry.engines.items():
        kernel = registry.kernel(call.op, name)
        if kernel is None:
            verdicts[name] = (MISSING, f"no {call.op} kernel")
            continue
        ok, reason = record.status()
        if not ok:
            verdicts[name] = (UNAVAILABLE, reason)
            continue
        rejection = kernel.rejection(call)
        verdicts[name] = (REJECTED, rejection) if rejection else (ACCEPTED, "")
    return verdicts


def choose_engine(call, registry: Registry, scope: EngineScope) -> Decision:
    """Apply the four-step priority to ``call``; raise EngineError if ``fallback=False`` forbids the result."""
    verdicts = _verdicts(call, registry)
    accepted = [n for n, (v, _) in verdicts.items() if v == ACCEPTED]
    outranked_by_constraint = False
    chosen = step = None

    # Step 2: layout. Device tensors native to an accepting engine pull the call there.
    for value in call.tensors().values():
        owner = registry.owner_of(value)
        if owner is None:
            continue
        if owner.name in accepted:
            chosen, step = owner.name, "layout"
            break
        if verdicts[owner.name][0] == REJECTED:
            outranked_by_constraint = True

    # Step 3: the user's engine.
    user = scope.engine
    if chosen is None and user != Engine.RECOMMEND.value:
        verdict, reason = verdicts.get(user, (MISSING, "not registered"))
        if verdict == ACCEPTED:
            chosen, step = user, "user"
        elif not scope.fallback:
            raise EngineError(user, call.op, f"{verdict}: {reason}")
        elif verdict == REJECTED:
            outranked_by_constraint = True

    # Step 4: the op's recommendation, then its preference list (BASIC last).
    preference = _preference(call)
    if chosen is None:
        for name in preference:
            verdict = verdicts.get(name, (MISSING, ""))[0]
            if verdict == ACCEPTED:
                chosen, step = name, "recommend"
                break
            if verdict == REJECTED:
                outranked_by_constraint = True
    if chosen is None:
        detail = "; ".join(f"{n}: {v} ({r})" for n, (v, r) in verdicts.items())
        raise EngineError(user, call.op, f"no engine can run this call: {detail}")
    if outranked_by_constraint:
        step = "special-argument"

    plan = [chosen] + [n for n in preference if n in accepted and n != chosen]
    candidates = [Candidate(n, CHOSEN if n == chosen else v, r) for n, (v, r) in verdicts.items()]
    return Decision(call.op, chosen, step, candidates, plan=plan, user_engine=user, fallback=scope.fallback)


def _preference(call) -> list:
    spec = call.spec
    order = []
    recommended = spec.recommend(call) if spec.recommend is not None else None
    for name in ([recommended] if recommended else []) + list(spec.preference) + [Engine.BASIC.value]:
        if name not in order:
            order.append(name)
    if recommended != Engine.BASIC.value:   # BASIC is last unless it is the recommendation
        order.remove(Engine.BASIC.value)
        order.append(Engine.BASIC.value)
    return order
