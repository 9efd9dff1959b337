"""Environment variables set for a block and put back as they were.

Some libraries read a variable once, as they load or start their threads (libgomp's
``OMP_WAIT_POLICY``, OpenBLAS's ``OPENBLAS_THREAD_TIMEOUT``, a dask worker's thread counts):
polyeng sets it only around that moment, so the application's environment and its child
processes are left as the user made them.
"""
from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def variables(values: dict):
    """The process's environment with ``values`` (name -> str, or None to unset) for the block;
    afterwards each variable is as it was, unset again where it was unset."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        _put(values)
        yield
    finally:
        _put(saved)


def _put(values: dict) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
