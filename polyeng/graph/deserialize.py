"""Reading a graph file (the format ``serialize`` describes and writes) back into a ``Graph``."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from ..engine import dtypes as dt
from ..ops.catalogue import lookup
from .graph import Graph
from .ir import AmpInfo, Node, Ref, Value
from .serialize import FORMAT, VERSION


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



def load(path):
    """The graph saved at ``path`` by ``Graph.save``. ValueError for a file that is not a graph file,
    one written by a newer polyeng, or one naming ops this installation does not have."""
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
