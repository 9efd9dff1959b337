"""The dask cluster a run is split over, named by one string: ``local:N`` (N worker processes on
this machine, started for the run and closed after it) or ``tcp://HOST:PORT`` (a scheduler
someone else started, left running), and how a batch is cut into chunks for its workers.

``distributed`` is imported only when a cluster is asked for, so ``polyeng`` without the
``polyeng[dask]`` extra says what to install instead of failing on import.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import warnings

from ..engine import environment

CONNECT_TIMEOUT_S = 10.0   # a scheduler that has not answered (or has no worker) by then is not there
CHUNKS_PER_WORKER = 2      # one chunk computing while the next is handed over
FORMS = "local:N (N worker processes on this machine, N a positive integer) or tcp://HOST:PORT (a running scheduler)"
_LOCAL = re.compile(r"local:([0-9]+)")
_TCP = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):([0-9]{1,5})")


def parse(spec: str) -> tuple[str, int | str]:
    """``("local", N)`` or ``("tcp", address)``; ValueError naming ``spec`` and the forms taken."""
    text = spec.strip() if isinstance(spec, str) else ""
    local, tcp = _LOCAL.fullmatch(text), _TCP.fullmatch(text)
    if local and int(local.group(1)) >= 1:
        return "local", int(local.group(1))
    if tcp and 0 < int(tcp.group(2)) < 65536:
        return "tcp", text
    raise ValueError(f"{spec!r} names no dask cluster; expected {FORMS}")


@contextlib.contextmanager
def connect(spec: str, timeout: float | None = None):
    """A ``distributed.Client`` on the cluster ``spec`` names, the default client while the block
    runs (so ``dask.compute`` and graphs called on dask arrays use it), with at least one worker.

    ``local:N`` starts N worker processes on 127.0.0.1 (``local_cluster``) and closes them when
    the block ends. ``tcp://HOST:PORT``
    closes only its client: the cluster belongs to whoever started it. OSError when the
    scheduler does not answer, or has no worker, within ``timeout`` seconds (default
    ``CONNECT_TIMEOUT_S``).
    """
    kind, value = parse(spec)
    distributed = distributed_module()
    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    with contextlib.ExitStack() as stack:
        if kind == "local":
            target = stack.enter_context(local_cluster(value))
        else:
            target = value
        try:
            client = stack.enter_context(distributed.Client(target, timeout=timeout))
        except OSError as exc:
            why = "" if str(exc).startswith("Timed out") else f" ({exc})"
            raise OSError(f"no dask scheduler answered at {value} within {timeout:g} s{why}") from None
        try:
            client.wait_for_workers(value if kind == "local" else 1, timeout=timeout)
        except TimeoutError:
            where = "local cluster" if kind == "local" else f"dask scheduler at {value}"
            raise OSError(f"the {where} has no workers (none joined within {timeout:g} s)") from None
        yield client


def worker_threads(n_workers: int) -> int:
    """Threads for each of ``n_workers`` worker processes on this machine: its cores shared out,
    at least one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:   # no sched_getaffinity (macOS, Windows)
        cores = os.cpu_count() or 1
    return max(1, cores // max(n_workers, 1))


# what distributed sets in a worker's environment that polyeng sets otherwise (see local_cluster)
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_MALLOC_TRIM = "MALLOC_TRIM_THRESHOLD_"


@contextlib.contextmanager
def local_cluster(n_workers: int, **kwargs):
    """A ``distributed.LocalCluster`` of ``n_workers`` worker processes on 127.0.0.1, each running
    one task at a time with ``worker_threads(n_workers)`` threads for numba and BLAS, without a
    dashboard, logging only warnings and errors; closed when the block ends. ``kwargs`` go to
    ``LocalCluster``.

    Two of distributed's defaults for worker processes are replaced: BLAS on one thread
    (``OMP/MKL/OPENBLAS_NUM_THREADS=1``), while numba would start a thread per core in every
    worker, and ``MALLOC_TRIM_THRESHOLD_=65536``, which stops glibc from raising its mmap
    threshold, so that every large temporary array is mapped afresh and its pages faulted in
    again (28% slower on the bundled encoder in one process; docs/scaleout.md). Each worker's
    polyeng thread budget (``POLYENG_NUM_THREADS``) is its share of the cores, unless this process
    has the variable set; polyeng's thread policy keeps each worker's pools from spinning. Workers
    ignore Ctrl-C (``worker_setup``): this process catches it and closes them.
    """
    import dask
    distributed = distributed_module()
    threads = str(worker_threads(n_workers))
    config = {f"distributed.nanny.pre-spawn-environ.{name}": threads for name in _THREAD_VARIABLES}
    config[f"distributed.nanny.pre-spawn-environ.{_MALLOC_TRIM}"] = None
    options = dict(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                   dashboard_address=None, silence_logs=logging.WARNING,
                   preload=["polyeng.dask.worker_setup"],   # workers leave Ctrl-C to this process
                   # set in the worker before it imports numba or polyeng
                   env={"NUMBA_NUM_THREADS": threads,
                        "POLYENG_NUM_THREADS": os.environ.get("POLYENG_NUM_THREADS", threads)})
    options.update(kwargs)
    # distributed lets the parent's environment override its pre-spawn settings, copies them into
    # the parent's environment, and a worker inherits the parent's: these keys are ours while
    # the workers start, and the parent's again after
    ours = {**dict.fromkeys(_THREAD_VARIABLES, threads), _MALLOC_TRIM: None}
    with environment.variables(ours), dask.config.set(config), warnings.catch_warnings():
        # without a dashboard the scheduler still serves its health routes, on 8787 when free,
        # else on any port: that it took another one concerns nobody
        warnings.filterwarnings("ignore", r"Port \d+ is already in use", UserWarning)
        cluster = distributed.LocalCluster(**options)
    with cluster:
        yield cluster


def workers(client) -> int:
    """How many workers the client's scheduler has now."""
    return len(client.nthreads())


def chunk_rows(batch: int, workers: int, rows: int | None = None) -> int:
    """Rows per batch chunk: ``rows`` as asked, else the batch over ``CHUNKS_PER_WORKER`` chunks
    per worker, rounded up (so at most that many chunks); at least 1, at most the batch."""
    if rows is None:
        rows = math.ceil(batch / (CHUNKS_PER_WORKER * max(workers, 1)))
    return max(1, min(rows, batch))


def distributed_module():
    """``distributed``, or ImportError saying which extra brings it."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"running on a dask cluster needs dask and distributed ({exc}); "
                          f"pip install 'polyeng[dask]'") from None
    return distributed
