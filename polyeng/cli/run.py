"""``polyeng run MODEL.onnx``: one ONNX model through polyeng, as a user first tries it.

Inputs come from .npy files or are drawn from the model's signature (so a model runs with no
data at hand); the command prints the outputs with a summary, the engine each op ran on, the
median time, and with ``--compare`` the largest difference from onnxruntime (or the ONNX
reference evaluator). With ``--dask`` the batch is split into chunks run on a dask cluster's
workers, the graph called once on dask arrays so the run's settings travel with it.
``demo`` builds on the pieces here; those ``bench --models`` needs too (a graph loaded, an
onnxruntime session, random inputs) are in ``polyeng.bench``.
"""
from __future__ import annotations

import contextlib
import json
import statistics
import time
import warnings
from collections import Counter

import numpy as np

import polyeng
from ..bench.inputs import model_inputs
from ..bench.progress import Progress
from ..bench.runtimes import as_list, check_writable, load_graph, onnxruntime_session
from .console import UsageError
from .model_inputs import load_inputs, parse_dims
from .run_dask import batch_dim, check_dask_flags, counted, dask_line, enter_cluster, on_dask

AMP_DTYPES = {"bf16": "bfloat16", "f16": "float16", "auto": "bfloat16"}
LONG_RUN_S = 2.0   # timed runs expected to take longer get a progress bar (on a terminal)


def engine_scope(engine: str | None):
    """``compute_eng(engine)`` (a bad name is a UsageError), or no scope: the process default."""
    if engine is None:
        return contextlib.nullcontext()
    try:
        scope = polyeng.compute_eng(engine)
    except ValueError as exc:
        raise UsageError(f"--engine {engine}: {exc}") from None
    record = next((e for e in polyeng.engines() if e.name == scope.value.engine), None)
    if record is not None and not record.available:   # asked for by name: say why it cannot run
        raise UsageError(f"--engine {engine}: the engine is unavailable: {record.reason}")
    return scope


def convert(graph, amp: str | None, inputs: list):
    """(the graph to run, a JSON-ready AMP summary or None, the lines to print about it)."""
    if amp is None:
        return graph, None, []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if amp == "auto":
                converted, report = polyeng.amp.auto_mixed_precision(graph, *inputs, dtype=AMP_DTYPES[amp])
            else:
                converted, report = polyeng.amp.to_mixed_precision(graph, AMP_DTYPES[amp]), None
        except ValueError as exc:   # a float16 constant out of range, named by the pass
            raise UsageError(f"--amp {amp}: {exc}") from None
    counts = amp_counts(converted)
    summary = {"mode": amp, "dtype": AMP_DTYPES[amp], **counts, "notes": [str(w.message) for w in caught]}
    how = "auto_mixed_precision" if amp == "auto" else "to_mixed_precision"
    lines = [f"amp: {how}: {amp_text(counts, AMP_DTYPES[amp])}"]
    if report is not None:
        summary["kept"] = [{"node": n, "op": op, "error": float(e)} for n, op, e in report.kept]
        summary["attempts"], summary["max_abs_diff"] = report.attempts, float(report.max_abs_diff)
        lines += ["  " + line for line in str(report).splitlines()]
    lines += [f"  note: {note}" for note in summary["notes"]]
    return converted, summary, lines


def amp_counts(graph) -> dict:
    """How many of a converted graph's op nodes compute in the mixed dtype (host nodes, the shape
    plumbing, are not counted), and how many casts the pass added."""
    from ..ops import OPS
    cast = [n.amp is not None and n.amp.category == "cast" for n in graph.nodes]
    nodes = [n for n, is_cast in zip(graph.nodes, cast) if n.op in OPS and not is_cast]
    return {"nodes": len(nodes), "mixed": sum(1 for n in nodes if n.amp is not None and n.amp.mixed),
            "casts": sum(cast)}


def amp_text(counts: dict, dtype: str = "bfloat16") -> str:
    return f"{counts['mixed']} of {counts['nodes']} op nodes in {dtype}, {counts['casts']} casts"


def time_runs(fn, repeat: int, progress=None, label: str = "") -> dict:
    """One warm-up call (its result kept), then ``repeat`` timed calls; a bar when they will be long."""
    start = time.perf_counter()
    result = fn()
    first = time.perf_counter() - start
    show = progress is not None and progress.live and first * repeat > LONG_RUN_S
    times = []
    for i in range(repeat):
        if show:
            progress(i, repeat, label)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    if show:
        progress.stream.write("\r\x1b[K")
    return {"result": result, "first_s": first, "times_s": times, "median_s": statistics.median(times)}


def decisions(explanation) -> list[dict]:
    """``graph.explain`` as JSON rows; nodes without a decision run with numpy on the host."""
    rows = []
    for entry in explanation:
        d = entry.decision
        rows.append({"node": entry.node.name, "op": entry.node.op, "engine": d.engine if d else "host",
                     "step": d.step if d else "", "fp_math_mode": d.fp_math_mode if d else "",
                     "compute": d.compute_type if d else ""})
    return rows


def engines_by_op(rows: list[dict]) -> dict:
    """op -> {engine: node count}, in node order."""
    found: dict = {}
    for row in rows:
        found.setdefault(row["op"], Counter())[row["engine"]] += 1
    return {op: dict(counts) for op, counts in found.items()}


def decision_lines(by_op: dict) -> list[str]:
    """One line per op run through the selector; the host's shape plumbing on one line at the end."""
    width = max([len(op) for op in by_op] + [2])
    lines, host = [], []
    for op, counts in by_op.items():
        if set(counts) == {"host"}:
            host.append(f"{op} {counts['host']}")
            continue
        spread = ", ".join(f"{engine} {n}" for engine, n in counts.items())
        lines.append(f"  {op:<{width}}  {sum(counts.values()):3d}  {spread}")
    if host:
        lines.append(f"  on the host (numpy): {', '.join(host)}")
    return lines


def max_abs_diff(got, want) -> float | None:
    """max |got - want| in float64; None when the shapes differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return None
    if got.size == 0:
        return 0.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def reference_outputs(path: str, feed: dict) -> tuple[str, list]:
    """(which runtime, its outputs) for ``feed``: onnxruntime, else ONNX's reference evaluator."""
    session = onnxruntime_session(path)
    if session is not None:
        import onnxruntime
        return f"onnxruntime {onnxruntime.__version__}", session.run(None, feed)
    import onnx
    from onnx.reference import ReferenceEvaluator
    return (f"the ONNX reference evaluator (onnx {onnx.__version__}; onnxruntime is not installed)",
            ReferenceEvaluator(path).run(None, feed))


def output_summary(value, array) -> dict:
    numeric = array.size > 0 and (array.dtype.kind in "biuf" or array.dtype.name == "bfloat16")
    values = array.astype(np.float64) if numeric else None
    return {"name": value.name, "dtype": array.dtype.name, "shape": list(array.shape),
            **{k: (_number(getattr(np, k)(values)) if numeric else None) for k in ("min", "max", "mean")}}


def columns(rows: list[tuple]) -> list[str]:
    """Rows of cells as indented lines, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]


def _number(x):
    x = float(x)
    return x if np.isfinite(x) else str(x)   # JSON has no NaN or infinity


def _fmt(x) -> str:
    return "-" if x is None else x if isinstance(x, str) else f"{x:.4g}"


def run_model(args, progress=None) -> tuple[dict, list[str]]:
    """The whole run as a JSON-ready dict, and the lines to print."""
    check_dask_flags(args)
    if getattr(args, "profile", False) and args.dask is not None:
        raise UsageError("--profile times the nodes in this process; it does not take --dask")
    scope = engine_scope(args.engine)
    graph = load_graph(args.model, getattr(args, "disable_fusions", None))
    given = load_inputs(args.input or [], graph)
    prepared = model_inputs(graph, given, parse_dims(args.dim or [], graph, given))
    dim = batch_dim(graph, prepared.arrays) if args.dask is not None else None
    report = {"model": args.model, "graph": {"name": graph.name, "nodes": len(graph.nodes),
                                             "constants": len(graph.constants)},
              "engine": args.engine or polyeng.get_compute_eng(), "inputs": prepared.described,
              "dims": prepared.dims}
    lines = [f"model: {args.model} ({graph.name}: {len(graph.nodes)} nodes, {len(graph.constants)} constants)",
             "inputs:"] + columns([(i["name"], f"{i['dtype']}{i['shape']}", i["source"]) for i in prepared.described])
    with scope, contextlib.ExitStack() as cluster:
        try:
            runnable, report["amp"], amp_lines = convert(graph, args.amp, prepared.arrays)
            if dim is None:
                timing = time_runs(lambda: runnable(*prepared.arrays), args.repeat, progress, args.model)
            else:
                client = enter_cluster(cluster, args.dask)
                compute, report["dask"] = on_dask(client, runnable, prepared.arrays, dim, args.chunk, args.dask)
                timing = time_runs(compute, args.repeat, progress, args.model)
        except ValueError as exc:   # an op refusing the values: ids past an embedding's rows (seq too long)
            sizes = ", ".join(f"{d}={n}" for d, n in prepared.dims.items())
            raise UsageError(f"the model cannot run on these inputs{f' ({sizes})' if sizes else ''}: "
                             f"{str(exc).splitlines()[0]}") from None
        cluster.close()   # a local cluster's workers are gone before anything else runs
        rows = decisions(runnable.explain(*prepared.arrays))
    outputs = as_list(timing.pop("result"))
    report["outputs"] = [output_summary(v, a) for v, a in zip(graph.outputs, outputs)]
    report["decisions"], report["engines_by_op"] = rows, engines_by_op(rows)
    report["time"] = {"repeat": args.repeat, **timing}
    lines += amp_lines + ["outputs:"]
    lines += columns([(o["name"], f"{o['dtype']}{o['shape']}", f"min {_fmt(o['min'])}", f"max {_fmt(o['max'])}",
                       f"mean {_fmt(o['mean'])}") for o in report["outputs"]])
    lines += [f"engines per op (graph.explain, under compute_eng {report['engine']!r}):"]
    lines += decision_lines(report["engines_by_op"])
    over = ""
    if "dask" in report:
        lines.append(dask_line(report["dask"]))
        over = f", each one dask.compute over {counted(report['dask']['workers'], 'worker')}"
    lines.append(f"time: median {timing['median_s'] * 1e3:.3f} ms over {args.repeat} runs{over} "
                 f"(first run {timing['first_s'] * 1e3:.1f} ms)")
    if getattr(args, "profile", False):
        with engine_scope(args.engine):
            found = runnable.profile(*prepared.arrays, repeat=args.repeat)
        report["profile"] = {"run_ms": found.run_ms, "outside_ms": found.outside_ms, "ops": found.ops,
                             "nodes": found.nodes}
        lines += found.table().splitlines()
    if args.compare:
        feed = {i["name"]: a for i, a in zip(prepared.described, prepared.arrays)}
        try:
            runtime, expected = reference_outputs(args.model, feed)
        except Exception as exc:   # the other runtime's limits are not the user's mistake: say so, go on
            report["compare"] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
            lines.append(f"compare: the reference runtime failed: {report['compare']['error']}")
        else:
            diffs = {v.name: max_abs_diff(got, want) for v, got, want in zip(graph.outputs, outputs, expected)}
            report["compare"] = {"runtime": runtime, "max_abs_diff": diffs}
            lines.append(f"compare with {runtime}:")
            lines += columns([(name, "max |diff| " + ("shapes differ" if d is None else f"{d:.3g}"))
                              for name, d in diffs.items()])
    return report, lines


def run(args) -> int:
    if args.repeat < 1:
        raise UsageError(f"--repeat {args.repeat}: expected a positive number")
    if args.json:
        check_writable("--json", args.json)
    report, lines = run_model(args, Progress())
    print("\n".join(lines))
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        except OSError as exc:
            raise UsageError(f"--json {args.json}: {exc}") from None
    return 0
