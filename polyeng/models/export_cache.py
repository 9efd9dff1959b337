"""Where the model zoos (``vision_zoo``, ``text_zoo``) keep their ONNX exports, so each model is
exported once per builder source and torch/onnx versions, and processes side by side never read
half a file."""
from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import sys
import tempfile


TEMPORARY_SUFFIX = ".tmp"   # ``write_file``'s name for a file being written (a killed writer's stays)


def default_folder() -> pathlib.Path:
    """``polyeng`` under the user's cache folder (``XDG_CACHE_HOME`` or ``~/.cache``)."""
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "polyeng"


def blake2b(data: bytes = b"", digest_size: int = 16):
    """A BLAKE2b digest of ``data`` (update it with more): CPython's own module, as ``hashlib``
    loads OpenSSL's library (3 MB resident) for its other digests."""
    try:
        from _blake2 import blake2b as made
    except ImportError:   # an interpreter without it
        from hashlib import blake2b as made
    return made(data, digest_size=digest_size)


def write_file(path: pathlib.Path, data) -> bool:
    """Write ``data`` (bytes, or a function writing to the binary file it is given) to ``path``
    under a temporary name in its folder, then rename it into place, so processes side by side
    never read half a file; False (nothing left behind) where the folder cannot be written to or
    the function raised OSError."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(suffix=TEMPORARY_SUFFIX, dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            if isinstance(data, bytes):
                out.write(data)
            else:
                data(out)
        os.replace(temporary, path)
        temporary = None
        return True
    except OSError:
        return False
    finally:
        if temporary is not None:   # the function raised, whatever it raised
            try:
                os.unlink(temporary)
            except OSError:
                pass


def cached_export(zoo: str, name: str, exporter: str, export, folder=None) -> pathlib.Path:
    """The path of ``export(name, path, exporter)``'s file in ``folder`` (default:
    ``default_folder()``), exporting it when it is not there. The file name carries a digest of
    the zoo module's source and of the torch, onnx and (text models) transformers versions, so a
    changed builder or a new torch makes a new file; it is written under a temporary name and
    renamed into place."""
    import hashlib   # here, not at the top: the compiled-code cache reads default_folder, and hashlib
    # loads OpenSSL's library (3 MB resident) into every process that runs a model
    folder = pathlib.Path(default_folder() if folder is None else folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [inspect.getsource(sys.modules[zoo])]
    for module in ("torch", "onnx", "transformers"):
        try:
            parts.append(f"{module} {importlib.import_module(module).__version__}")
        except ImportError:
            parts.append(f"{module} missing")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
    path = folder / f"{name}-{exporter}-{digest}.onnx"
    if not path.exists():
        handle, temporary = tempfile.mkstemp(suffix=".onnx", dir=folder)
        os.close(handle)
        try:
            export(name, temporary, exporter)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return path
