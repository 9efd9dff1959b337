"""Where op calls meet the graph tracer, without the engine importing the graph package.

While ``polyeng.graph.trace`` runs a function, ``current`` holds its tracer and every op call
goes to ``tracer.record`` instead of running directly. ``active`` counts the traces under way
in the process, so that an ordinary call pays one integer test, not a context variable read.
"""
from __future__ import annotations

import contextvars

active = 0
current: contextvars.ContextVar = contextvars.ContextVar("polyeng_tracer", default=None)
