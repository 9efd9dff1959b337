"""Loaded by each worker process of ``cluster.local_cluster`` as it starts (distributed's
``preload``): Ctrl-C in a terminal reaches every process of its group, and the workers must not
answer it with a traceback each. The process that started them catches it and closes the
cluster, whose nannies stop the workers. The warning a worker logs for each task the closing
cut short ("Async instruction ... ended with CancelledError"), and one fetching an input from a
worker already closed ("Worker stream died during communication"), are dropped too: they report
the interrupt again, once per task or peer. Once the interrupt has arrived, a worker logs nothing
below CRITICAL.

A heartbeat that fails to reach the scheduler ("Failed to communicate with scheduler during
heartbeat", with its traceback) is dropped always, interrupt or not. A local cluster's scheduler
runs in the process that started the workers: a heartbeat already on its way when that process
closes the cluster meets a closed stream, and the worker logged it after a run that succeeded.
Dropped too are the failures of a scheduler that does not answer (its process busy or stopped)
or is gone (its process ended): the worker's message would not say more than the process itself
shows, and distributed still closes a worker whose scheduler stays away. This preload serves
only local clusters."""
import logging
import signal
import threading


def _closing_after_interrupt(signum, frame) -> None:
    """Ctrl-C reached the group: the worker goes on until its nanny stops it, quietly."""
    logging.disable(logging.ERROR)


if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, _closing_after_interrupt)


def _not_a_cut_short_task(record) -> bool:
    return "ended with CancelledError" not in record.getMessage()


def _not_a_closed_peer(record) -> bool:
    """A local cluster's workers close together: one fetching a task's input from another that
    is already gone logs the broken stream, which says nothing the closing did not."""
    return not record.getMessage().startswith("Worker stream died during communication")


def _not_a_closed_scheduler(record) -> bool:
    """The scheduler lives in the process that closes the cluster: a heartbeat that finds it
    closed is the closing itself."""
    return not record.getMessage().startswith("Failed to communicate with scheduler during heartbeat")


logging.getLogger("distributed.worker.state_machine").addFilter(_not_a_cut_short_task)
logging.getLogger("distributed.worker").addFilter(_not_a_closed_peer)
logging.getLogger("distributed.worker").addFilter(_not_a_closed_scheduler)


def dask_setup(worker) -> None:   # the hook distributed calls; the import above did the work
    pass
