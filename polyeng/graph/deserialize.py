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
from . import file_checks as checks
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



def load(path, max_bytes: int | None = None):
    """The graph saved at ``path`` by ``Graph.save``. ValueError for a file that is not a graph file,
    one written by a newer polyeng, one naming ops this installation does not have, or one that is
    broken or claims more memory than its constants' shapes justify or than ``max_bytes`` (8 GiB
    by default) allows; each names the key, node, value or member at fault (``file_checks``)."""
    budget = checks.MAX_BYTES if max_bytes is None else int(max_bytes)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, IsADirectoryError) as exc:
        raise ValueError(f"{path}: not a polyeng graph file ({exc})") from None
    with archive:
        document = _document(archive, path)
        defined = checks.check_document(document, path)
        declared = {entry["name"]: checks.constant_bytes(entry, path) for entry in document["constants"]}
        if sum(declared.values()) > budget:
            raise ValueError(f"{path}: the constants take {sum(declared.values())} bytes, over the load budget of "
                             f"{budget} (max_bytes=)")
        constants, used = {}, {}
        for entry in document["constants"]:
            checks.check_member(archive, entry, used, path, declared[entry["name"]])
            constants[entry["name"]] = _constant(archive, entry, path)
    try:
        types = {name: (dt.as_dtype(t[0]), tuple(t[1])) for name, t in document["types"].items()}
        nodes = [_node(n) for n in document["nodes"]]
        args_template, kwargs_template = _decode(document["input_structure"])
        inputs = [Value(v["name"], dt.as_dtype(v["dtype"]), tuple(v["shape"])) for v in document["inputs"]]
        outputs = _decode(document["output_structure"])
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise ValueError(f"{path}: graph.json is malformed ({type(exc).__name__}: {exc})") from None
    checks.check_nodes(nodes, defined, _known_op, path)
    checks.check_outputs(outputs, defined, path)
    return Graph(inputs=inputs, input_structure=(tuple(args_template), kwargs_template),
                 input_names=document["input_names"], nodes=nodes, constants=constants, output_structure=outputs,
                 types=types, fn_name=str(document.get("name", "graph")),
                 leading_free=bool(document.get("leading_free", True)))


def _document(archive, path) -> dict:
    try:
        info = archive.getinfo("graph.json")
    except KeyError:
        raise ValueError(f"{path}: not a polyeng graph file (no graph.json in the archive)") from None
    if info.file_size > checks.MAX_JSON_BYTES:
        raise ValueError(f"{path}: graph.json holds {info.file_size} bytes; a graph file's is at most "
                         f"{checks.MAX_JSON_BYTES}")
    try:
        document = json.loads(archive.read("graph.json"))
    except RecursionError:
        raise ValueError(f"{path}: graph.json nests deeper than {checks.MAX_NESTING} levels") from None
    except ValueError as exc:   # not JSON, or not UTF-8
        raise ValueError(f"{path}: not a polyeng graph file (graph.json is not JSON: {exc})") from None
    if checks.nesting(document) > checks.MAX_NESTING:
        raise ValueError(f"{path}: graph.json nests deeper than {checks.MAX_NESTING} levels")
    found = document.get("format") if isinstance(document, dict) else type(document).__name__
    if found != FORMAT:
        raise ValueError(f"{path}: not a polyeng graph file (format is {found!r})")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{path}: graph file format version {version!r} is not a version number (an integer >= 1)")
    if version > VERSION:
        raise ValueError(f"{path}: graph file format version {version} is newer than this polyeng reads "
                         f"(up to {VERSION}); upgrade polyeng to load it")
    return document


def _constant(archive, entry, path) -> np.ndarray:
    where = f"{path}: constant {entry['name']!r}"
    try:
        with archive.open(entry["file"]) as f:
            array = np.load(io.BytesIO(f.read()), allow_pickle=False)
    except (ValueError, OSError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{where}: member {entry['file']!r} is not a .npy array ({exc})") from None
    dtype = dt.as_dtype(entry["dtype"])
    if dtype == dt.bfloat16 and array.dtype == np.uint16:
        array = array.view(dt.bfloat16)
    if array.dtype != dtype or list(array.shape) != entry["shape"]:
        raise ValueError(f"{where}: member holds {array.dtype}{list(array.shape)}; graph.json says "
                         f"{entry['dtype']}{entry['shape']}")
    array.flags.writeable = False
    return array


def _node(n) -> Node:
    amp = n.get("amp")
    return Node(name=n["name"], op=n["op"], args=_decode(n["args"]), outputs=list(n["outputs"]), out=_decode(n["out"]),
                types=[(dt.as_dtype(t[0]), tuple(t[1])) for t in n["types"]], meta=_decode(n["meta"]),
                amp=AmpInfo(**amp) if amp else None)


def _known_op(op, where: str) -> None:
    if not isinstance(op, str) or not _known(op, lookup):
        raise ValueError(f"{where}: the graph uses an op this installation does not have: {op!r}")


def _known(op, lookup) -> bool:
    try:
        lookup(op)
    except ValueError:
        return False
    return True
