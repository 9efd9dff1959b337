"""Option values more than one command takes, parsed once: each bad value is a ``UsageError``."""
from __future__ import annotations

import polyeng

from .console import UsageError


def named_engines(names: str) -> list[str]:
    """The engines of ``--engines a,b`` (case-insensitive) as registered names; each must be
    registered and available."""
    records = {e.name.lower(): e for e in polyeng.engines()}
    chosen = []
    for name in (n.strip().lower() for n in names.split(",") if n.strip()):
        if name not in records:
            raise UsageError(f"--engines {name!r} is not a registered engine; registered: {', '.join(records)}")
        if not records[name].available:
            raise UsageError(f"--engines {name!r} is unavailable: {records[name].reason}")
        chosen.append(records[name].name)
    return chosen
