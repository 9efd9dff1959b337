"""How many OpenMP threads a oneDNN primitive gets: polyeng's budget as the machine's load allows
it (``engine.threads.threads_now``), or one thread for small work. Waking sleeping (PASSIVE)
OpenMP workers costs tens of microseconds, more than a small primitive takes on one core. A larger
primitive then runs on that count or on one thread, whichever its first calls ran faster on
(``Primitive.run``, ``engine/thread_trials.py``)."""
from __future__ import annotations

from ...engine.threads import threads_now

SERIAL_WORK = 1 << 20   # below about a million multiply-adds or element operations: one thread


def threads_for(work: int) -> int:
    return 1 if work < SERIAL_WORK else threads_now()
