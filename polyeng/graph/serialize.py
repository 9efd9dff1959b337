"""The graph file: a zip holding ``graph.json`` (structure, attributes, dtypes and shapes) and one
``.npy`` file per constant. No pickle anywhere: loading a file runs no code from it.

``graph.json`` has ``"format": "polyeng.graph"`` and an integer ``"version"``; a reader refuses a
version newer than its own. Attribute values are JSON values, with tagged objects for what JSON
lacks: ``{"ref": name}`` (a graph value), ``{"tuple": [...]}``, ``{"slice": [start, stop, step]}``,
``{"ellipsis": true}``, ``{"dtype": name}`` and ``{"dict": {...}}``. bfloat16 constants are stored as
their uint16 bits (``.npy`` has no bfloat16) with the dtype named in ``graph.json``.
"""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from ..engine import dtypes as dt
from .ir import AmpInfo, Node, Ref, Value

FORMAT = "polyeng.graph"
VERSION = 1


def _encode(value, where: str):
    if type(value) is Ref:
        return {"ref": value.name}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _encode(v, where) for k, v in value.items()}}
    if isinstance(value, slice):
        return {"slice": [_encode(v, where) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return {"dtype": np.dtype(value).name}
    raise TypeError(f"cannot save {where}: a {type(value).__name__} ({value!r}) has no graph file form")


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    (tag, body), = value.items()
    if tag == "ref":
        return Ref(body)
    if tag == "tuple":
        return tuple(_decode(v) for v in body)
    if tag == "dict":
        return {k: _decode(v) for k, v in body.items()}
    if tag == "slice":
        return slice(*(_decode(v) for v in body))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return dt.as_dtype(body)
    raise ValueError(f"unknown tagged value {tag!r} in the graph file")


def _type(dtype, shape) -> list:
    return [np.dtype(dtype).name, list(shape)]


def save(graph, path) -> None:
    constants = []
    arrays = {}
    for i, (name, array) in enumerate(graph.constants.items()):
        file = f"constants/{i}.npy"
        stored = array.view(np.uint16) if array.dtype == dt.bfloat16 else array
        buffer = io.BytesIO()
        np.save(buffer, stored, allow_pickle=False)   # any layout; 0-d stays 0-d
        arrays[file] = buffer.getvalue()
        constants.append({"name": name, "file": file, "dtype": array.dtype.name, "shape": list(array.shape)})
    nodes = []
    for node in graph.nodes:
        nodes.append({
            "name": node.name, "op": node.op, "args": _encode(node.args, f"node {node.name} ({node.op})"),
            "outputs": node.outputs, "out": _encode(node.out, node.name),
            "types": [_type(*t) for t in node.types], "meta": _encode(node.meta, node.name),
            "amp": None if node.amp is None else {"category": node.amp.category, "why": node.amp.why,
                                                   "accumulation": node.amp.accumulation, "mixed": node.amp.mixed}})
    args_template, kwargs_template = graph._input_structure
    document = {
        "format": FORMAT, "version": VERSION, "name": graph.name, "leading_free": graph.leading_free,
        "inputs": [{"name": v.name, "dtype": v.dtype.name, "shape": list(v.shape)} for v in graph.inputs],
        "input_names": graph._input_names,
        "input_structure": _encode([args_template, kwargs_template], "inputs"),
        "output_structure": _encode(graph._output_structure, "outputs"),
        "types": {name: _type(*t) for name, t in graph._types.items()},
        "constants": constants, "nodes": nodes,
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("graph.json", json.dumps(document, indent=1))
        for file, data in arrays.items():
            archive.writestr(file, data)


def load(path):
    """The graph saved at ``path`` by ``Graph.save``. ValueError for a file that is not a graph file,
    one written by a newer polyeng, or one naming ops this installation does not have."""
    from ..ops.catalogue import lookup
    from .graph import Graph
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, IsADirectoryError) as exc:
        raise ValueError(f"{path}: not a polyeng graph file ({exc})") from None
    with archive:
        try:
            document = json.loads(archive.read("graph.json"))
        except KeyError:
            raise ValueError(f"{path}: not a polyeng graph file (no graph.json in the archive)") from None
        except ValueError as exc:   # not JSON, or not UTF-8
            raise ValueError(f"{path}: not a polyeng graph file (graph.json is not JSON: {exc})") from None
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        if found != FORMAT:
            raise ValueError(f"{path}: not a polyeng graph file (format is {found!r})")
        version = document.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise ValueError(f"{path}: graph file format version {version!r} is newer than this polyeng reads "
                             f"(up to {VERSION}); upgrade polyeng to load it")
        unknown = sorted(op for op in {n["op"] for n in document["nodes"]} if not _known(op, lookup))
        if unknown:
            raise ValueError(f"{path}: the graph uses ops this installation does not have: {', '.join(unknown)}")
        constants = {}
        for entry in document["constants"]:
            with archive.open(entry["file"]) as f:
                array = np.load(io.BytesIO(f.read()), allow_pickle=False)
            dtype = dt.as_dtype(entry["dtype"])
            if dtype == dt.bfloat16:
                array = array.view(dt.bfloat16)
            if array.dtype != dtype or list(array.shape) != entry["shape"]:
                raise ValueError(f"{path}: constant {entry['name']} is {array.dtype}{list(array.shape)}; "
                                 f"graph.json says {entry['dtype']}{entry['shape']}")
            array.flags.writeable = False
            constants[entry["name"]] = array
    types = {name: (dt.as_dtype(t[0]), tuple(t[1])) for name, t in document["types"].items()}
    nodes = []
    for n in document["nodes"]:
        amp = n.get("amp")
        nodes.append(Node(name=n["name"], op=n["op"], args=_decode(n["args"]), outputs=list(n["outputs"]),
                          out=_decode(n["out"]), types=[(dt.as_dtype(t[0]), tuple(t[1])) for t in n["types"]],
                          meta=_decode(n["meta"]), amp=AmpInfo(**amp) if amp else None))
    args_template, kwargs_template = _decode(document["input_structure"])
    return Graph(inputs=[Value(v["name"], dt.as_dtype(v["dtype"]), tuple(v["shape"])) for v in document["inputs"]],
                 input_structure=(tuple(args_template), kwargs_template), input_names=document["input_names"],
                 nodes=nodes, constants=constants, output_structure=_decode(document["output_structure"]),
                 types=types, fn_name=document.get("name", "graph"),
                 leading_free=document.get("leading_free", True))


def _known(op, lookup) -> bool:
    try:
        lookup(op)
    except ValueError:
        return False
    return True
