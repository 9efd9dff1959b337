"""A model's external data, read only from where polyeng was told to look.

Tensors of a large model may keep their bytes in files beside the model (``data_location`` is
EXTERNAL, with a ``location``, ``offset`` and ``length``). polyeng reads them itself, and only:

- from a folder it was given: the model file's own folder when the model is loaded from a path,
  or ``base_dir=`` given explicitly; a model given as bytes or as a ``ModelProto`` that names
  external data without ``base_dir`` is a ValueError (left to the ONNX package, the location
  would be read relative to the process's current folder: a model naming ``.env`` read that);
- from regular files inside that folder: a location that is absolute (a drive or a leading
  separator included), climbs out with ``..``, passes through a symbolic link, or names a FIFO or
  a device is a ValueError; the file is opened without following a link and checked as opened.
  A hard link inside the folder is a file of the folder: whoever can write the folder chose it;
- exactly the bytes the tensor's declared shape and type justify: a ``length`` that disagrees,
  or a file too short for ``offset`` plus those bytes, is a ValueError before anything is read.

Every ValueError names the tensor.
"""
from __future__ import annotations

import math
import os
import stat

import numpy as np


def load(proto, base_dir, where: str) -> int:
    """Read every external tensor of ``proto`` (modified in place) from inside ``base_dir``; how many
    there were."""
    tensors = [t for t in _tensors(proto.graph) if t.data_location == t.EXTERNAL]
    if not tensors:
        return 0
    if base_dir is None:
        raise ValueError(f"{where}: tensor {tensors[0].name!r} keeps its data in an external file, and a model "
                         f"given as bytes or a ModelProto is read from no folder; pass base_dir= (the folder "
                         f"its data files are in) or load it from its path")
    root = os.path.realpath(os.fspath(base_dir))
    if not os.path.isdir(root):
        raise ValueError(f"base_dir={os.fspath(base_dir)!r} is not a folder")
    for tensor in tensors:
        _read(tensor, root, where)
    return len(tensors)


def _tensors(graph):
    """The graph's tensors that may hold data: initializers and tensor attributes, subgraphs too."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)


def _read(tensor, root: str, where: str) -> None:
    name = f"{where}: tensor {tensor.name!r}"
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    parts = location.replace("\\", "/").split("/")
    if (not location or "\0" in location or os.path.isabs(location) or location[0] in "/\\"
            or os.path.splitdrive(location)[0] or ":" in parts[0] or ".." in parts):
        raise ValueError(f"{name}: external data location {location!r} is not a file name inside the model's "
                         f"folder")
    path = os.path.join(root, location)
    if os.path.realpath(path) != os.path.normpath(path) or os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise ValueError(f"{name}: external data location {location!r} passes through a symbolic link")
    nbytes = _declared_bytes(tensor, name)
    offset, length = _int(info.get("offset", "0"), name, "offset"), info.get("length")
    if length is not None and _int(length, name, "length") != nbytes:
        raise ValueError(f"{name}: external data length {length} does not match its shape "
                         f"{list(tensor.dims)} ({nbytes} bytes)")
    # opened without following a last link and without blocking on a FIFO, then checked as opened:
    # what is read is what was checked, whatever changes in the folder meanwhile
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ValueError(f"{name}: external data file {location!r} cannot be read ({exc.strerror})") from None
    found = os.fstat(fd)   # before fdopen, which refuses a directory with its own error
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise ValueError(f"{name}: external data location {location!r} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if offset + nbytes > found.st_size:
            raise ValueError(f"{name}: external data file {location!r} holds {found.st_size} bytes; the tensor "
                             f"needs {nbytes} from offset {offset}")
        f.seek(offset)
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f"{name}: external data file {location!r} ended before {nbytes} bytes were read")
    tensor.raw_data = data
    del tensor.external_data[:]
    tensor.data_location = tensor.DEFAULT


_FOUR_BIT = {21, 22, 23}   # UINT4, INT4, FLOAT4E2M1: two elements a byte


def _declared_bytes(tensor, name: str) -> int:
    if any(d < 0 for d in tensor.dims):
        raise ValueError(f"{name}: negative dim in its shape {list(tensor.dims)}")
    if tensor.data_type == tensor.STRING:
        raise ValueError(f"{name}: external string data is not read by polyeng")
    count = math.prod(tensor.dims)
    if tensor.data_type in _FOUR_BIT:
        return (count + 1) // 2
    from onnx import helper
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except Exception:
        raise ValueError(f"{name}: external data of element type {tensor.data_type} is not read by polyeng") from None
    return count * itemsize


def _int(text: str, name: str, key: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0 or not str(text).isdigit():
        raise ValueError(f"{name}: external data {key} {text!r} is not a non-negative integer")
    return value
