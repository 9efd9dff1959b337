"""Converted models kept on disk, so a model file loaded once loads again without the onnx package.

Converting a model reads it with ``onnx``, runs its shape inference, folds constants and fuses;
the ``onnx`` package alone holds about 11 MB of a process's memory. ``polyeng.onnx.load`` keeps
the graph it made as a graph file (``Graph.save``'s format) in ``graphs/`` under polyeng's cache
folder (``XDG_CACHE_HOME`` or ``~/.cache``), and a later load of the same bytes reads that file
(``polyeng.graph.load``, with the file checks and ``max_bytes``) without importing onnx.
``POLYENG_ONNX_CACHE_DIR`` names another folder for them.

The file's name is a digest of everything the conversion depends on: the model's bytes, the
load's options (``max_bytes`` and the fusions turned off), the fp math mode and ``compute_eng``
in force (load-time folding runs under them), polyeng's sources (each file's path,
size and modification time, as Python's own bytecode cache keys them), the converters and
fusions registered (plugins may add some), the installed onnx package and numpy's version. Only a model given
as a path or bytes, with no external data, is kept (external files are not part of its bytes).

The folder keeps at most ``MAX_FILES`` files and ``MAX_BYTES`` bytes: a new file removes the
least recently used ones beyond that; a graph whose file would exceed ``MAX_FILE_BYTES`` is not
kept. A file written under a temporary name is renamed into place, so processes side by side
never read half of one (a killed writer's temporary file is removed an hour later); a file
that does not load (damaged, or from a polyeng that reads no longer) is converted again and
replaced. A folder polyeng cannot write to only costs the time.
``load(..., cache=False)`` or ``POLYENG_ONNX_CACHE=0`` turn the cache off.
"""
from __future__ import annotations

import os
import pathlib
import time

from ..models.export_cache import TEMPORARY_SUFFIX, blake2b

ENV = "POLYENG_ONNX_CACHE"
DIR_ENV = "POLYENG_ONNX_CACHE_DIR"
MAX_FILES = 64
MAX_BYTES = 1 << 30
MAX_FILE_BYTES = 256 << 20
SUFFIX = ".pgraph"
STALE_SECONDS = 3600
_CHUNK = 1 << 20
_sources = None   # polyeng's source stamp, made once per process

_SWITCH = {"1": True, "true": True, "yes": True, "on": True, "": True,
           "0": False, "false": False, "no": False, "off": False}


def enabled(cache=None) -> bool:
    """``cache`` when given (True or False), else ``POLYENG_ONNX_CACHE`` (on unless 0, false, no or off)."""
    if cache is not None:
        if not isinstance(cache, bool):
            raise TypeError(f"cache={cache!r}: expected True, False or None (POLYENG_ONNX_CACHE decides)")
        return cache
    raw = os.environ.get(ENV, "")
    on = _SWITCH.get(raw.strip().lower())
    if on is None:
        raise ValueError(f"{ENV}={raw!r} is not a switch; expected 0, false, no or off (cache off), "
                         f"or 1, true, yes, on or empty (cache on)")
    return on


def folder() -> pathlib.Path | None:
    """``POLYENG_ONNX_CACHE_DIR`` when set, else ``graphs`` in polyeng's cache folder; None where
    there is no home to put it in."""
    chosen = os.environ.get(DIR_ENV, "")
    if chosen:
        return pathlib.Path(chosen).expanduser()
    from ..models.export_cache import default_folder
    try:
        return default_folder() / "graphs"
    except (RuntimeError, KeyError):   # no HOME and no passwd entry: nothing is kept
        return None


def path_for(model, options, data=None) -> pathlib.Path | None:
    """The cache file of ``model`` (a checked regular file's path, or bytes) loaded with ``options``
    (a tuple of the load's settings); None for a model the cache does not keep (a ModelProto), or
    where a converter or fusion from outside polyeng is registered. ``data``, for a path, is the
    file's bytes already read: the key of a conversion is made of the bytes it converts."""
    stamp, where = _stamp(), folder()
    if stamp is None or where is None:
        return None
    from ..engine.fpmath import get_fp_math_mode
    from ..engine.settings import get_compute_eng
    digest = blake2b()
    if isinstance(model, (bytes, bytearray, memoryview)):
        digest.update(b"bytes\0")
        digest.update(model if not isinstance(model, memoryview) or model.c_contiguous else bytes(model))
    elif isinstance(model, (str, os.PathLike)) and data is not None:
        digest.update(b"file\0")
        digest.update(data)
    elif isinstance(model, (str, os.PathLike)):
        digest.update(b"file\0")
        chunk = bytearray(_CHUNK)
        view = memoryview(chunk)
        try:
            with open(model, "rb") as file:
                while size := file.readinto(chunk):
                    digest.update(view[:size])
        except OSError:   # unreadable: onnx_model.read reports it as ever
            return None
    else:
        return None
    # load-time folding runs under the fp math mode and engine in force: a graph folded in bf16 is
    # another graph
    digest.update(repr((options, str(get_fp_math_mode()), get_compute_eng(), stamp)).encode())
    return where / f"{digest.hexdigest()}{SUFFIX}"


def file_bytes(model) -> bytes | None:
    """The bytes of the model file ``model`` (None where it cannot be read: the conversion reports
    it as ever)."""
    try:
        with open(model, "rb") as file:
            return file.read()
    except OSError:
        return None


def read(path, max_bytes):
    """The graph kept at ``path``, or None when there is none or it does not load."""
    from ..graph.deserialize import load
    if path is None or not path.is_file():
        return None
    import zipfile
    try:
        graph = load(path, max_bytes=max_bytes)
    # damaged (a bad checksum too), or written by a polyeng that reads it no longer: made again
    except (ValueError, OSError, EOFError, NotImplementedError, zipfile.BadZipFile):
        return None
    try:
        os.utime(path)   # most recently used
    except OSError:
        pass
    return graph


def write(graph, path, max_bytes: int) -> None:
    """Keep ``graph`` at ``path`` (quietly not, when it cannot be saved or the folder is not writable,
    or when its constants together exceed ``max_bytes``, which reading it back would refuse), then
    remove the least recently used files beyond the folder's limits."""
    if path is None or sum(a.nbytes for a in graph.constants.values()) > min(MAX_FILE_BYTES, max_bytes):
        return
    from ..models.export_cache import write_file
    try:
        written = write_file(path, graph.save)
    except (TypeError, ValueError):   # an attribute with no graph file form
        return
    if written:
        prune(path.parent)


def prune(where, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
    """Remove the least recently used graph files of ``where`` until at most ``max_files`` files and
    ``max_bytes`` bytes remain, and the temporary files of writers that were killed (untouched for
    ``STALE_SECONDS``; a live writer's is seconds old)."""
    kept = []
    stale = time.time_ns() - STALE_SECONDS * 10**9
    try:
        for entry in os.scandir(where):
            if entry.name.endswith(TEMPORARY_SUFFIX):   # a writer's: left behind where it was killed
                try:
                    if entry.stat().st_mtime_ns < stale:
                        os.unlink(entry.path)
                except OSError:
                    pass
            elif entry.name.endswith(SUFFIX):
                try:
                    found = entry.stat()
                except OSError:   # removed by another process meanwhile
                    continue
                kept.append((found.st_mtime_ns, found.st_size, entry.path))
    except OSError:
        return
    kept.sort(reverse=True)
    total = 0
    for i, (_, size, file) in enumerate(kept):
        total += size
        if i >= max_files or total > max_bytes:
            try:
                os.unlink(file)
            except OSError:
                pass


def _stamp():
    """What the conversion depends on beside the model and the options: polyeng's sources (path,
    size, modification time), the converters and fusions registered, the installed onnx package
    (its ``__init__.py``'s path, size and time: a new version rewrites it) and numpy's version.
    None where a converter or fusion comes from outside polyeng (a plugin's, a test's): its code
    is not stamped, so its conversions are not kept."""
    global _sources
    import numpy as np
    from ..graph import fusing
    from . import registry
    functions = [(r.domain, r.op_type, getattr(r, "first", None), getattr(r, "last", None), r.function)
                 for r in registry.registered()] + [("graph", name, None, None, f)
                                                    for name, f in fusing.functions().items()]
    if any(not (getattr(f, "__module__", None) or "").startswith("polyeng.") for *_, f in functions):
        return None
    if _sources is None:
        root = pathlib.Path(__file__).resolve().parents[1]
        files = [(str(path.relative_to(root)), _file_stamp(path)) for path in sorted(root.rglob("*.py"))]
        digest = blake2b()
        digest.update(repr(files).encode())
        _sources = digest.hexdigest()
    onnx_version = _file_stamp(_origin("onnx"))
    named = [(*key, f"{f.__module__}.{getattr(f, '__qualname__', f)}") for *key, f in functions]
    return _sources, named, onnx_version, np.__version__


def _origin(module: str):
    """The file a top-level module imports from, found on ``sys.path`` without importing it (None
    where it is not installed)."""
    from importlib.machinery import PathFinder
    spec = PathFinder.find_spec(module)
    return None if spec is None else spec.origin


def _file_stamp(path):
    """(path, size, modification time) of a file, or None where there is none."""
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return str(path), found.st_size, found.st_mtime_ns
