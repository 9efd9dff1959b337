"""ONNX exports of the test suite's models, made once and kept between runs.

A file is named after the model, the exporter and a digest of what decides its contents (the
module that builds the model, and the versions of torch, timm and onnx), so a changed builder or
a new torch makes a new file. The folder is ``POLYENG_MODEL_CACHE`` when set, else
``.cache/test-models`` at the top of the checkout (ignored by git). Exports are written to a
temporary name and renamed, so test processes running side by side never read half a file.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import pathlib
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPORTERS = ("torchscript", "dynamo")


def cache_dir() -> pathlib.Path:
    folder = pathlib.Path(os.environ.get("POLYENG_MODEL_CACHE") or ROOT / ".cache" / "test-models")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _digest(zoo) -> str:
    parts = [inspect.getsource(zoo)]
    for name in ("torch", "timm", "onnx", "transformers"):
        try:
            parts.append(f"{name} {importlib.import_module(name).__version__}")
        except ImportError:
            parts.append(f"{name} missing")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def exported(zoo, name: str, exporter: str) -> pathlib.Path:
    """The path of ``zoo.export(name, path, exporter)``'s file, exporting it when it is not cached."""
    path = cache_dir() / f"{name}-{exporter}-{_digest(zoo)}.onnx"
    if not path.exists():
        handle, temporary = tempfile.mkstemp(suffix=".onnx", dir=path.parent)
        os.close(handle)
        try:
            zoo.export(name, temporary, exporter)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return path
