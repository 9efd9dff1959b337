"""A ``Graph`` called with dask arrays: the whole graph on each batch chunk, one task per chunk.

The inputs are chunked along their leading (batch) dim only (other dims are rechunked to one
chunk), and every input takes the first dask input's batch chunks. The graph object, with its
constants, is one piece of data in the task graph, not part of every task: under a
``distributed`` client it is scattered to every worker once (and kept there for later calls
of the same graph on the same client); on other schedulers it is one task that every chunk
task reads. Each worker compiles its own copy of the graph once, on its first chunk.
"""
from __future__ import annotations

import math

import dask
import dask.array as da
import numpy as np

from ..engine.call import map_arrays
from ..engine.settings import current_settings
from ..graph.ir import ref_names
from . import blocks
from .ops import is_dask, placeholder, refuse_device_tensors


def call(graph, args, kwargs):
    refuse_device_tensors(graph.name, (args, kwargs))
    originals = {}

    def stand_in(value):
        held = placeholder(value, "a graph input")
        originals[id(held)] = value
        return held
    values = graph._bind(map_arrays(args, stand_in, is_dask), map_arrays(kwargs, stand_in, is_dask))
    values = [originals.get(id(v), v) for v in values]
    names = [v.name for v in graph.inputs]
    first = next(i for i, v in enumerate(values) if is_dask(v))
    batch = values[first].shape[0] if values[first].ndim else None
    if batch is None:
        raise ValueError(f"graph input {names[first]} is a 0-d dask array; a graph runs on dask arrays "
                         f"chunked along a leading batch dim")
    chunks = values[first].chunks[0]
    pairs = []
    for name, value in zip(names, values):
        if value.ndim == 0:
            pairs += [value if is_dask(value) else np.asarray(value), None]
            continue
        if value.shape[0] != batch:
            raise ValueError(f"graph input {name} has {value.shape[0]} rows where input {names[first]} has "
                             f"{batch}; on dask arrays every input is split along the same leading batch dim")
        layout = (chunks,) + tuple((n,) for n in value.shape[1:])
        if is_dask(value):
            value = value.rechunk(layout) if value.chunks != layout else value
        else:
            value = da.from_array(np.asarray(value), chunks=layout)
        pairs += [value, ("b",) + tuple(f"in{len(pairs)}.{a}" for a in range(1, value.ndim))]
    outputs = _output_layouts(graph, _named_sizes(graph, values))
    if any(math.isnan(n) for _, _, rest in outputs for n in rest):
        outputs = _probed(graph, values, outputs)
    settings = current_settings()
    tuples = da.blockwise(blocks.run_graph, "b", _graph_ref(graph), None, *pairs, dtype=object,
                          meta=np.empty((0,), object), concatenate=True, settings=settings,
                          token=f"polyeng-graph-{graph.name}")
    computed = []
    for i, (name, dtype, rest) in enumerate(outputs):
        index = ("b",) + tuple(f"out{i}.{a}" for a in range(len(rest)))
        array = da.blockwise(blocks.part, index, tuples, "b", dtype=dtype, meta=np.empty((0,) * len(index), dtype),
                             new_axes={k: n for k, n in zip(index[1:], rest)} or None, path=(i,),
                             token="polyeng-graph-output")
        computed.append(array)
    found = iter(computed)
    constants = graph.constants

    def output(name):
        return constants[name].copy() if name in constants else next(found)
    from ..graph.ir import fill
    return fill(graph._output_structure, output)


def _named_sizes(graph, values) -> dict:
    """The size each named dim of the inputs has in this call."""
    sizes = {}
    for v, value in zip(graph.inputs, values):
        for want, got in zip(v.shape, value.shape):
            if type(want) is str:
                sizes[want] = got
    return sizes


def _output_layouts(graph, sizes) -> list:
    """``(name, dtype, non-batch sizes)`` per computed output; ValueError for an output that does
    not keep the batch as its leading dim. A size the inputs do not tell is nan (unknown to dask)."""
    batch_dims = {v.shape[0] for v in graph.inputs if v.shape}
    layouts = []
    for name in ref_names(graph._output_structure):
        if name in graph._constants:
            continue
        dtype, shape = graph._types[name]
        if not shape or (shape[0] not in batch_dims and shape[0] is not None):
            raise ValueError(f"graph output {name} has shape {_text(shape)}, whose leading dim is not the inputs' "
                             f"batch ({', '.join(map(str, sorted(batch_dims, key=str)))}); a graph runs on dask "
                             f"arrays only when every output keeps the batch as its leading dim")
        rest = tuple(d if type(d) is int else sizes.get(d, math.nan) for d in shape[1:])
        layouts.append((name, np.dtype(dtype), rest))
    return layouts


def _probed(graph, values, outputs) -> list:
    """Output sizes the graph's types leave open (an imported model's ``unk__0``), read off a run of
    the graph on zero rows of zeros shaped like the inputs: no data is read, next to nothing is
    computed. Where that run fails the sizes stay unknown (nan) to dask."""
    empty = [np.zeros((0,) + tuple(v.shape[1:]) if v.ndim else (), v.dtype) for v in values]
    try:
        found = graph._run_flat(empty)
    except Exception:
        return outputs
    return [(name, dtype, tuple(int(n) for n in result.shape[1:]) if result.ndim == len(rest) + 1 else rest)
            for (name, dtype, rest), result in zip(outputs, found)]


def _text(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _graph_ref(graph):
    """The graph as one piece of data of the task graph: scattered to every worker of the current
    distributed client (once per client), else a task that holds it."""
    client = _client()
    if client is not None:
        cache = graph.__dict__.setdefault("_scattered", {})
        future = cache.get(client.id)
        if future is None or future.status != "finished":
            future = cache[client.id] = client.scatter(graph, broadcast=True, hash=False)
        return future
    token = dask.base.tokenize(graph)
    return dask.delayed(graph, name=f"polyeng-graph-{token}", pure=True)


def _client():
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:   # no client: dask's own schedulers
        return None
