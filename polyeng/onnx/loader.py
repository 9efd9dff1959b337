"""``load``: an ONNX model to a polyeng Graph, node by node, with every unsupported node reported."""
from __future__ import annotations

import numpy as np

from ..graph import common
from ..graph.graph import Graph
from ..graph.ir import Ref
from . import model as onnx_model
from . import budget, graph_cache, host_programs, registry, validate
# The converter and fusion modules: each registers its functions with ``registry`` on import.
from . import ops_conv, ops_logic, ops_math, ops_matmul, ops_nn, ops_recurrent, ops_shape, ops_split, patterns  # noqa: F401
from ..graph.ir import unique
from .builder import Builder, Unsupported, Val, const
from .context import OnnxNode
from .fusion_graph import FusionGraph
from .registry import fusions, supported_ops  # noqa: F401  (answered once the modules above registered)


def load(model, base_dir=None, max_bytes=None, disable_fusions=None, cache=None) -> Graph:
    """An ONNX model (a path, bytes or ``onnx.ModelProto``) as a polyeng ``Graph``.

    The graph takes the model's inputs positionally, in the model's order (initializers are not
    inputs), and returns one array for a model with one output, else a tuple in the model's
    output order. Dims the model names may take any size (the same wherever a name repeats).
    A model with nodes polyeng cannot run is one ValueError listing every such node by op type
    and name, with the reason.

    External data is read only from inside the model file's folder, or from ``base_dir`` when it
    is given; a model given as bytes or a ModelProto that names external data needs ``base_dir``
    (see ``polyeng.onnx.external_data``). No tensor made at load time may exceed ``max_bytes``
    (8 GiB by default; ``polyeng.onnx.budget``), checked before shape inference or folding runs.

    Exporter idioms are recognised as one op as nodes are converted (``polyeng.onnx.fusions()``),
    and the graph's fusions (``polyeng.graph.fusions()``) are applied to the result;
    ``disable_fusions`` (names, or "all") turns some off, as ``POLYENG_DISABLE_FUSIONS`` does.

    The graph made from a file or bytes with no external data is kept in polyeng's cache folder,
    and a later load of the same bytes with the same options reads it back without converting
    (``polyeng.onnx.graph_cache``); ``cache=False``, or ``POLYENG_ONNX_CACHE=0``, turns that off.
    """
    from ..graph import fusing as graph_fusions
    off = graph_fusions.check_names(graph_fusions.disabled(disable_fusions))
    limit = budget.limit(max_bytes)
    kept = data = None
    if graph_cache.enabled(cache) and _cacheable(model):
        options = (limit, sorted(off))
        kept = graph_cache.path_for(model, options)
        graph = graph_cache.read(kept, max_bytes)
        if graph is not None:
            return graph
        if kept is not None and not isinstance(model, (bytes, bytearray, memoryview)):
            # the file is converted from the bytes its key is made of: another process may replace
            # it between hashing and reading, and its graph must not be kept under the old bytes' key
            data = graph_cache.file_bytes(model)
            kept = None if data is None else graph_cache.path_for(model, options, data)
    graph, external = _convert(model, base_dir, max_bytes, off, data)
    if kept is not None and not external:
        graph_cache.write(graph, kept, limit)
    return graph


def _cacheable(model) -> bool:
    """A model the cache may keep: bytes, or the path of a regular file (anything else is read, and
    refused, by ``onnx_model.read`` alone)."""
    import os
    if isinstance(model, (bytes, bytearray, memoryview)):
        return True
    return isinstance(model, (str, os.PathLike)) and os.path.isfile(model)


def _convert(model, base_dir, max_bytes, off, data=None):
    """The graph of ``model`` (its file's ``data`` where already read) and the number of its tensors
    read from external files."""
    from ..graph import fusing as graph_fusions
    proto, external = onnx_model.read(model, base_dir, data)
    where = _where(model)
    opset = onnx_model.opset(proto)
    versions = {e.domain: e.version for e in proto.opset_import} | {"": opset, "ai.onnx": opset}
    validate.check(proto, versions, where)
    found = budget.check(proto, max_bytes, where)
    types = onnx_model.infer_types(proto, data_prop=found.propagation_is_small)
    g = proto.graph
    b = Builder(types, found.limit)
    initializers = set()
    for init in g.initializer:
        initializers.add(init.name)
        b.set(init.name, const(onnx_model.to_array(init, f"initializer {init.name!r}"), name=init.name))
    inputs = []
    for vi in g.input:
        if vi.name in initializers:   # older models list initializers among the inputs too
            continue
        found = onnx_model._type_of(vi)
        if found is None or found[0] is None or found[1] is None:
            raise ValueError(f"graph input {vi.name!r} has no tensor type with a shape; polyeng needs both")
        inputs.append(b.input(vi.name, *found))
    names = _node_names(g.node)
    b.output_names = {vi.name for vi in g.output}
    plan = FusionGraph(g.node, b)
    problems = []
    for i, node in enumerate(g.node):
        if plan.skipped(i):
            continue
        n = OnnxNode(node, names[i], onnx_model.attributes(node, f"{where}: {node.op_type} {names[i]!r}"), b, opset)
        b.current = n
        try:
            if not any(fuse(plan, i, n) for fuse in registry.patterns(node.domain, node.op_type, off)):
                registry.find(node.domain, node.op_type, versions.get(node.domain, 0))(n)
        except (Unsupported, ValueError, TypeError) as exc:   # TypeError, ValueError: an op refusing arguments
            problems.append(f"{node.op_type} {names[i]!r}: {exc}")
            _stand_in(n)
    if problems:
        count = f"{len(problems)} node{'s' if len(problems) > 1 else ''}"
        raise ValueError(f"the model has {count} polyeng cannot run:\n  " + "\n  ".join(problems))
    outputs = []
    for vi in g.output:
        if vi.name not in b.values:
            raise ValueError(f"graph output {vi.name!r} is not computed by any node")
        outputs.append(b.ref(b.get(vi.name)))
    nodes = _live(b.nodes, outputs)
    if not graph_fusions.is_disabled(common.NAME, off):
        nodes = common.eliminate(nodes, b.constants, [r.name for r in outputs])
    nodes = host_programs.fuse(nodes, b.constants, {v.name for v in inputs}, outputs)
    used = {n for node in nodes for n in node.inputs} | {r.name for r in outputs}
    constants = {k: v for k, v in b.constants.items() if k in used}
    types_used = {k: v for k, v in b.graph_types.items()
                  if k not in b.constants or k in constants}
    structure = outputs[0] if len(outputs) == 1 else tuple(outputs)
    graph = Graph(inputs=[_value(v, b) for v in inputs], input_structure=(tuple(Ref(v.name) for v in inputs), {}),
                  input_names=[v.name for v in inputs], nodes=nodes, constants=constants, output_structure=structure,
                  types=types_used, fn_name=g.name or "model", leading_free=False)
    return graph_fusions.fuse(graph, off), external


def _stand_in(n) -> None:
    """Outputs for a node that cannot run, typed as inference says, so the nodes after it are
    still checked and every unsupported node is reported (the graph is never built)."""
    for i, name in enumerate(n.output_names):
        if name and name not in n.b.values:
            dtype, shape = n.b.types.dtype(name), n.b.types.shape(name)
            n.b.set(name, Val("data", np.dtype(dtype or np.float32), shape, name=name))


def _value(val, b):
    from ..graph.ir import Value
    dtype, shape = b.graph_types[val.name]
    return Value(val.name, dtype, shape)


def _node_names(nodes) -> list:
    """Each node's name, made unique (exporters leave names empty or repeat them)."""
    seen = set()
    return [unique(node.name or f"{node.op_type}_{i}", seen, "_") for i, node in enumerate(nodes)]


def _live(nodes, outputs) -> list:
    """The nodes an output depends on (folding and fusion leave others behind)."""
    needed = {r.name for r in outputs}
    kept = []
    for node in reversed(nodes):
        if any(name in needed for name in node.outputs):
            kept.append(node)
            needed.update(node.inputs)
    return kept[::-1]


def _where(model) -> str:
    import os
    return os.fspath(model) if isinstance(model, (str, os.PathLike)) else "the model given"
