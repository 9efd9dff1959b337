"""The bundled encoder on local dask.distributed workers: throughput, and what a call sends.

Throughput. ``encoder_opset17`` (ids < 1000 and a mask, ``--batch`` x ``--seq``) is run, interleaved,
``--repeat`` times per configuration after one untimed warm-up run of each (compiling, planning,
the workers' first chunk); samples/s is the batch over the median time:

- eager: the graph called on the numpy arrays in this process, default engine selection and threads;
- eager, 1 thread: the same with numba's and OpenBLAS's thread counts at 1 (what each worker
  gets when there are as many workers as cores);
- eager, 1 thread, chunked: that, called on ``--chunk`` rows at a time and the results
  concatenated, as a worker runs its chunks: what is left of a worker's time is the cluster's;
- N workers: ``polyeng.dask.cluster.local_cluster(N)``, as ``polyeng run --dask local:N`` starts
  it: N worker processes running one task at a time, the cores shared out among them for numba
  and BLAS (the counts are printed), every cluster started before the first run; the timed call is ``dask.compute`` of the graph called on the
  inputs wrapped by ``dask.array.from_array`` (``--chunk`` rows per chunk), built once per cluster
  (that is when the graph is scattered), the result gathered into this process.

Every result is compared with the eager output (max |diff|).

Transfer. Measured on each cluster: the scatter of the graph (bytes the workers read from their
TCP comms, counted in each worker process since distributed keeps no such total; worker-to-worker
bytes from the workers' transfer logs, as written to the wire; the size the scheduler books for
the graph, dask's ``sizeof``), and the last timed compute (the same counts, the bytes of the
``update-graph`` message the client sends, worker-to-client bytes, and how often the graph went
from one worker to another: the active memory manager of distributed drops the copies of a
broadcast that no task waits for, every 2 s by default, so a later compute fetches it again).

Growth, on lazy arrays only: for each batch and chunk size of ``--growth-batches`` x
``--growth-chunks``, the task count (as built and after ``dask.optimize``), the pickled
(cloudpickle) size of the tasks built under a client (the graph referenced by its scattered
future), split into the graph's own tasks and the input chunks, the size of the same tasks
without a client (the graph pickled into them as one task), and the pickled graph's size times
the number of workers (what the scatter sends).

    python benchmarks/scaleout.py [--batch 4096] [--seq 64] [--chunk 256] [--workers 1 2] [--repeat 3]
        [--growth-batches 1024 4096 16384] [--growth-chunks 64 256 1024] [--json PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import statistics
import time

import numpy as np

MODEL = "encoder_opset17"


def load_graph():
    import polyeng.onnx
    from polyeng import models
    return polyeng.onnx.load(models.path(MODEL))


def make_inputs(batch: int, seq: int, seed: int = 0) -> tuple:
    """Ids below 1000; the mask attends everywhere but at random places of the last quarter."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1000, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), bool)
    tail = max(1, seq // 4)
    mask[:, seq - tail:] = rng.random((batch, tail)) < 0.5
    return ids, mask


# --- threads ---------------------------------------------------------------------------------------
def _blas_controls():
    from polyeng.backends import _blas_threads
    return _blas_threads._controls if _blas_threads._controls is not None else _blas_threads._find_controls()


def thread_counts() -> dict:
    """numba's and OpenBLAS's thread counts in this process (None where not found)."""
    try:
        import numba
        numba_threads = numba.get_num_threads()
    except ImportError:
        numba_threads = None
    controls = _blas_controls()
    return {"numba": numba_threads, "openblas": controls[0]() if controls else None}


@contextlib.contextmanager
def one_thread():
    restore = []
    try:
        import numba
        restore.append((numba.set_num_threads, numba.get_num_threads()))
        numba.set_num_threads(1)
    except ImportError:
        pass
    controls = _blas_controls()
    if controls:
        restore.append((controls[1], controls[0]()))
        controls[1](1)
    try:
        yield
    finally:
        for setter, value in restore:
            setter(value)


# --- clusters ----------------------------------------------------------------------------------------
class Cluster:
    """A local cluster of ``workers`` processes and a client that is not the global default:
    graphs are called under ``client.as_current()`` and computed with ``scheduler=client``."""

    def __init__(self, workers: int, stack: contextlib.ExitStack):
        import distributed
        from polyeng.dask.cluster import local_cluster
        self.workers = workers
        cluster = stack.enter_context(local_cluster(workers))
        self.client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
        self.client.wait_for_workers(workers, timeout=120)
        self.client.run(_import_polyeng)   # so the scatter's unpickling reads no module files
        self.client.run(_count_reads)
        self.threads = self.client.run(thread_counts)
        self.sent = []   # bytes of each update-graph message
        self.graph_key = None   # the scattered graph's
        send = getattr(self.client, "_send_to_scheduler", None)
        if send is not None:
            def spy(msg):
                if isinstance(msg, dict) and msg.get("op") == "update-graph" and "expr_ser" in msg:
                    from distributed.utils import nbytes
                    ser = msg["expr_ser"]
                    self.sent.append(sum(map(nbytes, [ser.header] + list(ser.frames))))
                return send(msg)
            self.client._send_to_scheduler = spy

    def call(self, graph, ids, mask, rows):
        import dask.array as da
        with self.client.as_current():
            lazy = graph(*(da.from_array(a, chunks=(rows, a.shape[1])) for a in (ids, mask)))
        future = graph.__dict__.get("_scattered", {}).get(self.client.id)
        self.graph_key = None if future is None else future.key
        return lazy

    def compute(self, lazy):
        import dask
        (result,) = dask.compute(lazy, scheduler=self.client)
        return result

    def read_bytes(self):
        """Bytes the workers have read from their TCP comms so far (None when not counted)."""
        counts = self.client.run(_bytes_read).values()
        return None if None in counts else sum(counts)

    def sent_by_workers(self) -> dict:
        """Bytes the workers have sent so far, as written to the wire: to other workers, to clients."""
        totals = {"to_workers": 0, "to_client": 0, "graph_sends": 0}
        for logs in self.client.run(_outgoing, self.graph_key).values():
            for key in totals:
                totals[key] += logs[key]
        return totals

    def measured(self, run):
        """``run()``'s result and the bytes that moved while it ran."""
        before_sent, before_msgs = self.sent_by_workers(), len(self.sent)
        before_read = self.read_bytes()
        result = run()
        after_read = self.read_bytes()
        after_sent = self.sent_by_workers()
        moved = {"workers_read": None if before_read is None else after_read - before_read,
                 "update_graph": sum(self.sent[before_msgs:]) if self.sent else None}
        moved.update({k: after_sent[k] - before_sent[k] for k in after_sent})
        return result, moved


def _import_polyeng():
    import importlib
    for module in ("polyeng.graph.graph", "polyeng.onnx"):
        importlib.import_module(module)


def _count_reads():
    """Counts, in this worker process, the bytes its TCP comms read (frames after their length
    header): distributed keeps no such total."""
    from distributed.comm import tcp
    read = getattr(tcp, "read_bytes_rw", None)
    if read is None or hasattr(tcp, "bytes_read_total"):
        return
    tcp.bytes_read_total = 0

    async def counted(stream, n):
        tcp.bytes_read_total += n
        return await read(stream, n)
    tcp.read_bytes_rw = counted


def _bytes_read():
    from distributed.comm import tcp
    return getattr(tcp, "bytes_read_total", None)


def _outgoing(graph_key, dask_worker=None) -> dict:
    """Totals of the worker's log of data sent on request (bytes as written to the wire)."""
    log = dask_worker.transfer_outgoing_log
    graph = [e for e in log if e["who"] is not None and graph_key in e["keys"]]
    return {"to_workers": sum(e["compressed"] for e in log if e["who"] is not None),
            "to_client": sum(e["compressed"] for e in log if e["who"] is None),
            "graph_sends": len(graph)}


# --- throughput --------------------------------------------------------------------------------------
def throughput(graph, clusters, batch, seq, rows, repeat) -> tuple:
    """(per configuration: median seconds, samples/s, max |diff| from eager; per cluster: bytes moved
    by the scatter and by the last timed compute). Each round runs every configuration once, the
    order rotated by one each round, so none always follows the same one."""
    ids, mask = make_inputs(batch, seq)

    def single():
        with one_thread():
            return graph(ids, mask)
    def chunked():
        with one_thread():
            return np.concatenate([graph(ids[i:i + rows], mask[i:i + rows]) for i in range(0, batch, rows)])
    runs = {"eager": (None, lambda: graph(ids, mask)), "eager, 1 thread": (None, single),
            "eager, 1 thread, chunked": (None, chunked)}
    transfer = {}
    for cluster in clusters:
        lazy, scatter = cluster.measured(lambda c=cluster: c.call(graph, ids, mask, rows))
        scatter = {k: scatter[k] for k in ("workers_read", "to_workers")}
        scatter["scheduler_books"] = _booked(cluster)
        transfer[_label(cluster.workers)] = {"scatter": scatter}
        runs[_label(cluster.workers)] = (cluster, lambda c=cluster, lz=lazy: c.compute(lz))
    outputs = {}
    for name, (cluster, fn) in runs.items():   # warm-up; a cluster's also counts the tasks it runs
        if cluster is None:
            outputs[name] = fn()
            continue
        from distributed import get_task_stream
        with get_task_stream(client=cluster.client) as stream:
            outputs[name] = fn()
        transfer[name]["tasks_run"] = len(stream.data)
    times = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(repeat):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            cluster, fn = runs[name]
            timed = []

            def run(fn=fn, timed=timed):
                start = time.perf_counter()
                out = fn()
                timed.append(time.perf_counter() - start)
                return out
            if cluster is None:
                outputs[name] = run()
            else:
                outputs[name], moved = cluster.measured(run)
                moved["result"] = int(outputs[name].nbytes)
                transfer[name]["compute"] = moved
            times[name].append(timed[0])
    reference = outputs["eager"]
    speeds = {}
    for name, t in times.items():
        median = statistics.median(t)
        out = outputs[name]
        same = out.shape == reference.shape and out.dtype == reference.dtype
        speeds[name] = {"seconds": median, "samples_per_s": batch / median, "runs_s": t,
                        "max_abs_diff": float(np.max(np.abs(out.astype(np.float64) - reference))) if same
                        else float("inf")}
    return speeds, transfer


def _label(workers: int) -> str:
    return f"{workers} worker" + ("s" if workers != 1 else "")


def _booked(cluster):
    """The size the scheduler holds for the scattered graph (dask's sizeof on the worker)."""
    if cluster.graph_key is None:
        return None
    return cluster.client.nbytes(keys=[cluster.graph_key], summary=False).get(cluster.graph_key)


# --- growth --------------------------------------------------------------------------------------------
def growth(graph, graph_bytes, client_cluster, batches, chunks, seq, workers) -> list:
    import cloudpickle
    import dask
    import dask.array as da
    rows = []
    for batch in batches:
        ids, mask = make_inputs(batch, seq)
        for chunk in chunks:
            chunk = min(chunk, batch)
            args = (da.from_array(ids, chunks=(chunk, seq)), da.from_array(mask, chunks=(chunk, seq)))
            bare = graph(*args)   # no client: the graph is a task of its own
            row = {"batch": batch, "chunk_rows": chunk, "chunks": len(args[0].chunks[0]),
                   "tasks": len(bare.__dask_graph__()),
                   "tasks_optimized": len(dask.optimize(bare)[0].__dask_graph__()),
                   "no_client_bytes": len(cloudpickle.dumps(dict(bare.__dask_graph__())))}
            if client_cluster is not None:
                with client_cluster.client.as_current():
                    lazy = graph(*args)
                tasks = dict(lazy.__dask_graph__())
                own = {k: v for k, v in tasks.items() if _name(k).startswith("polyeng-graph")}
                row.update({"client_tasks": len(tasks), "client_bytes": len(cloudpickle.dumps(tasks)),
                            "graph_task_bytes": len(cloudpickle.dumps(own)),
                            "input_bytes": len(cloudpickle.dumps({k: v for k, v in tasks.items() if k not in own}))})
            row["scattered_bytes"] = {str(n): graph_bytes * n for n in workers}
            rows.append(row)
    return rows


def _name(key) -> str:
    return key[0] if isinstance(key, tuple) else str(key)


# --- report ----------------------------------------------------------------------------------------------
def _mb(n) -> str:
    return "-" if n is None else f"{n / 1e6:.3f}"


def print_report(result: dict) -> None:
    print(f"{MODEL}, batch {result['batch']} x seq {result['seq']}, chunks of {result['chunk_rows']} rows, "
          f"medians of {result['repeat']} runs after one warm-up; graph pickled: "
          f"{_mb(result['graph_pickle_bytes'])} MB")
    print(f"{'configuration':24} {'samples/s':>10} {'median s':>9} {'vs eager':>9} {'max|diff|':>10}  threads")
    eager = result["throughput"]["eager"]["seconds"]
    for name, r in result["throughput"].items():
        threads = result["threads"].get(name, "")
        print(f"{name:24} {r['samples_per_s']:10.1f} {r['seconds']:9.3f} {eager / r['seconds']:9.2f} "
              f"{r['max_abs_diff']:10.3g}  {threads}")
    print()
    print("bytes moved (MB), scatter: when the graph is first called on the cluster; compute: the last timed run")
    print(f"{'transfer (MB)':16} {'workers read':>13} {'worker->worker':>15} {'worker->client':>15} "
          f"{'update-graph':>13} {'booked':>9}")
    for name, moved in result["transfer"].items():
        s, c = moved["scatter"], moved.get("compute", {})
        booked = s["scheduler_books"]
        print(f"{name + ' scatter':16} {_mb(s['workers_read']):>13} {_mb(s['to_workers']):>15} {'':>15} {'':>13} "
              f"{'-' if booked is None else f'{booked} B':>9}")
        if c:
            print(f"{name + ' compute':16} {_mb(c['workers_read']):>13} {_mb(c['to_workers']):>15} "
                  f"{_mb(c['to_client']):>15} {_mb(c['update_graph']):>13}   (result {_mb(c['result'])} MB; "
                  f"graph sent worker to worker {c['graph_sends']}x; {moved['tasks_run']} tasks)")
    print()
    workers = result["workers"]
    print("growth, on lazy arrays: tasks and pickled bytes (MB) of the task graph; the graph's constants go by "
          "the scatter")
    scatter = " ".join(f"{f'x{n} worker' + ('s' if n != 1 else ''):>10}" for n in workers)
    print(f"{'':20} {'under a client (graph: a future)':>35}   {'no client (graph: a task)':>26}   {'scatter':>10}")
    print(f"{'batch':>6} {'chunk':>6} {'chunks':>6} {'tasks':>6} {'MB':>7} {'graph tasks':>11} {'inputs':>7}   "
          f"{'tasks':>6} {'optimized':>9} {'MB':>7}   {scatter}")
    for r in result["growth"]:
        print(f"{r['batch']:6} {r['chunk_rows']:6} {r['chunks']:6} {r.get('client_tasks', '-'):>6} "
              f"{_mb(r.get('client_bytes')):>7} {_mb(r.get('graph_task_bytes')):>11} {_mb(r.get('input_bytes')):>7}   "
              f"{r['tasks']:6} {r['tasks_optimized']:9} {_mb(r['no_client_bytes']):>7}   "
              + " ".join(f"{_mb(r['scattered_bytes'][str(n)]):>10}" for n in workers))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=256, help="rows per batch chunk on the clusters")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2], help="worker counts (none: eager only)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--growth-batches", type=int, nargs="*", default=[1024, 4096, 16384])
    parser.add_argument("--growth-chunks", type=int, nargs="*", default=[64, 256, 1024])
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), os.getloadavg()[0]
    graph = load_graph()
    graph_bytes = len(pickle.dumps(graph))   # what the scatter sends
    with contextlib.ExitStack() as stack:
        clusters = [Cluster(n, stack) for n in args.workers]
        cluster_start_s = time.perf_counter() - started
        speeds, transfer = throughput(graph, clusters, args.batch, args.seq, args.chunk, args.repeat)
        threads = {"eager": thread_counts()}
        with one_thread():
            threads["eager, 1 thread"] = threads["eager, 1 thread, chunked"] = thread_counts()
        for c in clusters:
            threads[_label(c.workers)] = next(iter(c.threads.values()))
        rows = growth(graph, graph_bytes, clusters[-1] if clusters else None, args.growth_batches,
                      args.growth_chunks, args.seq, args.workers)
    result = {"model": MODEL, "batch": args.batch, "seq": args.seq, "chunk_rows": args.chunk, "repeat": args.repeat,
              "workers": args.workers, "graph_pickle_bytes": graph_bytes, "throughput": speeds,
              "threads": threads, "transfer": transfer, "growth": rows,
              "cluster_start_s": cluster_start_s, "total_s": time.perf_counter() - started,
              "load_average": [load, os.getloadavg()[0]]}
    print_report(result)
    print(f"\nmodel loaded and clusters started in {result['cluster_start_s']:.1f} s; "
          f"{result['total_s']:.1f} s in all; load average (1 min) {result['load_average'][0]:.2f} before, "
          f"{result['load_average'][1]:.2f} after, on {os.cpu_count()} cores")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
