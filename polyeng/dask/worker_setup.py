"""Loaded by each worker process of ``cluster.local_cluster`` as it starts (distributed's
``preload``): Ctrl-C in a terminal reaches every process of its group, and the workers must not
answer it with a traceback each. The process that started them catches it and closes the
cluster, whose nannies stop the workers."""
import signal
import threading

if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def dask_setup(worker) -> None:   # the hook distributed calls; the import above did the work
    pass
