"""The graph file: a zip holding ``graph.json`` (structure, attributes, dtypes and shapes) and one
``.npy`` file per constant. No pickle anywhere: loading a file runs no code from it.

``graph.json`` has ``"format": "polyeng.graph"`` and an integer ``"version"``; a reader refuses a
version newer than its own. Attribute values are JSON values, with tagged objects for what JSON
lacks: ``{"ref": name}`` (a graph value), ``{"tuple": [...]}``, ``{"slice": [start, stop, step]}``,
``{"ellipsis": true}``, ``{"dtype": name}``, ``{"scalar": [dtype name, value]}`` (a numpy
scalar, which keeps its dtype) and ``{"dict": {...}}``. bfloat16 constants are stored as
their uint16 bits (``.npy`` has no bfloat16) with the dtype named in ``graph.json``.

This module writes the file (``Graph.save``); ``deserialize`` reads it back (``polyeng.graph.load``).
"""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from ..engine import dtypes as dt
from .ir import Ref

FORMAT = "polyeng.graph"
VERSION = 2   # 2: numpy scalars keep their dtype ("scalar"); version 1 files read as ever


def _encode(value, where: str):
    if type(value) is Ref:
        return {"ref": value.name}
    if isinstance(value, np.generic) and (value.dtype.kind in "biuf" or value.dtype == dt.bfloat16):
        # tagged with its dtype: a host step's np.float32 fill value read back as a Python float
        # made float64 arrays (np.float64, a float subclass, is tagged too: numpy
        # promotes by it, not by a Python float)
        return {"scalar": [value.dtype.name, value.item() if value.dtype.kind in "biu" else float(value)]}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
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
