"""Where arrays of other libraries enter: one hook for op calls, ``explain`` and graph calls.

An array handler takes over a call whose arguments hold one of its arrays (dask's lazy arrays:
the call becomes a lazy task graph run through the selector on the workers). Handlers are
declared by the module that defines their array type; the handler's own module is imported only
once that library is, so an ordinary call pays one ``sys.modules`` look-up per library in
``LIBRARIES`` until then, and a call with numpy arguments one scan of its arguments' types.

A handler module defines ``claims(value) -> bool``, ``run_op(spec, kwargs)``,
``placeholders(arguments)`` (stand-ins of the same shapes and dtypes, for ``explain``) and
``run_graph(graph, args, kwargs)``.
"""
from __future__ import annotations

import importlib
import sys

import numpy as np

# library module -> the polyeng module that handles its arrays
HANDLERS = {"dask.array": "polyeng.dask.handler"}
LIBRARIES = tuple(HANDLERS)   # callers test ``library in sys.modules`` for each before asking
_loaded: dict = {}


def _active() -> list:
    found = []
    for library, module in HANDLERS.items():
        if library in sys.modules:
            handler = _loaded.get(module)
            if handler is None:
                handler = _loaded[module] = importlib.import_module(module)
            found.append(handler)
    return found


def handler_for(values, depth: int = 2):
    """The handler claiming an array among ``values`` (a dict of arguments, or a list/tuple of
    them), or None. Lists, tuples and dicts are looked into ``depth`` levels deep: two for an op's
    arguments (lstm's params), as deep as they go for a graph's inputs (``depth=None``)."""
    handlers = _active()
    if not handlers:
        return None
    limit = 1 << 30 if depth is None else depth
    for value in (values.values() if isinstance(values, dict) else values):
        kind = type(value)
        if kind is np.ndarray:
            continue
        for handler in handlers:
            if _holds(handler, value, limit):
                return handler
    return None


def _holds(handler, value, depth: int) -> bool:
    stack = [(value, depth)]   # no recursion: a graph's inputs may nest deeply
    while stack:
        item, left = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple or kind is dict:
            if left > 0:
                stack.extend((v, left - 1) for v in (item.values() if kind is dict else item))
        elif kind is not np.ndarray and handler.claims(item):
            return True
    return False

