"""dask's array handler (``polyeng.engine.array_handlers``): how dask arrays enter op calls,
``explain`` and graph calls."""
from __future__ import annotations

from ..engine.call import map_arrays
from .ops import apply, is_dask, placeholder

claims = is_dask


def run_op(spec, kwargs: dict):
    """The lazy result of an op call some of whose arguments are dask arrays."""
    return apply(spec, kwargs)


def placeholders(arguments: dict) -> dict:
    """The arguments with each dask array replaced by a zero-stride stand-in of its shape and dtype."""
    return map_arrays(arguments, placeholder, is_dask)


def run_graph(graph, args, kwargs):
    """A graph called with dask arrays: one task per batch chunk."""
    from .graphs import call
    return call(graph, args, kwargs)
