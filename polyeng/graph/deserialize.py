"""Reading a graph file (the format ``serialize`` describes and writes) back into a ``Graph``."""
from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import zipfile
from collections import Counter

import numpy as np

from ..engine import dtypes as dt
from ..ops.catalogue import lookup
from .graph import Graph
from .ir import AmpInfo, Node, Ref, Value
from . import file_checks as checks
from .serialize import FORMAT, VERSION

TAGS = ("ref", "tuple", "dict", "slice", "ellipsis", "dtype", "scalar")
NODE_KEYS = ("name", "op", "args", "outputs", "out", "types", "meta")


def _decode(value, where: str):
    """``value`` with its tagged objects (``serialize``) made Python values again; ValueError naming
    ``where`` (the file and the key: "g.polyeng: node 'n0' (matmul): args") for an object that is
    not a tagged value or a tag's body not of its form."""
    if isinstance(value, list):
        return [_decode(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"{where} holds the object {checks.brief(value)}; expected one key, the tag "
                         f"({', '.join(TAGS)})")
    (tag, body), = value.items()
    if tag == "ref":
        if not isinstance(body, str) or not body:
            raise ValueError(f"{where} holds {checks.brief(value)}, which names no value")
        return Ref(body)
    if tag in ("tuple", "slice") and not isinstance(body, list) or tag == "dict" and not isinstance(body, dict):
        raise ValueError(f"{where} holds {checks.brief(value)}; a {tag}'s body is a "
                         f"{'list' if tag != 'dict' else 'object'}")
    if tag == "tuple":
        return tuple(_decode(v, where) for v in body)
    if tag == "dict":
        return {k: _decode(v, where) for k, v in body.items()}
    if tag == "slice":
        if len(body) != 3 or any(v is not None and (not isinstance(v, int) or isinstance(v, bool)) for v in body):
            raise ValueError(f"{where} holds {checks.brief(value)}; a slice is [start, stop, step], each an "
                             f"integer or null")
        return slice(*body)
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return checks._dtype(body, where)
    if tag == "scalar":
        return _scalar(body, value, where)
    raise ValueError(f"{where} holds the unknown tagged value {tag!r}; expected one of {', '.join(TAGS)}")


def _scalar(body, value, where: str):
    """The numpy scalar ``{"scalar": [dtype name, value]}`` stands for."""
    if not isinstance(body, list) or len(body) != 2 or not isinstance(body[1], (bool, int, float)):
        raise ValueError(f"{where} holds {checks.brief(value)}; a scalar is [dtype name, number]")
    try:   # any numpy bool, integer or float dtype (a host step may hold a uint64), or bfloat16
        dtype = dt.bfloat16 if body[0] == "bfloat16" else np.dtype(body[0])
    except TypeError:
        raise ValueError(f"{where} holds {checks.brief(value)}, whose dtype numpy does not know") from None
    if dtype.kind not in "biuf" and dtype != dt.bfloat16:
        raise ValueError(f"{where} holds {checks.brief(value)}; a scalar's dtype is a bool, integer or float one")
    try:
        return np.asarray(body[1], dtype=dtype)[()]
    except (OverflowError, ValueError, TypeError):
        raise ValueError(f"{where} holds {checks.brief(value)}, whose value {dtype.name} cannot hold") from None


def _opened(path):
    """The file at ``path`` opened for reading, if it is a regular file: a FIFO would block for ever
    and /dev/zero never end, so both are refused before a byte is read (opened without blocking,
    then checked on the open file, which a rename cannot swap)."""
    if os.path.isdir(path):
        raise ValueError(f"{path}: a directory, not a polyeng graph file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def load(path, max_bytes: int | None = None):
    """The graph saved at ``path`` by ``Graph.save``. ValueError for a file that is not a graph file,
    one written by a newer polyeng, one naming ops this installation does not have, or one that is
    broken or claims more memory than its constants' shapes justify or than ``max_bytes`` (8 GiB
    by default) allows; each names the key, node, value or member at fault (``file_checks``).
    ``path`` may also be an open binary file."""
    budget = checks.MAX_BYTES if max_bytes is None else int(max_bytes)
    file = _opened(path) if isinstance(path, (str, bytes, os.PathLike)) else None
    try:
        archive = zipfile.ZipFile(path if file is None else file)
    except (zipfile.BadZipFile, IsADirectoryError) as exc:
        if file is not None:
            file.close()
        raise ValueError(f"{path}: not a polyeng graph file ({exc})") from None
    with archive, file or contextlib.nullcontext():
        counts = Counter(archive.namelist())
        document = _document(archive, path, counts)
        defined = checks.check_document(document, path)
        declared = {entry["name"]: checks.constant_bytes(entry, path) for entry in document["constants"]}
        checks.check_budget(document["constants"], declared, budget, path)
        constants, used = {}, {}
        for entry in document["constants"]:
            checks.check_member(archive, entry, used, path, declared[entry["name"]], counts)
            constants[entry["name"]] = _constant(archive, entry, path)
    try:
        types = checks.value_types(document["types"], path)
        nodes = [_node(n, i, path) for i, n in enumerate(document["nodes"])]
        structure = _decode(document["input_structure"], f"{path}: graph.json's 'input_structure'")
        inputs = [Value(v["name"], dt.as_dtype(v["dtype"]), tuple(v["shape"])) for v in document["inputs"]]
        outputs = _decode(document["output_structure"], f"{path}: graph.json's 'output_structure'")
    except (TypeError, KeyError, IndexError, AttributeError) as exc:   # a check missing: still one ValueError
        raise ValueError(f"{path}: graph.json is malformed ({type(exc).__name__}: {exc})") from None
    checks.check_nodes(nodes, defined, _known_op, path)
    checks.check_outputs(outputs, defined, path)
    args_template, kwargs_template = checks.check_inputs(structure, document["input_names"],
                                                         [v.name for v in inputs], path)
    checks.check_typed([v.name for v in inputs] + list(constants) + [o for n in nodes for o in n.outputs], types,
                       path)
    return Graph(inputs=inputs, input_structure=(args_template, kwargs_template),
                 input_names=document["input_names"], nodes=nodes, constants=constants, output_structure=outputs,
                 types=types, fn_name=document.get("name", "graph"), leading_free=document.get("leading_free", True))


def _document(archive, path, counts: Counter) -> dict:
    try:
        info = archive.getinfo("graph.json")
    except KeyError:
        raise ValueError(f"{path}: not a polyeng graph file (no graph.json in the archive)") from None
    if counts["graph.json"] > 1:
        raise ValueError(f"{path}: the archive has {counts['graph.json']} members named graph.json; a graph file "
                         f"has one")
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
    # read-only down to the memory, which the loaded array owns (np.load may return a view of it):
    # only then do the engines count it constant and keep what they derive from it (reordered
    # weights, folded biases) instead of deriving it on every call
    view = array
    while isinstance(view, np.ndarray):
        view.flags.writeable = False
        view = view.base
    return array


def _node(n, i: int, path) -> Node:
    if not isinstance(n, dict):
        raise ValueError(f"{path}: node {i} is a {type(n).__name__}; expected an object")
    for key in NODE_KEYS:
        if key not in n:
            raise ValueError(f"{path}: node {i} has no {key!r}")
    if not isinstance(n["name"], str) or not n["name"]:
        raise ValueError(f"{path}: node {i} has the name {checks.brief(n['name'])}; expected a non-empty string")
    where = f"{path}: node {n['name']!r} ({n['op']})"
    for key in ("outputs", "types"):
        if not isinstance(n[key], list):
            raise ValueError(f"{where}: {key} is a {type(n[key]).__name__}; expected a list")
    return Node(name=n["name"], op=n["op"], args=_decode(n["args"], f"{where}: args"), outputs=list(n["outputs"]),
                out=_decode(n["out"], f"{where}: out"),
                types=[checks.value_type(t, f"{where}: output {k}'s type") for k, t in enumerate(n["types"])],
                meta=_decode(n["meta"], f"{where}: meta"),
                amp=_amp(checks.amp_fields(n.get("amp"), where)))


def _amp(fields: dict | None) -> AmpInfo | None:
    return None if fields is None else AmpInfo(**fields)


def _known_op(op, where: str) -> None:
    if not isinstance(op, str) or not _known(op, lookup):
        raise ValueError(f"{where}: the graph uses an op this installation does not have: {op!r}")


def _known(op, lookup) -> bool:
    try:
        lookup(op)
    except ValueError:
        return False
    return True
