"""Where the test suite keeps its model exports between runs: ``POLYENG_MODEL_CACHE`` when set,
else ``.cache/test-models`` at the top of the checkout (ignored by git). The exporting and the
naming of files (by a digest of the builder and the versions) are ``vision_zoo.cached_export``'s."""
from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPORTERS = ("torchscript", "dynamo")


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("POLYENG_MODEL_CACHE") or ROOT / ".cache" / "test-models")


def exported(zoo, name: str, exporter: str) -> pathlib.Path:
    return zoo.cached_export(name, exporter, cache_dir())
