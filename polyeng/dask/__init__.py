"""polyeng on dask (the ``polyeng[dask]`` extra): ops and graphs on dask arrays, run on the
workers of any dask scheduler under the settings of the caller.

Nothing here is imported unless dask is: an op call looks for dask arrays among its arguments
only once ``dask.array`` has been imported, and then returns a lazy dask array
(see :mod:`polyeng.dask.ops`); a ``Graph`` called with dask arrays chunked along the batch
runs the whole graph once per chunk (see :mod:`polyeng.dask.graphs`).
"""
