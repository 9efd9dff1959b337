"""A ``Graph`` called with dask arrays: the whole graph on each batch chunk, one task per chunk.

The inputs are chunked along their leading (batch) dim only (other dims are rechunked to one
chunk), and every input takes the first dask input's batch chunks. The graph object, with its
constants, is one piece of data in the task graph, not part of every task: under a
``distributed`` client it is scattered to every worker once per client (distributed's active
memory manager may drop a worker's copy between computes; it is then copied from another
worker, never from the client again); on other schedulers it is one task that every chunk
task reads. Each worker compiles its own copy of the graph once, on its first chunk.
"""
from __future__ import annotations

import math

import dask
import dask.array as da
import numpy as np

from ..engine.call import map_arrays
from ..engine.settings import current_settings
from ..graph.ir import fill, ref_names
from . import blocks
from .ops import is_dask, part_of, placeholder, refuse_device_tensors


def call(graph, args, kwargs):
    refuse_device_tensors(graph.name, (args, kwargs))
    originals = {}

    def stand_in(value):
        held = placeholder(value, "a graph input")
        originals[id(held)] = value
        return held
    values = graph._bind(map_arrays(args, stand_in, is_dask), map_arrays(kwargs, stand_in, is_dask))
    values = [originals.get(id(v), v) for v in values]
    layout = batch_layout(graph, values)
    names = [v.name for v in graph.inputs]
    first = next((i for i, v in enumerate(values) if is_dask(v) and layout.inputs[i] is not None), None)
    if first is None:
        raise ValueError(f"graph {graph.name}: the dask inputs have no batch ({layout.dim_text}) to split along")
    batch = values[first].shape[layout.inputs[first]]
    chunks = values[first].chunks[layout.inputs[first]]
    pairs = []
    for name, value, axis in zip(names, values, layout.inputs):
        if axis is None:   # no batch dim: whole, one piece every chunk task reads
            value = value if is_dask(value) else np.asarray(value)
            pairs += [value.rechunk(-1) if is_dask(value) else value, None]
            continue
        if value.shape[axis] != batch:
            raise ValueError(f"graph input {name} has {value.shape[axis]} along {layout.dim_text} where input "
                             f"{names[first]} has {batch}; every input is split along the same batch")
        shape = tuple(value.shape)
        layout_chunks = tuple(chunks if a == axis else (n,) for a, n in enumerate(shape))
        if is_dask(value):
            value = value.rechunk(layout_chunks) if value.chunks != layout_chunks else value
        else:
            value = da.from_array(np.asarray(value), chunks=layout_chunks)
        pairs += [value, tuple("b" if a == axis else f"in{len(pairs)}.{a}" for a in range(len(shape)))]
    settings = current_settings()
    tuples = da.blockwise(blocks.run_graph, "b", _graph_ref(graph), None, *pairs, dtype=object,
                          meta=np.empty((0,), object), concatenate=True, settings=settings,
                          in_axis=layout.inputs[first], out_axes=layout.outputs,
                          token=f"polyeng-graph-{graph.name}")
    computed = []
    for i, ((dtype, shape), axis) in enumerate(zip(layout.types, layout.outputs)):
        index = tuple("b" if a == axis else f"out{i}.{a}" for a in range(len(shape)))
        computed.append(part_of(tuples, "b", (i,), index, dtype, {k: n for k, n in zip(index, shape) if k != "b"},
                                "polyeng-graph-output"))
    found = iter(computed)
    constants = graph.constants

    def output(name):
        return constants[name].copy() if name in constants else next(found)
    return fill(graph._output_structure, output)


class Layout:
    """Where the batch is: ``dim_text`` names it, ``inputs``/``outputs`` hold its axis in each input
    and computed output (None: the input has none), ``types`` each output's dtype and shape with
    the batch axis's size left as the graph has it."""

    def __init__(self, dim_text, inputs, outputs, types):
        self.dim_text, self.inputs, self.outputs, self.types = dim_text, inputs, outputs, types


def batch_layout(graph, values) -> Layout:
    """The batch of a graph called with ``values``: the leading dim of a traced graph; for a graph
    with named dims (an imported model), the named dim that every input with dims has once and
    whose name says batch (or, when there is one such dim, that one). Its place in each output
    comes from the output's declared dims or, where they do not tell (``unk__0``), from a run on
    zero rows. ValueError when the batch cannot be told or an output does not keep it."""
    inputs = graph.inputs
    outputs = [name for name in ref_names(graph._output_structure) if name not in graph._constants]
    if not any(type(d) is str for v in inputs for d in v.shape):
        in_axes = [0 if len(v.shape) else None for v in inputs]
        if all(a is None for a in in_axes):
            raise ValueError(f"graph {graph.name}: no input has a batch dim to split along")
        dim, out_axes = None, []
        for name in outputs:
            shape = graph._types[name][1]
            if not shape or shape[0] != inputs[in_axes.index(0)].shape[0]:
                raise ValueError(f"graph output {name} has shape {_text(shape)}, whose leading dim is not the "
                                 f"inputs' batch; a graph runs on dask arrays only when every output keeps "
                                 f"the batch")
            out_axes.append(0)
        text = "the leading dim"
    else:
        dim = _batch_name(graph)
        in_axes = [list(v.shape).index(dim) if dim in v.shape else None for v in inputs]
        out_axes = [list(graph._types[n][1]).index(dim) if dim in graph._types[n][1] else None for n in outputs]
        text = f"dim {dim!r}"
    sizes = _named_sizes(graph, values)
    types = []
    for name in outputs:
        dtype, shape = graph._types[name]
        types.append((np.dtype(dtype), tuple(d if type(d) is int else sizes.get(d, math.nan) for d in shape)))
    if dim is not None and (None in out_axes or any(math.isnan(n) for _, s in types for n in s)):
        out_axes, types = _probed(graph, values, in_axes, outputs, out_axes, types)
    for name, axis in zip(outputs, out_axes):
        if axis is None:
            raise ValueError(f"graph output {name} has shape {_text(graph._types[name][1])}, which does not keep "
                             f"{text} of the inputs (the batch); a graph runs on dask arrays only when every "
                             f"output keeps the batch")
    return Layout(text, in_axes, out_axes, types)


def _batch_name(graph) -> str:
    shared = None
    for v in graph.inputs:
        if not v.shape:
            continue
        once = {d for d in v.shape if type(d) is str and list(v.shape).count(d) == 1}
        shared = once if shared is None else shared & once
    shared = sorted(shared or ())
    batch = [d for d in shared if "batch" in d.lower()]
    if len(batch) == 1:
        return batch[0]
    if len(shared) == 1 and not batch:
        return shared[0]
    raise ValueError(f"graph {graph.name}: cannot tell which named dim is the batch to split along "
                     f"(the inputs share {', '.join(shared) or 'no named dim'}); on dask arrays a graph is split "
                     f"along the one named dim that every input has and whose name contains 'batch'")


def _named_sizes(graph, values) -> dict:
    """The size each named dim of the inputs has in this call."""
    sizes = {}
    for v, value in zip(graph.inputs, values):
        for want, got in zip(v.shape, value.shape):
            if type(want) is str:
                sizes[want] = got
    return sizes


def _probed(graph, values, in_axes, outputs, out_axes, types):
    """Where the batch goes in the outputs whose dims do not tell (an imported model's ``unk__0``),
    and their other sizes, from a run of the graph on zero rows of zeros shaped like the inputs:
    no data is read and next to nothing is computed. The batch axis of such an output is its one
    dim of size 0. Where that run fails, what the types tell is kept (unknown sizes are nan)."""
    empty = [np.zeros(tuple(0 if a == axis else n for a, n in enumerate(v.shape)), v.dtype)
             for v, axis in zip(values, in_axes)]
    try:
        found = graph._run_flat(empty)
    except Exception:
        return out_axes, types
    axes, sized = [], []
    for result, axis, (dtype, shape) in zip(found, out_axes, types):
        zeros = [a for a, n in enumerate(result.shape) if n == 0]
        if axis is None and len(zeros) == 1:
            axis = zeros[0]
        if len(result.shape) == len(shape):
            shape = tuple(n if a == axis else int(m) for a, (n, m) in enumerate(zip(shape, result.shape)))
        axes.append(axis)
        sized.append((dtype, shape))
    return axes, sized


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
