"""Choosing the engine for one call: the whole priority order lives in ``choose_engine``.

1. special-argument: engines whose ``accepts(call)`` rejects the arguments are out;
2. layout: an input that is a device tensor native to an accepting engine picks it;
3. user: the engine from ``compute_eng`` (innermost) or the process default;
4. recommend: the op's recommendation for these arguments, then its preference list,
   BASIC last.
The step reported is "special-argument" when an engine that outranked the chosen one
was ruled out by its argument constraints. Nothing here runs a kernel.

Engines are probed (availability, then ``accepts``) only when the order reaches them, so a
call that BASIC takes imports no other engine's library; ``explain`` probes every engine to
show every verdict, and a decision lists the others as not probed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import EngineError
from .names import Engine
from .registry import Registry
from .settings import EngineScope

CHOSEN, ACCEPTED, REJECTED, UNAVAILABLE, MISSING = "chosen", "accepted", "rejected", "unavailable", "not implemented"
NOT_PROBED = "not probed"


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
    compute_dtype: object = None   # a numpy dtype: float32 for f32 and tf32 work, bfloat16, ...
    compute_type: str = ""         # its short name, as verbose prints it: f32, tf32, bf16, s8, ...
    plan: list = field(default_factory=list)   # engines to try in order (chosen first; later ones probed on fallback)
    user_engine: str = "recommend"
    fallback: bool = True
    algorithm: str = ""            # the op's choice for these shapes where it has several (conv2d: im2col)

    def __str__(self) -> str:
        head = (f"{self.op}: engine={self.engine} step={self.step} fpm:{self.fp_math_mode} "
                f"compute={self.compute_type} user={self.user_engine}"
                f"{f' algorithm={self.algorithm}' if self.algorithm else ''}"
                f"{'' if self.fallback else ' (fallback off)'}")
        width = max([len("engine")] + [len(c.engine) for c in self.candidates])
        rows = [f"  {'engine':<{width}}  {'verdict':<15}  reason"]
        for c in self.candidates:
            rows.append(f"  {c.engine:<{width}}  {c.verdict:<15}  {c.reason}")
        return "\n".join([head] + rows)


def verdict(call, registry: Registry, name: str) -> tuple:
    """(verdict, reason) of engine ``name`` for ``call``: probes its availability and its limits."""
    record = registry.engines.get(name)
    if record is None:
        return MISSING, "not registered"
    kernel = registry.kernel(call.op, name)
    if kernel is None:
        return MISSING, f"no {call.op} kernel"
    ok, reason = record.status()
    if not ok:
        return UNAVAILABLE, reason
    rejection = kernel.rejection(call)
    return (REJECTED, rejection) if rejection else (ACCEPTED, "")


class _Verdicts(dict):
    """Verdicts probed on first look-up, in the order the priority reaches the engines."""

    def __init__(self, call, registry: Registry):
        super().__init__()
        self.call, self.registry = call, registry

    def __missing__(self, name):
        self[name] = result = verdict(self.call, self.registry, name)
        return result


def choose_engine(call, registry: Registry, scope: EngineScope, *, probe_all: bool = False) -> Decision:
    """Apply the four-step priority to ``call``; raise EngineError if ``fallback=False`` forbids the result.

    Only the engines the order reaches are probed, unless ``probe_all`` (explain) asks for every verdict.
    """
    verdicts = _Verdicts(call, registry)
    if probe_all:
        for name in registry.engines:
            verdicts[name]
    outranked_by_constraint = False
    chosen = step = None

    # Step 2: layout. Device tensors native to an accepting engine pull the call there; under a
    # pinned engine (fallback=False) only its own do: the others are moved to it.
    user = scope.engine
    pinned = not scope.fallback and user != Engine.RECOMMEND.value
    if registry.native_types():
        for value in call.tensors().values():
            owner = registry.owner_of(value)
            if owner is None or (pinned and owner.name != user):
                continue
            verdict_, _ = verdicts[owner.name]
            if verdict_ == ACCEPTED:
                chosen, step = owner.name, "layout"
                break
            if verdict_ == REJECTED:
                outranked_by_constraint = True

    # Step 3: the user's engine.
    if chosen is None and user != Engine.RECOMMEND.value:
        verdict_, reason = verdicts[user]
        if verdict_ == ACCEPTED:
            chosen, step = user, "user"
        elif not scope.fallback:
            raise EngineError(user, call.op, f"{verdict_}: {reason}")
        elif verdict_ == REJECTED:
            outranked_by_constraint = True

    # Step 4: the op's recommendation, then its preference list (BASIC last).
    preference = _preference(call)
    if chosen is None:
        for name in preference:
            verdict_ = verdicts[name][0]
            if verdict_ == ACCEPTED:
                chosen, step = name, "recommend"
                break
            if verdict_ == REJECTED:
                outranked_by_constraint = True
    if chosen is None:
        for name in registry.engines:   # the error lists every engine's verdict
            verdicts[name]
        detail = "; ".join(f"{n}: {v} ({r})" for n, (v, r) in verdicts.items())
        raise EngineError(user, call.op, f"no engine can run this call: {detail}")
    if outranked_by_constraint:
        step = "special-argument"

    plan = [chosen] + [n for n in preference if n != chosen and verdicts.get(n, (ACCEPTED,))[0] == ACCEPTED]
    candidates = [Candidate(n, CHOSEN, "") if n == chosen else
                  Candidate(n, *verdicts[n]) if n in verdicts or registry.kernel(call.op, n) is None else
                  Candidate(n, NOT_PROBED, f"the decision stopped at {chosen}")
                  for n in registry.engines]
    algorithm = call.prepared.__dict__.get("algorithm", "") if call.prepared is not None else ""
    return Decision(call.op, chosen, step, candidates, plan=plan, user_engine=user, fallback=scope.fallback,
                    algorithm=algorithm)


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
