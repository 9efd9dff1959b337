"""``polyeng run --dask``: the batch of a model's inputs split into chunks that run the whole model
on the workers of a dask cluster (``polyeng.dask``), each run one computation over the cluster.
Its options are checked before the model loads; the cluster is entered on the run's ExitStack."""
from __future__ import annotations

import contextlib
import logging
import time

import numpy as np

from .console import UsageError


def check_dask_flags(args) -> None:
    """``--dask`` and ``--chunk`` checked before the model loads: a UsageError for a bad value, or
    for dask missing."""
    if args.chunk is not None and args.dask is None:
        raise UsageError(f"--chunk {args.chunk}: only with --dask (it sets the rows of each batch chunk)")
    if args.chunk is not None and args.chunk < 1:
        raise UsageError(f"--chunk {args.chunk}: expected a positive number of rows")
    if args.dask is None:
        return
    from ..dask import cluster
    try:
        cluster.parse(args.dask)
        cluster.distributed_module()
    except ValueError as exc:
        raise UsageError(f"--dask {exc}") from None
    except ImportError as exc:
        raise UsageError(f"--dask {args.dask}: {exc}") from None


def batch_dim(graph, arrays) -> tuple:
    """(name, size, the batch axis of each input or None) of the dim ``--dask`` splits: the graph's
    batch as ``polyeng.dask.graphs.batch_layout`` tells it (a time-major model's ``[seq, batch]``
    is split along its second dim)."""
    from ..dask.graphs import batch_layout
    try:
        layout = batch_layout(graph, arrays)
    except ValueError as exc:
        raise UsageError(f"--dask: {exc}") from None
    first = next(i for i, axis in enumerate(layout.inputs) if axis is not None)
    axis = layout.inputs[first]
    name = graph.inputs[first].shape[axis]
    return (name if isinstance(name, str) else "batch", int(np.shape(arrays[first])[axis]), layout.inputs)


def enter_cluster(stack, spec: str):
    """The client of ``--dask SPEC``, closed with ``stack``; a UsageError when none can be had."""
    from ..dask import cluster
    try:
        client = stack.enter_context(cluster.connect(spec))
    except OSError as exc:   # no scheduler there, or one without workers
        raise UsageError(f"--dask: {exc}") from None
    stack.enter_context(_quiet_after_interrupt())   # left first: before the client closes
    return client


@contextlib.contextmanager
def _quiet_after_interrupt():
    """After Ctrl-C the client's event loop, in its own thread, reports the gather the interrupt cut
    short ("Task exception was never retrieved ... AllExit"), sometimes before the interrupt has
    reached this frame; the command says 'polyeng: interrupted' instead. The filter drops only
    that report (AllExit is raised for nothing else); the process ends after an interrupt, so the
    loggers stay quiet then."""
    asyncio_log = logging.getLogger("asyncio")
    asyncio_log.addFilter(_drop_cut_short_gathers)
    try:
        yield
    except KeyboardInterrupt:
        for name in ("asyncio", "distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        raise


def _drop_cut_short_gathers(record) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    return not (exc is not None and type(exc).__name__ == "AllExit")


def on_dask(client, runnable, arrays, dim, chunk: int | None, spec: str) -> tuple:
    """(a no-argument call that computes the outputs over the cluster, gathered here; what runs where).

    The graph is called once, now, under the caller's settings, on the inputs as dask arrays
    chunked along the batch (``dim``, from ``batch_dim``); each call of the first is one
    ``dask.compute`` of its outputs."""
    import dask
    import dask.array as da
    from ..dask import cluster
    name, batch, axes = dim
    workers = cluster.workers(client)
    rows = cluster.chunk_rows(batch, workers, chunk)
    split = [a if axis is None else da.from_array(a, chunks=tuple(rows if d == axis else n for d, n in enumerate(a.shape)))
             for a, axis in zip(arrays, axes)]
    start = time.perf_counter()
    lazy = runnable(*split)
    call_s = time.perf_counter() - start
    parts = tuple(lazy) if isinstance(lazy, (tuple, list)) else (lazy,)
    first = next(i for i, axis in enumerate(axes) if axis is not None)
    chunks = split[first].chunks[axes[first]]
    where = {"cluster": spec, "scheduler": client.scheduler.address, "workers": workers, "dim": name,
             "batch": batch, "rows_per_chunk": rows, "chunks": len(chunks), "chunk_rows": list(chunks),
             "call_s": call_s}
    return (lambda: dask.compute(*parts)), where


def dask_line(where: dict) -> str:
    rows, last = where["rows_per_chunk"], where["chunk_rows"][-1]
    return (f"dask: {where['cluster']} (scheduler {where['scheduler']}), {counted(where['workers'], 'worker')}: "
            f"{where['dim']}={where['batch']} in {counted(where['chunks'], 'chunk')} of {counted(rows, 'row')}"
            + (f" (the last {last})" if last != rows else ""))


def counted(n: int, thing: str) -> str:
    """``2 workers``, ``1 chunk``."""
    return f"{n} {thing}{'s' * (n != 1)}"
